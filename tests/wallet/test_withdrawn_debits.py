"""A wallet-funded seat's debit is recorded in the round trip that reads the player's
protections, before the rules and the protections check the seat (docs/wallet.md): a seat
they refuse withdraws it unsent. Another request with the same Idempotency-Key may find the
debit meanwhile and go on with it (`Wallet.resume`, before sending it); whichever of the two
writes first decides, and neither order lets money move without its record: a debit taken
on cannot be withdrawn (it is rolled back instead, its seat's key claimed), and one
withdrawn first is not taken on (the retry records it anew)."""

from __future__ import annotations

import pytest

from service.rules import wallet as w
from service.tables import IdempotencyReused
from tests.apiclient import Api
from tests.wallet.conftest import (
    PLAYERS,
    anns_debit,
    connect,
    follow,
    transactions,
    wallet_of,
)
from tests.wallet.test_credits import _append_seat
from tests.wallet_server import TestWallet


def _recorded(api: Api, table: str) -> dict:
    """A new debit of ann's as a seat's request records it, not sent yet."""
    begun = wallet_of(api).begin_debit("default", lambda _: anns_debit(api, table, "race"))
    assert begun is not None and begun[2], "the debit was not new"
    return begun[0]


def test_a_refused_seats_debit_is_withdrawn_unsent(wallet_api: Api, wallet: TestWallet):
    connect(wallet_api, wallet)
    record = _recorded(wallet_api, wallet_api.table("three-card"))
    assert [t["status"] for t in transactions(wallet_api)] == ["pending"]
    wallet_of(wallet_api).withdraw("default", record)
    assert transactions(wallet_api) == [] and wallet.calls == []
    assert wallet_of(wallet_api).resume("default", record) is None  # (a retry: record anew)


def test_a_debit_a_retry_took_on_is_rolled_back_not_withdrawn(wallet_api: Api, wallet: TestWallet):
    """The retry took the debit on (and may have sent it): the first request, refused,
    cannot forget it; the debit is rolled back, so the retry's seat cannot land and the
    wallet gives back whatever it took."""
    connect(wallet_api, wallet)
    record = _recorded(wallet_api, wallet_api.table("three-card"))
    calls = wallet_of(wallet_api)
    resumed = calls.resume("default", record)
    assert resumed is not None and resumed["status"] == w.PENDING
    assert calls.debit("default", resumed) == w.PENDING  # the retry sent it: the wallet took it
    assert wallet.balances["ann"] == PLAYERS["ann"] - 3000
    calls.withdraw("default", record)  # the first request, refused by the rules
    statuses = {t["kind"]: t["status"] for t in transactions(wallet_api)}
    assert statuses == {"debit": "rolled_back", "rollback": "confirmed"}
    assert wallet.balances["ann"] == PLAYERS["ann"]
    with pytest.raises(IdempotencyReused):  # the retry's seat
        _append_seat(wallet_api, resumed)
    assert wallet_api.get(f"/v1/tables/{record['table_id']}").json()["seats"] == []


def test_a_debit_a_retry_found_after_it_was_sent_is_taken_on_as_it_is(
    wallet_api: Api, wallet: TestWallet
):
    """A debit its first request has sent and is seating is taken on as it stands (the
    retry then appends under the same key: one seat, one debit)."""
    connect(wallet_api, wallet)
    table = wallet_api.table("three-card")
    record = _recorded(wallet_api, table)
    calls = wallet_of(wallet_api)
    assert calls.debit("default", record) == w.PENDING
    _append_seat(wallet_api, record)
    follow(wallet_api, record["table_id"])  # (the wallet's projection confirms the debit)
    resumed = calls.resume("default", record)
    assert resumed is not None and resumed["status"] == w.CONFIRMED
    assert wallet.effects["debit"] == 1 and len(transactions(wallet_api)) == 1
