"""Credits to the wallet: every cash-out of a wallet-funded seat (leaving, the table ending)
is one credit, derived from the log exactly once, sent until the wallet takes it (through
errors, garbage, bad signatures, a wallet that is down), applied once however often it is
sent, and `failed` once its retries run out; casino-funded seats are never credited. The
wallet duty finishes a debit its sender left pending: confirmed when its seat was appended,
rolled back otherwise; a seat and a rollback racing on one debit: exactly one wins."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import pytest

from service.projections.wallet import seat_key
from service.rules import wallet as w
from service.rules.decide import SeatPlayer
from service.tables import IdempotencyReused
from tests.apiclient import SERVED, Api
from tests.wallet.conftest import (
    FAST,
    PLAYERS,
    anns_debit,
    connect,
    follow,
    settle,
    transactions,
    wallet_of,
)
from tests.wallet_server import TestWallet
from workers.wallet_duty import finish_due


def _funded(api: Api, table: str, player: str, chips: int) -> dict:
    body = {"player_id": player, "buy_in": chips, "funding": "wallet"}
    seated = api.post(f"/v1/tables/{table}/players", body)
    assert seated.status_code == 201, seated.text
    return dict(seated.json())


def _credits(api: Api) -> list[dict]:
    return [t for t in transactions(api) if t["kind"] == "credit"]


def _all_confirmed(api: Api, count: int):
    return lambda: (
        len(_credits(api)) == count and all(t["status"] == "confirmed" for t in _credits(api))
    )


@pytest.mark.parametrize("fault", ["500", "down", "garbage", "bad_signature", "applied_500"])
def test_a_cash_out_is_credited_once_through_failures(
    wallet_api: Api, wallet: TestWallet, fault: str
):
    connect(wallet_api, wallet)
    table = wallet_api.table("three-card")
    seat = _funded(wallet_api, table, "ann", 30)["seat"]
    wallet.fail("credit", fault, fault)
    left = wallet_api.delete(f"/v1/tables/{table}/players/{seat}")
    assert left.status_code == 200 and left.json()["cash_out"] == 30
    settle(wallet_api, wallet_of(wallet_api), _all_confirmed(wallet_api, 1))
    (credit,) = _credits(wallet_api)
    assert credit["amount"] == 3000 and credit["reason"] == "cash_out"
    assert credit["attempts"] >= 3 and credit["player_id"] == "ann"
    assert wallet.balances["ann"] == PLAYERS["ann"]  # paid back exactly once
    assert wallet.effects["credit"] == 1
    sent = {c["transaction_id"] for p, c in wallet.calls if p == "credit"}
    assert sent == {credit["transaction_id"]}
    requests = [c["request_id"] for p, c in wallet.calls if p == "credit"]
    assert len(set(requests)) == len(requests)  # a new request id for each attempt
    entries = wallet_api.get("/v1/ledger", params={"table_id": table}).json()["entries"]
    cash_out = [e for e in entries if e["kind"] == "cash_out"]
    assert [e["transaction_id"] for e in cash_out] == [credit["transaction_id"]]


def test_ending_the_table_credits_every_wallet_funded_seat_and_no_other(
    wallet_api: Api, wallet: TestWallet
):
    connect(wallet_api, wallet, currency="GBP", value=5)
    table = wallet_api.table("three-card", ante=2)
    _funded(wallet_api, table, "ann", 40)
    _funded(wallet_api, table, "bob", 40)
    wallet_api.seat(table, "cat", 40)  # funded by the casino
    assert wallet_api.post(f"/v1/tables/{table}/end").status_code == 200
    settle(wallet_api, wallet_of(wallet_api), _all_confirmed(wallet_api, 2))
    credits = {c["player_id"]: c for c in _credits(wallet_api)}
    assert set(credits) == {"ann", "bob"}
    assert all(c["currency"] == "GBP" for c in credits.values())
    assert sum(c["amount"] for c in credits.values()) == 80 * 5
    assert wallet.balances["cat"] == PLAYERS["cat"] and wallet.balances["ann"] == PLAYERS["ann"]


def test_deriving_the_credits_again_makes_no_second_credit(wallet_api: Api, wallet: TestWallet):
    connect(wallet_api, wallet)
    table = wallet_api.table("three-card")
    _funded(wallet_api, table, "ann", 30)
    assert wallet_api.delete(f"/v1/tables/{table}/players/0").status_code == 200
    racers = [threading.Thread(target=follow, args=(wallet_api, table)) for _ in range(4)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join()
    follow(wallet_api, table)
    assert len(_credits(wallet_api)) == 1
    client = SERVED[wallet_api.base].extensions["guts"].redis
    client.hdel("guts:{%wallet:default}:positions", table)  # as if never derived
    follow(wallet_api, table)
    assert len(_credits(wallet_api)) == 1  # (the same id: kept once)


def test_a_credit_whose_retries_run_out_is_failed(wallet_api: Api, wallet: TestWallet):
    connect(wallet_api, wallet)
    table = wallet_api.table("three-card")
    _funded(wallet_api, table, "ann", 30)
    wallet.always["credit"] = "500"
    assert wallet_api.delete(f"/v1/tables/{table}/players/0").status_code == 200
    short = replace(FAST, credit_for_s=0.3)

    def failed() -> bool:
        return [c["status"] for c in _credits(wallet_api)] == ["failed"]

    settle(wallet_api, wallet_of(wallet_api, short), failed)
    assert wallet.effects["credit"] == 0 and wallet.balances["ann"] == PLAYERS["ann"] - 3000
    (credit,) = transactions(wallet_api, status="failed")
    assert credit["settled_at"] is not None and credit["attempts"] >= 2


def _pending_debit(api: Api, wallet: TestWallet, table: str) -> dict:
    """A debit its sender recorded and the wallet took, then the sender died (the state a
    kill -9 after the wallet's confirmation leaves)."""
    calls = wallet_of(api)
    record = calls.open_debit("default", anns_debit(api, table, f"crash-{table}"))
    assert calls.debit("default", record) == w.PENDING
    assert wallet.balances["ann"] == PLAYERS["ann"] - 3000
    return record


def _append_seat(api: Api, record: dict) -> None:
    tables = SERVED[api.base].extensions["guts"].usecases.tables
    command = SeatPlayer("ann", 30, None, None, record["transaction_id"])
    key = seat_key(record["transaction_id"])
    tables.execute(record["table_id"], command, idempotency_key=key, request_hash="wallet-seat:")


def test_a_debit_left_pending_without_its_seat_is_rolled_back(wallet_api: Api, wallet: TestWallet):
    connect(wallet_api, wallet)
    table = wallet_api.table("three-card")
    record = _pending_debit(wallet_api, wallet, table)

    def finished() -> bool:
        kinds = {t["kind"]: t["status"] for t in transactions(wallet_api)}
        return kinds == {"debit": "rolled_back", "rollback": "confirmed"}

    settle(wallet_api, wallet_of(wallet_api), finished)
    assert wallet.balances["ann"] == PLAYERS["ann"]
    with pytest.raises(IdempotencyReused):  # the sender, back from the dead, cannot seat
        _append_seat(wallet_api, record)
    assert wallet_api.get(f"/v1/tables/{table}").json()["seats"] == []


def test_a_debit_left_pending_after_its_seat_is_confirmed(wallet_api: Api, wallet: TestWallet):
    connect(wallet_api, wallet)
    table = wallet_api.table("three-card")
    _append_seat(wallet_api, _pending_debit(wallet_api, wallet, table))

    def finished() -> bool:
        return [t["status"] for t in transactions(wallet_api)] == ["confirmed"]

    settle(wallet_api, wallet_of(wallet_api), finished)
    assert wallet.count("rollback") == 0 and wallet.balances["ann"] == PLAYERS["ann"] - 3000


@pytest.mark.parametrize("round_", range(3))
def test_a_seat_and_rollbacks_racing_on_one_debit_have_one_outcome(
    wallet_api: Api, wallet: TestWallet, round_: int
):
    connect(wallet_api, wallet)
    table = wallet_api.table("three-card")
    record = _pending_debit(wallet_api, wallet, table)
    calls = wallet_of(wallet_api)
    outcomes: list[str] = []

    def seat() -> None:
        try:
            _append_seat(wallet_api, record)
            outcomes.append("seated")
        except IdempotencyReused:
            outcomes.append("refused")

    def roll_back() -> None:
        outcomes.append(calls.roll_back("default", record["transaction_id"]))

    racers = [threading.Thread(target=seat if i % 2 == round_ % 2 else roll_back) for i in range(6)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join()
    (debit,) = [t for t in transactions(wallet_api) if t["kind"] == "debit"]
    seats = wallet_api.get(f"/v1/tables/{table}").json()["seats"]
    if debit["status"] == "confirmed":
        assert [s["player_id"] for s in seats] == ["ann"] and wallet.count("rollback") == 0
        assert outcomes.count("seated") >= 1 and "rolled_back" not in outcomes
        assert wallet.balances["ann"] == PLAYERS["ann"] - 3000
    else:
        assert debit["status"] == "rolled_back" and seats == []
        assert "seated" not in outcomes and "confirmed" not in outcomes
        assert wallet.balances["ann"] == PLAYERS["ann"]


def test_a_wallet_funded_seat_timed_out_is_credited(wallet_api: Api, wallet: TestWallet):
    """A time-out set while seated cashes the player out (`player_left`, as leaving): the
    wallet gets the whole stack back, once."""
    connect(wallet_api, wallet)
    table = wallet_api.table("three-card")
    _funded(wallet_api, table, "ann", 30)
    body = {"loss_limit_24h": None, "excluded_until": None, "timeout_until": "2099-01-01T00:00:00Z"}
    timed_out = wallet_api.call("PUT", "/v1/players/ann/limits", body)
    assert timed_out.status_code == 200, timed_out.text
    settle(wallet_api, wallet_of(wallet_api), _all_confirmed(wallet_api, 1))
    (credit,) = _credits(wallet_api)
    assert credit["amount"] == 3000 and credit["player_id"] == "ann"
    assert wallet.balances["ann"] == PLAYERS["ann"] and wallet.effects["credit"] == 1


def test_a_wallet_that_answers_again_has_its_waiting_credits_retried_at_once(
    wallet_api: Api, wallet: TestWallet
):
    """Credits that failed while the wallet was away wait out a backoff that grew meanwhile;
    the first of them it takes again brings the others forward, so all are paid within
    moments of its return rather than at the end of their own waits (here 10 minutes); and
    one whose call was under way as it came back (its failure recorded after that) is brought
    forward once more a call's timeout later."""
    connect(wallet_api, wallet)
    table = wallet_api.table("three-card")
    for player in ("ann", "bob", "cat"):
        _funded(wallet_api, table, player, 30)
    wallet.always["credit"] = "down"
    assert wallet_api.post(f"/v1/tables/{table}/end").status_code == 200
    duty = wallet_of(wallet_api, replace(FAST, first_retry_s=600.0, max_wait_s=3600.0))

    def tried() -> bool:
        credits = _credits(wallet_api)
        return len(credits) == 3 and all(c["attempts"] >= 1 for c in credits)

    settle(wallet_api, duty, tried)
    del wallet.always["credit"]  # the wallet is back; one credit's wait runs out
    client = SERVED[wallet_api.base].extensions["guts"].redis
    due = "guts:{%wallet:default}:due"
    keys = {k.decode().rpartition(":")[2]: k for k in client.zrange(due, 0, -1)}
    first, busy, late = (keys[c["transaction_id"]] for c in _credits(wallet_api))
    claimed = time.time() + 29  # claimed by another dispatcher: its call may be under way
    client.zadd(due, {first: 0, busy: claimed}, xx=True)
    with ThreadPoolExecutor(4) as pool:
        assert finish_due(duty, pool) == 1  # the first, paid: the waiting one brought forward
    assert client.zscore(due, late) <= time.time()
    assert client.zscore(due, busy) == pytest.approx(claimed, abs=0.01)  # never sent twice
    client.zadd(due, {late: time.time() + 600, busy: 0}, xx=True)  # late: as if its call
    # failed just now; busy: its claimant gone
    settle(wallet_api, duty, _all_confirmed(wallet_api, 3), within_s=20)
    assert wallet.effects["credit"] == 3
    assert all(wallet.balances[p] == PLAYERS[p] for p in ("ann", "bob", "cat"))
