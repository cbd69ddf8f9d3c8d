"""The ledger over HTTP: every chip movement an entry, paged by cursor, per tenant."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tests.api.test_betting import Table as BettingTable
from tests.apiclient import AUDITOR_A, REGULATOR, Api, As


def _entries(api: Api, **query: Any) -> list[dict[str, Any]]:
    """Every entry the query pages through (small pages, to cross several)."""
    found: list[dict[str, Any]] = []
    after = None
    while True:
        params = {**query, "limit": 3, **({"after": after} if after else {})}
        response = api.get("/v1/ledger", params=params)
        assert response.status_code == 200, response.text
        page = response.json()
        found += page["entries"]
        if not page["entries"]:
            return found
        after = page["next_after"]


def _hand(api: Api, table: str, tokens: list[str], decisions: list[str]) -> dict[str, Any]:
    assert api.post(f"/v1/tables/{table}/deal").status_code == 201
    for token, decision in zip(tokens, decisions, strict=True):
        r = api.post(f"/v1/tables/{table}/declare", {"decision": decision}, token=token)
        assert r.status_code == 200, r.text
    resolved = api.post(f"/v1/tables/{table}/resolve")
    assert resolved.status_code == 200, resolved.text
    return dict(resolved.json())


def test_every_chip_movement_of_a_hand_is_one_entry_and_balances_are_the_stacks(api: Api):
    # Suits separate hands of equal rank, so the two in-hands never tie: a tie, rare but dealt
    # once in a CI run (2026-12-07), is two wins and no match.
    table = api.table("three-card", ante=2, suit_tiebreak=True)
    tokens = [api.seat(table, p, buy_in=50)["token"] for p in ("alice", "bob", "carol")]
    assert api.post(f"/v1/tables/{table}/players/0/chips", {"amount": 10}).status_code == 200
    outcome = _hand(api, table, tokens, ["in", "in", "out"])
    entries = _entries(api, table_id=table)
    kinds = [e["kind"] for e in entries]
    assert kinds[:4] == ["buy_in", "buy_in", "buy_in", "top_up"]
    assert kinds[4:7] == ["ante", "ante", "ante"]
    assert sorted(kinds[7:]) == ["match", "win"]
    assert len({e["tx_id"] for e in entries}) == len(entries)
    for entry in entries:
        assert entry["table_id"] == table
        assert (entry["round_id"] is None) == (entry["kind"] in ("buy_in", "top_up"))
        if entry["round_id"] is not None:
            assert entry["round_id"] == f"{table}:1" and entry["hand"] == 1
        assert (entry["amount"] < 0) == (entry["kind"] in ("ante", "match"))
    seats = {s["player_id"]: s["stack"] for s in api.get(f"/v1/tables/{table}").json()["seats"]}
    for player, stack in seats.items():
        mine = [e for e in entries if e["player_id"] == player]
        assert mine[-1]["balance_after"] == stack
        assert sum(e["amount"] for e in mine) == stack
    pot = outcome["pot"]
    assert sum(e["amount"] for e in entries) + pot == 3 * 50 + 10  # bought in, all on the table
    # The same movements read again have the same ids (nothing was written twice).
    assert _entries(api, table_id=table) == entries


def test_pages_of_the_whole_ledger_and_of_one_player_follow_the_cursor(api: Api):
    tables = []
    for _ in range(2):
        table = api.table("three-card")
        tokens = [api.seat(table, p)["token"] for p in ("alice", "bob")]
        _hand(api, table, tokens, ["in", "in"])
        tables.append(table)
    per_table = [_entries(api, table_id=t) for t in tables]  # (catches both up)
    everything = _entries(api)
    assert sorted(e["tx_id"] for e in everything) == sorted(
        e["tx_id"] for rows in per_table for e in rows
    )
    alice = _entries(api, player_id="alice")
    assert alice == [e for e in everything if e["player_id"] == "alice"]
    assert {e["table_id"] for e in alice} == set(tables)
    both = _entries(api, player_id="alice", table_id=tables[1])
    assert both == [e for e in alice if e["table_id"] == tables[1]]
    # A cursor stays valid while entries are added: the page after it is the new ones.
    last = api.get("/v1/ledger", params={"table_id": tables[0], "limit": 1000}).json()
    assert api.post(f"/v1/tables/{tables[0]}/players/0/chips", {"amount": 7}).status_code == 200
    page = api.get("/v1/ledger", params={"table_id": tables[0], "after": last["next_after"]}).json()
    assert [(e["kind"], e["amount"]) for e in page["entries"]] == [("top_up", 7)]


def test_a_voided_hand_gives_the_bets_back_and_keeps_the_antes_in_the_pot(api: Api):
    table = BettingTable(api)
    table.to_betting()  # seat 1 bets first
    assert table.bet(1, "bet").status_code == 200
    table.ok("void", {"reason": "misdeal"})
    entries = _entries(api, table_id=table.id)
    bet, refund = (next(e for e in entries if e["kind"] == k) for k in ("bet", "refund"))
    assert refund["amount"] == -bet["amount"] > 0 and refund["player_id"] == bet["player_id"]
    assert refund["round_id"] == bet["round_id"] == f"{table.id}:1"
    antes = [e for e in entries if e["kind"] == "ante"]
    pot = table.view()["pot"]
    assert pot == -sum(e["amount"] for e in antes) > 0


def test_a_tenants_ledger_is_its_own(casino_a: As, casino_b: As, tenants_url: str):
    mine = casino_a.table("three-card")
    casino_a.seat(mine, "alice")
    theirs = casino_b.table("three-card")
    casino_b.seat(theirs, "alice")
    a = _entries(casino_a, table_id=mine)
    assert [e["table_id"] for e in a] == [mine]
    assert casino_b.get("/v1/ledger", params={"table_id": mine}).status_code == 404
    assert len(_entries(casino_b, table_id=theirs)) == 1  # (caught up: no follower runs here)
    assert [e["table_id"] for e in _entries(casino_b, player_id="alice")] == [theirs]
    auditor = As(tenants_url, AUDITOR_A)
    assert _entries(auditor, table_id=mine) == a
    regulator = As(tenants_url, REGULATOR)
    refused = regulator.get("/v1/ledger")
    assert refused.status_code == 422 and "tenant" in refused.json()["errors"]
    assert _entries(regulator, tenant="casino-a", table_id=mine) == a
    elsewhere = {"tenant": "casino-b", "table_id": mine}
    assert regulator.get("/v1/ledger", params=elsewhere).status_code == 404
    assert casino_a.get("/v1/ledger", params={"tenant": "casino-b"}).status_code == 403


@pytest.mark.parametrize(
    "query",
    [{"after": "x"}, {"limit": 0}, {"limit": 1001}, {"table_id": "no/such"}, {"nope": 1}],
)
def test_a_bad_ledger_query_is_422(api: Api, query: dict[str, Any]):
    response = api.get("/v1/ledger", params=query)
    assert response.status_code == 422, response.text
    assert response.headers["Content-Type"].startswith("application/problem+json")


def test_a_table_that_does_not_exist_is_404(api: Api):
    assert api.get("/v1/ledger", params={"table_id": "nothing-here"}).status_code == 404


def test_twenty_identical_top_ups_at_once_make_one_entry(api: Api):
    table = api.table("three-card")
    api.seat(table, "alice")
    barrier = threading.Barrier(20)
    statuses: list[int] = []

    def top_up() -> None:
        client = Api(api.base)  # a connection of its own
        barrier.wait()
        response = client.post(
            f"/v1/tables/{table}/players/0/chips",
            {"amount": 5},
            headers={"Idempotency-Key": "once"},
        )
        statuses.append(response.status_code)

    threads = [threading.Thread(target=top_up) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statuses == [200] * 20
    top_ups = [e for e in _entries(api, table_id=table) if e["kind"] == "top_up"]
    assert [e["amount"] for e in top_ups] == [5]
    assert api.get(f"/v1/tables/{table}").json()["seats"][0]["stack"] == 105
