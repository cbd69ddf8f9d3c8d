"""Wallet-funded seats and top-ups over HTTP against a real test wallet: a seat exists only
with a confirmed debit; a refusal refuses the seat; every unknown outcome (no answer, an
error, garbage, an answer unsigned or signed badly) rolls the debit back and refuses the
seat; a retried request is the same transaction."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from service.projections.ledger import LedgerStore
from tests.apiclient import AUDITOR_A, REGULATOR, SERVED, Api, As
from tests.metrics import samples, total
from tests.openapi_helpers import SpecValidator
from tests.spec import load_spec
from tests.wallet.conftest import PLAYERS, connect, follow, transactions, wallet_of
from tests.wallet_server import TestWallet

ROOT = Path(__file__).resolve().parents[2]


def _seat(api: Api, table: str, player: str, chips: int, **headers: str):
    body = {"player_id": player, "buy_in": chips, "funding": "wallet"}
    return api.post(f"/v1/tables/{table}/players", body, headers=headers or None)


def _seated(api: Api, table: str) -> list[str]:
    return [s["player_id"] for s in api.get(f"/v1/tables/{table}").json()["seats"]]


def test_settings_show_the_secret_once_and_are_the_tenants(wallet_api: Api, wallet: TestWallet):
    secret = connect(wallet_api, wallet)
    assert secret.startswith("whsec_")
    shown = wallet_api.get("/v1/wallet").json()
    assert shown == {"url": wallet.url, "currency": "EUR", "chip_value_minor": 100}
    again = wallet_api.call(
        "PUT", "/v1/wallet", {"url": wallet.url, "currency": "EUR", "chip_value_minor": 5}
    )
    assert "secret" not in again.json() and again.json()["chip_value_minor"] == 5
    rotated = wallet_api.post("/v1/wallet/secret", {}).json()["secret"]
    assert rotated.startswith("whsec_") and rotated != secret
    assert wallet_api.delete("/v1/wallet").status_code == 204
    assert wallet_api.get("/v1/wallet").status_code == 409
    table = wallet_api.table("three-card")
    refused = _seat(wallet_api, table, "ann", 10)
    assert refused.status_code == 409 and refused.json()["title"] == "No Wallet"


@pytest.mark.parametrize(
    "body",
    [
        {"url": "ftp://x", "currency": "EUR", "chip_value_minor": 1},
        {"url": "http://[::1", "currency": "EUR", "chip_value_minor": 1},
        {"url": "http://x:65536/", "currency": "EUR", "chip_value_minor": 1},
        {"url": "http://x/\tw", "currency": "EUR", "chip_value_minor": 1},
        {"url": "http://x", "currency": "eur", "chip_value_minor": 1},
        {"url": "http://x", "currency": "EUR", "chip_value_minor": 0},
        {"url": "http://x", "currency": "EUR", "chip_value_minor": 1.5},
        {"url": "http://x", "currency": "EUR"},
    ],
)
def test_bad_settings_are_422(wallet_api: Api, body):
    answer = wallet_api.call("PUT", "/v1/wallet", body)
    assert answer.status_code == 422, answer.text
    assert wallet_api.get("/v1/wallet").status_code == 409  # nothing was written


def test_a_seat_is_paid_by_one_confirmed_debit(wallet_api: Api, wallet: TestWallet):
    connect(wallet_api, wallet)
    table = wallet_api.table("three-card")
    seated = _seat(wallet_api, table, "ann", 30)
    assert seated.status_code == 201, seated.text
    txid = seated.json()["transaction_id"]
    assert wallet.balances["ann"] == PLAYERS["ann"] - 3000
    assert wallet.effects["debit"] == 1 and wallet.count("debit") == 1
    ((_, call),) = wallet.calls
    assert call["transaction_id"] == txid and call["amount"] == 3000
    assert call["currency"] == "EUR" and call["reason"] == "buy_in" and call["table_id"] == table
    (tx,) = transactions(wallet_api)
    assert tx["status"] == "pending"  # until the dispatchers' wallet projection follows the seat
    follow(wallet_api, table)
    (tx,) = transactions(wallet_api)
    assert tx["status"] == "confirmed" and tx["kind"] == "debit" and tx["amount"] == 3000
    assert tx["transaction_id"] == txid and tx["settled_at"] is not None
    assert tx["attempts"] == 1
    # Followed again from the start (as after a lost position): the seat is met again, and
    # its debit, no longer pending, is left as it is (its attempt counted once).
    client = SERVED[wallet_api.base].extensions["guts"].redis
    assert client.hdel(wallet_of(wallet_api).store.key("default", "positions"), table) == 1
    follow(wallet_api, table)
    assert transactions(wallet_api) == [tx]
    (entry,) = wallet_api.get("/v1/ledger", params={"table_id": table}).json()["entries"]
    assert entry["kind"] == "buy_in" and entry["transaction_id"] == txid
    assert _seated(wallet_api, table) == ["ann"]


def test_a_seat_after_the_settings_changed_is_made_with_the_new_ones(
    wallet_api: Api, wallet: TestWallet
):
    """The API process keeps the settings it used last; the debit's script checks them, so a
    new secret or chip value is used from the next seat on, and no wallet is used after its
    settings are deleted."""
    connect(wallet_api, wallet)
    table = wallet_api.table("three-card")
    assert _seat(wallet_api, table, "ann", 30).status_code == 201
    wallet.secret = wallet_api.post("/v1/wallet/secret", {}).json()["secret"]
    body = {"url": wallet.url, "currency": "EUR", "chip_value_minor": 5}
    assert wallet_api.call("PUT", "/v1/wallet", body).status_code == 200
    seated = _seat(wallet_api, table, "bob", 30)
    assert seated.status_code == 201, seated.text  # signed with the new secret
    assert wallet.balances["bob"] == PLAYERS["bob"] - 150
    assert [t["amount"] for t in transactions(wallet_api)] == [3000, 150]
    assert wallet_api.delete("/v1/wallet").status_code == 204
    refused = _seat(wallet_api, table, "cat", 30)
    assert refused.status_code == 409 and refused.json()["title"] == "No Wallet"
    assert wallet.count("debit") == 2 and len(transactions(wallet_api)) == 2


def test_a_retried_request_is_the_same_transaction(wallet_api: Api, wallet: TestWallet):
    connect(wallet_api, wallet)
    table = wallet_api.table("three-card")
    first = _seat(wallet_api, table, "ann", 30, **{"Idempotency-Key": "k1"})
    again = _seat(wallet_api, table, "ann", 30, **{"Idempotency-Key": "k1"})
    assert first.status_code == 201 and again.status_code == 201, again.text
    assert again.json() == first.json()
    assert wallet.effects["debit"] == 1 and wallet.count("debit") == 1
    assert len(transactions(wallet_api)) == 1


@pytest.mark.parametrize("answer", ["insufficient_funds", "unknown_player"])
def test_a_refused_debit_refuses_the_seat(wallet_api: Api, wallet: TestWallet, answer: str):
    connect(wallet_api, wallet)
    table = wallet_api.table("three-card")
    player = "poor" if answer == "insufficient_funds" else "nobody"
    refused = _seat(wallet_api, table, player, 30)
    assert refused.status_code == 409, refused.text
    assert refused.json()["title"] == "Wallet Refused"
    assert _seated(wallet_api, table) == []
    (tx,) = transactions(wallet_api)
    assert tx["status"] == "refused" and wallet.count("rollback") == 0


@pytest.mark.parametrize(
    "fault", ["500", "garbage", "bad_signature", "unsigned", "slow", "down", "applied_500"]
)
def test_an_unknown_outcome_rolls_the_debit_back(wallet_api: Api, wallet: TestWallet, fault: str):
    connect(wallet_api, wallet)
    table = wallet_api.table("three-card")
    wallet.fail("debit", fault)  # (a slow debit comes after its rollback, and is refused)
    refused = _seat(wallet_api, table, "ann", 30)
    assert refused.status_code == 502, refused.text
    assert refused.json()["title"] == "Wallet Outcome Unknown"
    assert _seated(wallet_api, table) == []
    assert wallet.balances["ann"] == PLAYERS["ann"]  # debited or not, the money is back
    by_kind = {t["kind"]: t for t in transactions(wallet_api)}
    rollbacks = [c for p, c in wallet.calls if p == "rollback"]
    assert {c["transaction_id"] for c in rollbacks} == {by_kind["debit"]["transaction_id"]}
    assert by_kind["debit"]["status"] == "rolled_back"
    assert by_kind["rollback"]["status"] == "confirmed"
    assert by_kind["rollback"]["amount"] == 3000
    # the ledger has no buy-in: no chips exist for the refused seat
    assert wallet_api.get("/v1/ledger", params={"table_id": table}).json()["entries"] == []


def test_a_rollback_the_wallet_does_not_take_is_left_pending(wallet_api: Api, wallet: TestWallet):
    connect(wallet_api, wallet)
    table = wallet_api.table("three-card")
    wallet.fail("debit", "applied_500")
    wallet.fail("rollback", "500")
    assert _seat(wallet_api, table, "ann", 30).status_code == 502
    by_kind = {t["kind"]: t for t in transactions(wallet_api)}
    assert by_kind["debit"]["status"] == "rolled_back"
    assert by_kind["rollback"]["status"] == "pending" and by_kind["rollback"]["attempts"] == 1


def test_a_seat_the_rules_refuse_debits_nothing(wallet_api: Api, wallet: TestWallet):
    connect(wallet_api, wallet)
    table = wallet_api.table("three-card")
    assert _seat(wallet_api, table, "ann", 30).status_code == 201
    again = _seat(wallet_api, table, "ann", 30)
    assert again.status_code == 409 and again.json()["title"] == "Not Allowed Now"
    assert wallet.count("debit") == 1


def test_a_seat_taken_while_the_wallet_answers_rolls_the_debit_back(
    wallet_api: Api, wallet: TestWallet
):
    """The seat is decided while the wallet answers, and appended once it took the debit:
    bob, seated meanwhile, moved the table on, so ann's seat is decided again, refused, and
    her debit rolled back (the wallet had taken it)."""
    connect(wallet_api, wallet)
    table = wallet_api.table("three-card", seats=2)
    wallet.fail("debit", "hold")
    body = {"player_id": "ann", "buy_in": 30, "funding": "wallet", "seat": 0}
    with ThreadPoolExecutor(1) as pool:
        funded = pool.submit(Api(wallet_api.base).post, f"/v1/tables/{table}/players", body)
        assert wallet.held.wait(20)
        wallet_api.seat(table, "bob", 30, seat=0)
        wallet.release.set()
        answer = funded.result(20)
    assert answer.status_code == 409 and "seat 0 is taken" in answer.text, answer.text
    by_kind = {t["kind"]: t["status"] for t in transactions(wallet_api)}
    assert by_kind == {"debit": "rolled_back", "rollback": "confirmed"}
    assert wallet.effects["debit"] == 1 and wallet.balances["ann"] == PLAYERS["ann"]
    assert _seated(wallet_api, table) == ["bob"]


def test_a_debit_over_the_largest_json_safe_amount_is_422_and_sends_nothing(
    wallet_api: Api, wallet: TestWallet
):
    """2**53 - 1 = 69431 x 129728784761: a chip of 69431 minor units, and as many chips, ask
    the wallet for exactly the most every JSON reader holds (refused there: the test wallet's
    players have less); one chip more is refused here, nothing recorded nor sent (it was a 500
    past 2**64, and a number a wallet in JavaScript rounds below that)."""
    connect(wallet_api, wallet, value=69431)
    table = wallet_api.table("three-card")
    most = _seat(wallet_api, table, "ann", 129_728_784_761)
    assert most.status_code == 409 and most.json()["title"] == "Wallet Refused", most.text
    over = _seat(wallet_api, table, "ann", 129_728_784_762)
    assert over.status_code == 422, over.text
    assert "over the most a wallet is asked for at once (9007199254740991)" in over.json()["detail"]
    assert list(over.json()["errors"]) == ["buy_in"]
    wallet.balances["ann"] = 10**9
    assert _seat(wallet_api, table, "ann", 30).status_code == 201
    topped = wallet_api.post(
        f"/v1/tables/{table}/players/0/chips", {"amount": 129_728_784_762, "funding": "wallet"}
    )
    assert topped.status_code == 422 and list(topped.json()["errors"]) == ["amount"], topped.text
    assert wallet.count("debit") == 2  # the most, and the seat of 30
    assert [t["kind"] for t in transactions(wallet_api)] == ["debit", "debit"]


def test_top_ups_of_a_wallet_funded_seat_come_from_the_wallet(wallet_api: Api, wallet: TestWallet):
    connect(wallet_api, wallet)
    table = wallet_api.table("three-card")
    assert _seat(wallet_api, table, "ann", 30).status_code == 201
    wallet_api.seat(table, "bob", 30)  # funded by the casino itself
    chips = f"/v1/tables/{table}/players"
    plain = wallet_api.post(f"{chips}/0/chips", {"amount": 5})
    assert plain.status_code == 409 and "wallet" in plain.json()["detail"]
    wrong = wallet_api.post(f"{chips}/1/chips", {"amount": 5, "funding": "wallet"})
    assert wrong.status_code == 409
    topped = wallet_api.post(f"{chips}/0/chips", {"amount": 5, "funding": "wallet"})
    assert topped.status_code == 200, topped.text
    assert topped.json()["stack"] == 35
    assert wallet.balances["ann"] == PLAYERS["ann"] - 3500
    follow(wallet_api, table)
    reasons = sorted(t["reason"] for t in transactions(wallet_api, status="confirmed"))
    assert reasons == ["buy_in", "top_up"]
    assert wallet.balances["bob"] == PLAYERS["bob"] and wallet.count("debit") == 2


def test_the_wallets_answers_are_the_documented_ones(wallet_api: Api, wallet: TestWallet):
    spec = SpecValidator(load_spec())
    settings = {"url": wallet.url, "currency": "EUR", "chip_value_minor": 100}
    made = wallet_api.call("PUT", "/v1/wallet", settings)
    wallet.secret = spec("PUT", "/v1/wallet", made)["secret"]
    spec("GET", "/v1/wallet", wallet_api.get("/v1/wallet"))
    table = wallet_api.table("three-card")
    players = "/v1/tables/{table_id}/players"
    spec("POST", players, _seat(wallet_api, table, "ann", 30))
    spec("POST", players, _seat(wallet_api, table, "poor", 30))  # 409
    wallet.fail("debit", "500")
    spec("POST", players, _seat(wallet_api, table, "bob", 30))  # 502
    chips = wallet_api.post(
        f"/v1/tables/{table}/players/0/chips", {"amount": 5, "funding": "wallet"}
    )
    spec("POST", "/v1/tables/{table_id}/players/{seat}/chips", chips)
    listed = wallet_api.get("/v1/wallet/transactions", params={"limit": 2})
    assert len(spec("GET", "/v1/wallet/transactions", listed)["transactions"]) == 2
    events = wallet_api.get(f"/v1/tables/{table}/events")
    spec("GET", "/v1/tables/{table_id}/events", events)
    ledger = wallet_api.get("/v1/ledger", params={"table_id": table})
    spec("GET", "/v1/ledger", ledger)
    spec("POST", "/v1/wallet/secret", wallet_api.post("/v1/wallet/secret", {}))


def test_a_regulator_reads_a_tenants_transactions_naming_it(
    casino_a: As, casino_b: As, tenants_url: str, wallet: TestWallet
):
    connect(casino_a, wallet)
    assert _seat(casino_a, casino_a.table("three-card"), "ann", 10).status_code == 201
    mine = transactions(casino_a)
    assert [(t["kind"], t["player_id"]) for t in mine] == [("debit", "ann")]
    regulator = As(tenants_url, REGULATOR)
    assert transactions(regulator, tenant="casino-a") == mine
    assert transactions(regulator, tenant="casino-b") == []
    refused = regulator.get("/v1/wallet/transactions")  # whose? (as for the ledger)
    assert refused.status_code == 422 and "tenant" in refused.json()["errors"]
    assert transactions(As(tenants_url, AUDITOR_A), tenant="casino-a") == mine
    assert transactions(casino_b) == []
    others = casino_b.get("/v1/wallet/transactions", params={"tenant": "casino-a"})
    assert others.status_code == 403, others.text
    assert transactions(casino_a, tenant="casino-a") == mine


def test_a_seat_at_another_tenants_table_is_not_found_and_debits_nothing(
    casino_a: As, casino_b: As, wallet: TestWallet
):
    """As a table that does not exist: 404, no call to either wallet, no transaction kept
    (casino B's debit is recorded with its protections' read, then withdrawn)."""
    connect(casino_a, wallet)
    theirs = TestWallet(balances=PLAYERS)
    try:
        connect(casino_b, theirs)
        assert _seat(casino_b, casino_b.table("three-card"), "ann", 10).status_code == 201
        before = list(theirs.calls), transactions(casino_b)
        table = casino_a.table("three-card")
        answer = _seat(casino_b, table, "bob", 10)
        missing = _seat(casino_b, "no-such-table", "bob", 10)
        assert answer.status_code == missing.status_code == 404, answer.text
        assert answer.json()["title"] == missing.json()["title"]
        assert (list(theirs.calls), transactions(casino_b)) == before
        assert wallet.calls == [] and transactions(casino_a) == []
    finally:
        theirs.close()


def _soon(**later: float) -> str:
    return (datetime.now(UTC) + timedelta(**later)).isoformat().replace("+00:00", "Z")


def _protect(api: Api, player: str, **limits: Any) -> None:
    body = {"loss_limit_24h": None, "excluded_until": None, **limits}
    answer = api.call("PUT", f"/v1/players/{player}/limits", body)
    assert answer.status_code == 200, answer.text


REFUSED_SEATS = {  # what makes the rules or the protections refuse ann a seat: the answer
    "seat_taken": (409, "seat 0 is taken"),
    "table_full": (409, "the table is full"),
    "already_seated": (409, "is already seated"),
    "table_ended": (409, "ended"),
    "no_such_seat": (422, "seat must be from 0 to 1"),
    "buy_in_out_of_range": (422, "buy_in"),
    "excluded": (409, "is excluded from play"),
    "timed_out": (409, "is excluded from play (or on a time-out)"),
    "cooling_down": (409, "reached their session limit"),
    "loss_limit_reached": (409, "has reached their loss limit of 0"),
    "no_such_table": (404, "no table"),  # (no table is looked at before the debit is recorded)
}


@pytest.mark.parametrize("known", [False, True], ids=["first_debit", "settings_known"])
@pytest.mark.parametrize("refusal", REFUSED_SEATS)
def test_a_seat_refused_by_the_rules_or_protections_sends_the_wallet_nothing(
    wallet_api: Api, wallet: TestWallet, refusal: str, known: bool
):
    """Refused before any money moves: no debit sent, so no rollback, and no transaction
    left (`known`: the API has debited the wallet before, so it knows its settings and
    records the debit in the protections' round trip, then withdraws it)."""
    connect(wallet_api, wallet)
    before: tuple[list, list] = ([], [])
    if known:
        assert _seat(wallet_api, wallet_api.table("three-card"), "cat", 30).status_code == 201
        before = list(wallet.calls), transactions(wallet_api)
    table = wallet_api.table("three-card", seats=2)
    body: dict[str, Any] = {"player_id": "ann", "buy_in": 30, "funding": "wallet"}
    if refusal == "seat_taken":
        wallet_api.seat(table, "bob", 30)
        body["seat"] = 0
    elif refusal == "table_full":
        wallet_api.seat(table, "bob", 30)
        wallet_api.seat(table, "cat", 30)
    elif refusal == "already_seated":
        wallet_api.seat(table, "ann", 30)  # (with the casino's chips)
    elif refusal == "table_ended":
        assert wallet_api.post(f"/v1/tables/{table}/end").status_code == 200
    elif refusal == "no_such_seat":
        body["seat"] = 2
    elif refusal == "buy_in_out_of_range":
        body["buy_in"] = 10**12 + 1
    elif refusal == "excluded":
        _protect(wallet_api, "ann", excluded_until=_soon(days=30))
    elif refusal == "timed_out":
        _protect(wallet_api, "ann", timeout_until=_soon(days=2))
    elif refusal == "loss_limit_reached":  # (a limit of 0: reached with nothing lost yet)
        _protect(wallet_api, "ann", loss_limit_24h=0)
    elif refusal == "no_such_table":
        table = "no-such-table"
    else:  # a session limit ann reached elsewhere keeps her from every seat for a while
        client = SERVED[wallet_api.base].extensions["guts"].redis
        LedgerStore(client).cool_down("default", "ann", _soon(hours=1))
    answer = wallet_api.post(f"/v1/tables/{table}/players", body)
    status, saying = REFUSED_SEATS[refusal]
    assert answer.status_code == status and saying in answer.text, answer.text
    assert (wallet.calls, transactions(wallet_api)) == before
    if refusal != "no_such_table":
        assert "ann" not in _seated(wallet_api, table) or refusal == "already_seated"


def test_a_top_up_refused_by_the_rules_sends_the_wallet_nothing(
    wallet_api: Api, wallet: TestWallet
):
    connect(wallet_api, wallet)
    table = wallet_api.table("three-card", ante=1)
    for player in ("ann", "bob"):
        assert _seat(wallet_api, table, player, 30).status_code == 201
    assert wallet_api.post(f"/v1/tables/{table}/deal").status_code == 201
    before = list(wallet.calls), transactions(wallet_api)
    chips = f"/v1/tables/{table}/players"
    for seat, amount in ((0, 5), (5, 5), (1, 0)):  # in a live hand; no such seat; no chips
        answer = wallet_api.post(f"{chips}/{seat}/chips", {"amount": amount, "funding": "wallet"})
        assert 400 <= answer.status_code < 500, answer.text
    assert (wallet.calls, transactions(wallet_api)) == before


def test_a_player_who_lost_up_to_their_loss_limit_is_refused_a_top_up_from_the_wallet(
    wallet_api: Api, wallet: TestWallet
):
    """Refused as declaring in past the limit is (the same problem type), before any money
    moves; a player under their limit tops up."""
    connect(wallet_api, wallet)
    table = wallet_api.table("three-card", ante=1)
    tokens = [_seat(wallet_api, table, p, 30).json()["token"] for p in ("ann", "bob")]
    _protect(wallet_api, "ann", loss_limit_24h=1)
    _protect(wallet_api, "bob", loss_limit_24h=1000)
    assert wallet_api.post(f"/v1/tables/{table}/deal").status_code == 201
    for token, decision in zip(tokens, ("out", "in"), strict=True):
        declared = wallet_api.post(
            f"/v1/tables/{table}/declare", {"decision": decision}, token=token
        )
        assert declared.status_code == 200, declared.text
    assert wallet_api.post(f"/v1/tables/{table}/resolve").status_code == 200  # ann lost 1
    before = list(wallet.calls), transactions(wallet_api)
    chips = f"/v1/tables/{table}/players"
    refused = wallet_api.post(f"{chips}/0/chips", {"amount": 5, "funding": "wallet"})
    assert refused.status_code == 409, refused.text
    problem = refused.json()
    assert problem["type"] == "https://guts.example/problems/not-allowed-now"
    assert "has reached their loss limit of 1: they have lost 1" in problem["detail"]
    assert (wallet.calls, transactions(wallet_api)) == before
    topped = wallet_api.post(f"{chips}/1/chips", {"amount": 5, "funding": "wallet"})
    assert topped.status_code == 200, topped.text
    assert wallet.count("debit") == 3


def _wallet_calls(api: Api) -> dict[tuple[str, str], tuple[float, float]]:
    """(call, outcome) -> (count, seconds) of the guts_wallet_call_seconds histogram."""
    found = samples(api.get("/metrics", token=None).text)
    name = "guts_wallet_call_seconds"
    return {
        (labels["call"], labels["outcome"]): (count, total(found, f"{name}_sum", **labels))
        for labels, count in found.get(f"{name}_count", [])
    }


def test_each_wallet_call_is_timed_in_metrics_by_call_and_outcome(
    wallet_api: Api, wallet: TestWallet
):
    connect(wallet_api, wallet)
    table = wallet_api.table("three-card")
    assert _seat(wallet_api, table, "ann", 10).status_code == 201
    assert _seat(wallet_api, table, "poor", 30).status_code == 409  # insufficient funds
    wallet.slow_s = 0.3
    wallet.fail("debit", "slow")  # (answered in time: 0.3 s of a 2 s timeout)
    assert _seat(wallet_api, table, "bob", 10).status_code == 201
    wallet.fail("debit", "500")
    assert _seat(wallet_api, table, "cat", 10).status_code == 502  # then rolled back
    calls = _wallet_calls(wallet_api)
    assert {key: count for key, (count, _) in calls.items()} == {
        ("debit", "ok"): 2,
        ("debit", "refused"): 1,
        ("debit", "unknown"): 1,
        ("rollback", "ok"): 1,
    }
    assert calls["debit", "ok"][1] >= 0.3  # the slow one's 0.3 s is in it


def test_a_wallet_at_a_private_address_is_called_only_where_allowed(
    serve_with: Any, redis_client: Any, clean_archive: str, wallet: TestWallet
):
    """A service without GUTS_ALLOW_PRIVATE_URLS calls no wallet on 127.0.0.1, even one set
    where it was allowed (or named by a host name that came to resolve there): the seat is
    refused as an unknown outcome (502, its debit rolled back, nothing sent to the wallet)."""
    api = serve_with(allow_private_urls=False)
    connect(serve_with(), wallet)  # (set through a server that allows it, on the same Redis)
    table = api.table("three-card")
    refused = _seat(api, table, "ann", 30)
    assert refused.status_code == 502, refused.text
    assert "PrivateAddress" in refused.json()["detail"]
    assert wallet.calls == [] and _seated(api, table) == []
    (debit,) = [t for t in transactions(api) if t["kind"] == "debit"]
    assert debit["status"] == "rolled_back"
