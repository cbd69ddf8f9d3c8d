"""The audit reconciles a table's casino-wallet transactions with its log: every
wallet-funded seat, top-up and cash-out has its transaction, every transaction its movement,
and the confirmed debits minus the credits are the wallet-funded chips on the table. A
movement without its transaction, or a transaction without its movement, is the audit's
`wallet` discrepancy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import pytest

from tests.apiclient import Api
from tests.wallet.conftest import connect, settle, transactions, wallet_of
from tests.wallet.test_credits import _funded
from tests.wallet_server import TestWallet
from tests.workers.conftest import run_jobs  # noqa: F401 - a fixture
from tests.workers.test_audit import _audit

TX = "guts:{%wallet:default}:tx"


def _played(api: Api, wallet: TestWallet) -> str:
    """A table where two wallet-funded players and a casino-funded one sat, one topped up
    from the wallet, one left, and the table ended; every credit settled."""
    connect(api, wallet)
    table = api.table("three-card")
    _funded(api, table, "ann", 30)
    _funded(api, table, "bob", 20)
    api.seat(table, "cat", 40)
    topped = api.post(f"/v1/tables/{table}/players/0/chips", {"amount": 5, "funding": "wallet"})
    assert topped.status_code == 200, topped.text
    assert api.delete(f"/v1/tables/{table}/players/1").status_code == 200
    assert api.post(f"/v1/tables/{table}/end").status_code == 200

    def credited() -> bool:
        found = [t for t in transactions(api) if t["kind"] == "credit"]
        return len(found) == 2 and all(t["status"] == "confirmed" for t in found)

    settle(api, wallet_of(api), credited)
    assert api.get("/v1/ledger", params={"table_id": table}).status_code == 200  # caught up
    return table


def test_a_tables_wallet_transactions_reconcile_with_its_log(
    wallet_api: Api,
    wallet: TestWallet,
    run_jobs: Callable[[], None],  # noqa: F811
):
    table = _played(wallet_api, wallet)
    report = _audit(wallet_api, run_jobs, table)
    assert report["ok"], report
    version = wallet_api.get(f"/v1/tables/{table}").json()["version"]
    assert report["wallet"] == {
        "position": version,
        "debited": 5500,
        "credited": 5500,
        "on_table": 0,
    }


def _records(client: Any) -> dict[bytes, dict[str, Any]]:
    return {k: orjson.loads(v) for k, v in client.hgetall(TX).items()}


def _drop_a_credit(client: Any) -> str:
    key = next(k for k, r in _records(client).items() if r["kind"] == "credit")
    client.hdel(TX, key)
    return "has no credit"


def _change_a_debit(client: Any) -> str:
    key, record = next((k, r) for k, r in _records(client).items() if r["kind"] == "debit")
    client.hset(TX, key, orjson.dumps({**record, "amount": record["amount"] + 1}))
    return "is not these chips"


def _roll_a_seated_debit_back(client: Any) -> str:
    key, record = next((k, r) for k, r in _records(client).items() if r["kind"] == "debit")
    client.hset(TX, key, orjson.dumps({**record, "status": "rolled_back"}))
    return "is rolled_back, yet chips were added"


def _add_a_debit_without_seat(client: Any) -> str:
    key, record = next((k, r) for k, r in _records(client).items() if r["kind"] == "debit")
    client.hset(TX, b"d-fake", orjson.dumps({**record, "transaction_id": "d-fake"}))
    client.zadd(f"guts:{{%wallet:default}}:of:{record['table_id']}", {"d-fake": 999})
    return "debit d-fake was confirmed but no seat or top-up of the log carries it"


@pytest.mark.parametrize(
    "tamper",
    [_drop_a_credit, _change_a_debit, _roll_a_seated_debit_back, _add_a_debit_without_seat],
)
def test_a_movement_without_its_transaction_is_found(
    wallet_api: Api,
    wallet: TestWallet,
    redis_client: Any,
    run_jobs: Callable[[], None],  # noqa: F811
    tamper: Callable[[Any], str],
):
    table = _played(wallet_api, wallet)
    expected = tamper(redis_client)
    report = _audit(wallet_api, run_jobs, table)
    assert not report["ok"]
    found = report["first_discrepancy"]
    assert found["kind"] == "wallet" and expected in found["problem"], found
