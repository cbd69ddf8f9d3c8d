"""Fixtures of the wallet's tests: a test wallet (`tests.wallet_server`) and an API server
that calls it with short timeouts."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from service.eventlog.redis_store import RedisEventStore
from service.projections.follower import Follower
from service.projections.wallet import WalletStore
from service.projections.wallet_calls import Wallet
from service.projections.wallet_credits import WalletCredits
from service.projections.wallet_messages import WalletSchedule
from service.rules import wallet as w
from tests.apiclient import SERVED, Api
from tests.wallet_server import TestWallet
from workers.wallet_duty import finish_due

PLAYERS = {"ann": 10_000, "bob": 10_000, "cat": 10_000, "poor": 50}
"""The test wallet's players and their balances (minor units)."""


@pytest.fixture
def wallet() -> Iterator[TestWallet]:
    made = TestWallet(balances=PLAYERS)
    made.slow_s = 2.5  # (past the test API's 2 s timeout)
    yield made
    made.close()


@pytest.fixture
def wallet_api(serve_with: Callable[..., Api], redis_client: Any, clean_archive: str) -> Api:
    """An API server on an empty Redis whose wallet calls time out after 2 s (0.5 s was
    taken by a wallet answering at once on a busy machine: an unknown outcome, 502)."""
    return serve_with(wallet_timeout_s=2.0, wallet_first_retry_s=0.1, wallet_max_wait_s=0.2)


def connect(api: Api, wallet: TestWallet, currency: str = "EUR", value: int = 100) -> str:
    """Set `wallet` as the tenant's; the secret it signs with."""
    made = api.call(
        "PUT", "/v1/wallet", {"url": wallet.url, "currency": currency, "chip_value_minor": value}
    )
    assert made.status_code == 200, made.text
    wallet.secret = made.json()["secret"]
    return wallet.secret


def transactions(api: Api, **query: Any) -> list[dict[str, Any]]:
    answer = api.get("/v1/wallet/transactions", params=query)
    assert answer.status_code == 200, answer.text
    return list(answer.json()["transactions"])


FAST = WalletSchedule(
    timeout_s=0.5,
    first_retry_s=0.05,
    max_wait_s=0.2,
    credit_for_s=60.0,
    debit_grace_s=0.5,
)
"""Calls paced for tests: a pending debit is the duty's after 0.5 s."""


def wallet_of(api: Api, schedule: WalletSchedule = FAST) -> Wallet:
    """The wallets' records and calls on the test server's Redis, paced by `schedule`."""
    client = SERVED[api.base].extensions["guts"].redis
    store = RedisEventStore(client)
    return Wallet(WalletStore(client, store.idempotency_key, private_ok=True), schedule)


def follow(api: Api, table: str) -> None:
    """Derive the table's credits now, as the dispatchers' follower does (the test servers run
    none)."""
    client = SERVED[api.base].extensions["guts"].redis
    store = WalletStore(client, RedisEventStore(client).idempotency_key)
    Follower(RedisEventStore(client), [WalletCredits(store)]).catch_up(table)


def settle(api: Api, wallet: Wallet, done: Callable[[], bool], within_s: float = 20.0) -> None:
    """What the dispatchers' follower and wallet duty do, in turns, until `done()`."""
    deadline = time.monotonic() + within_s
    with ThreadPoolExecutor(4) as pool:
        while not done():
            assert time.monotonic() < deadline, "the transactions did not settle in time"
            for table in {t["table_id"] for t in transactions(api)}:
                follow(api, table)
            finish_due(wallet, pool)
            time.sleep(0.02)


def anns_debit(api: Api, table: str, scope: str) -> dict[str, Any]:
    """A new debit of 30 of ann's chips at `table` (EUR, a chip 100 cents) as a seat's
    request makes it, its transaction id derived from `scope`; not recorded."""
    now = SERVED[api.base].extensions["guts"].usecases.tables.now()
    return w.new_debit(
        w.BUY_IN,
        now,
        transaction_id=w.debit_id("default", scope),
        player_id="ann",
        table_id=table,
        chips=30,
        currency="EUR",
        chip_value_minor=100,
    )
