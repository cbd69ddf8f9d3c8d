"""Tenants: each casino sees its own tables only (another casino's are not found), a
regulator sees every casino's, and nothing one tenant sends is answered with another's."""

from __future__ import annotations

from typing import Any

from tests.apiclient import AUDITOR_A, REGULATOR, TENANT_A, TENANT_B, As
from tests.sse import Stream


def test_each_casino_lists_its_own_tables_and_a_regulator_lists_all(casino_a: As, casino_b: As):
    a1, b1, a2 = casino_a.table(), casino_b.table(), casino_a.table()
    listed = {
        key: [t["table_id"] for t in casino_a.get("/v1/tables", token=key).json()["tables"]]
        for key in (TENANT_A, TENANT_B, AUDITOR_A, REGULATOR)
    }
    assert listed[TENANT_A] == [a2, a1] and listed[AUDITOR_A] == [a2, a1]
    assert listed[TENANT_B] == [b1]
    assert listed[REGULATOR] == [a2, b1, a1]
    rows = casino_a.get("/v1/tables", token=REGULATOR).json()["tables"]
    assert {r["table_id"]: r["tenant"] for r in rows} == {
        a1: "casino-a",
        a2: "casino-a",
        b1: "casino-b",
    }


def test_another_casinos_table_is_not_found_by_its_stream_nor_its_audits(
    casino_a: As, casino_b: As
):
    table = casino_b.table()
    assert casino_a.get(f"/v1/tables/{table}/stream").status_code == 404
    assert casino_a.post(f"/v1/tables/{table}/stream-tickets").status_code == 404
    audit = casino_b.post(f"/v1/tables/{table}/audit").json()["audit_id"]
    assert casino_a.get(f"/v1/audits/{audit}").status_code == 404
    assert casino_a.get(f"/v1/audits/{audit}", token=AUDITOR_A).status_code == 404
    assert casino_a.get(f"/v1/audits/{audit}", token=REGULATOR).status_code == 200
    with Stream.open(casino_b.base, f"/v1/tables/{table}/stream", token=REGULATOR, after=0) as s:
        assert [m.id for m in s.events_until(1)] == [1]


def test_one_idempotency_key_used_by_two_casinos_is_two_requests(casino_a: As, casino_b: As):
    key = {"Idempotency-Key": "same-key"}
    made_a = casino_a.post("/v1/tables", {"preset": "three-card"}, headers=key)
    made_b = casino_b.post("/v1/tables", {"preset": "three-card"}, headers=key)
    assert made_a.status_code == made_b.status_code == 201
    assert made_a.json()["table_id"] != made_b.json()["table_id"]
    table = made_a.json()["table_id"]
    seat: dict[str, Any] = {"player_id": "ann", "buy_in": 10}
    key = {"Idempotency-Key": "seat-key"}
    assert casino_a.post(f"/v1/tables/{table}/players", seat, headers=key).status_code == 201
    # casino-b replaying casino-a's key on casino-a's table learns nothing: not found
    again = casino_b.post(f"/v1/tables/{table}/players", seat, headers=key)
    assert again.status_code == 404, again.text
    pinned = casino_b.post(f"/v1/tables/{table}/deal", headers={"If-Match": "1"})
    assert pinned.status_code == 404, pinned.text


def test_another_casinos_quarantined_table_is_not_found_as_a_missing_one(
    casino_a: As, casino_b: As, redis_client: Any
):
    """A table set aside as corrupt answers 409 to those who may know it, and to another
    casino's callers exactly what a table that does not exist answers."""
    table = casino_b.table()
    casino_b.seat(table, "p0")
    redis_client.hset(f"guts:{{{table}}}:meta", "due", "garbage")
    assert casino_b.get(f"/v1/tables/{table}").status_code == 409  # found corrupt: aside
    missing = "no-such-table-0"
    for method, path, body in [
        ("GET", "/v1/tables/{}", None),
        ("GET", "/v1/tables/{}/events", None),
        ("POST", "/v1/tables/{}/deal", None),
        ("POST", "/v1/tables/{}/players", {"player_id": "x", "buy_in": 5}),
    ]:
        for key in (TENANT_A, AUDITOR_A):
            if key == AUDITOR_A and method == "POST":
                continue
            theirs = casino_a.call(method, path.format(table), body, token=key)
            none = casino_a.call(method, path.format(missing), body, token=key)
            assert theirs.status_code == none.status_code == 404, (path, theirs.text)
            assert theirs.json()["title"] == none.json()["title"]
        owner = casino_b.call(method, path.format(table), body)
        assert owner.status_code == 409, (path, owner.text)
        assert casino_a.call(method, path.format(table), body, token=REGULATOR).status_code in (
            409,
            403,  # a regulator reads, it does not act
        )
