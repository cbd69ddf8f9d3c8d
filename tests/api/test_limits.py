"""Responsible gaming over HTTP: a loss limit refuses declaring in (never out) and keeps a
player out of a deal they cannot ante within it; an exclusion refuses a seat until its end."""

from __future__ import annotations

from typing import Any

import pytest

from service.projections.ledger import LedgerStore
from tests.apiclient import AUDITOR, AUDITOR_A, REGULATOR, Api, As


def _limits(api: Api, player: str, **body: Any) -> Any:
    return api.call(
        "PUT",
        f"/v1/players/{player}/limits",
        {"loss_limit_24h": None, "excluded_until": None, **body},
    )


def _refused(response: Any, status: int, words: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["Content-Type"].startswith("application/problem+json")
    problem = dict(response.json())
    assert words in problem["detail"], problem
    return problem


def test_limits_are_set_and_read_with_the_24h_net_loss(api: Api):
    response = _limits(api, "alice", loss_limit_24h=500, excluded_until="2027-01-01T00:00:00Z")
    assert response.status_code == 200, response.text
    expected = {
        "player_id": "alice",
        "loss_limit_24h": 500,
        "excluded_until": "2027-01-01T00:00:00.000Z",
        "reality_check_minutes": None,
        "session_limit_minutes": None,
        "timeout_until": None,
        "pending": {},
        "profile": "default",
        "net_loss_24h": 0,
        "cool_down_until": None,
    }
    assert response.json() == expected
    assert api.get("/v1/players/alice/limits", token=AUDITOR).json() == expected
    unknown = api.get("/v1/players/nobody/limits").json()
    assert unknown == {
        "player_id": "nobody",
        "loss_limit_24h": None,
        "excluded_until": None,
        "reality_check_minutes": None,
        "session_limit_minutes": None,
        "timeout_until": None,
        "pending": {},
        "profile": "default",
        "net_loss_24h": 0,
        "cool_down_until": None,
    }


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"loss_limit_24h": -1, "excluded_until": None}, "loss_limit_24h"),
        ({"loss_limit_24h": "10", "excluded_until": None}, "loss_limit_24h"),
        ({"loss_limit_24h": 1.5, "excluded_until": None}, "loss_limit_24h"),
        ({"loss_limit_24h": 10, "excluded_until": "tomorrow"}, "excluded_until"),
        ({"loss_limit_24h": 10, "excluded_until": "2027-01-01T00:00:00"}, "excluded_until"),
        ({"loss_limit_24h": 10}, "excluded_until"),
        ({"loss_limit_24h": 10, "excluded_until": None, "extra": 1}, "extra"),
    ],
)
def test_bad_limits_are_422_naming_the_field(api: Api, body: dict[str, Any], field: str):
    response = api.call("PUT", "/v1/players/alice/limits", body)
    assert response.status_code == 422, response.text
    assert field in response.json()["errors"]
    assert api.get("/v1/players/alice/limits").json()["loss_limit_24h"] is None  # nothing kept


def test_declaring_in_past_the_loss_limit_is_refused_and_out_is_allowed(api: Api):
    table = api.table("three-card", ante=1)
    tokens = [api.seat(table, p)["token"] for p in ("alice", "bob")]
    assert _limits(api, "alice", loss_limit_24h=2).status_code == 200
    assert api.post(f"/v1/tables/{table}/deal").status_code == 201  # the ante: a loss of 1
    refused = api.post(f"/v1/tables/{table}/declare", {"decision": "in"}, token=tokens[0])
    _refused(refused, 409, "exceed their loss limit of 2")
    assert "lost 1 in the last 24 hours and could owe up to 2" in refused.json()["detail"]
    out = api.post(f"/v1/tables/{table}/declare", {"decision": "out"}, token=tokens[0])
    assert out.status_code == 200, out.text
    # Bob has no limit: in is fine.
    assert api.post(f"/v1/tables/{table}/declare", {"decision": "in"}, token=tokens[1]).ok
    assert api.get("/v1/players/alice/limits").json()["net_loss_24h"] == 1


def test_a_player_who_cannot_ante_within_the_limit_waits_for_the_next_game(api: Api):
    table = api.table("three-card", ante=1)
    for player in ("alice", "bob", "carol"):
        api.seat(table, player)
    assert _limits(api, "alice", loss_limit_24h=0).status_code == 200
    dealt = api.post(f"/v1/tables/{table}/deal")
    assert dealt.status_code == 201
    assert sorted(dealt.json()["order"]) == [1, 2]
    events = api.get(f"/v1/tables/{table}/events").json()["events"]
    deal = next(e for e in events if e["type"] == "hand_dealt")
    assert deal["data"]["removed"] == {"0": "loss_limit"}
    seats = api.get(f"/v1/tables/{table}").json()["seats"]
    assert seats[0]["status"] == "waiting" and seats[0]["stack"] == 100


def test_the_limit_counts_losses_at_every_table_of_the_tenant(api: Api):
    first, second = api.table("three-card", ante=1), api.table("three-card", ante=1)
    a = [api.seat(first, p)["token"] for p in ("alice", "bob")]
    b = [api.seat(second, p)["token"] for p in ("alice", "bob")]
    assert _limits(api, "alice", loss_limit_24h=3).status_code == 200
    assert api.post(f"/v1/tables/{first}/deal").status_code == 201
    api.post(f"/v1/tables/{first}/declare", {"decision": "out"}, token=a[0])
    api.post(f"/v1/tables/{first}/declare", {"decision": "in"}, token=a[1])
    assert api.post(f"/v1/tables/{first}/resolve").status_code == 200  # alice lost her ante
    # (the dispatchers' follower projects the first table within milliseconds; no dispatcher
    # runs in these tests, so a page of that table catches it up instead)
    assert api.get("/v1/ledger", params={"table_id": first}).status_code == 200
    assert api.post(f"/v1/tables/{second}/deal").status_code == 201
    refused = api.post(f"/v1/tables/{second}/declare", {"decision": "in"}, token=b[0])
    _refused(refused, 409, "lost 2 in the last 24 hours")  # the second table caught up first
    assert api.get("/v1/players/alice/limits").json()["net_loss_24h"] == 2
    # Bob won 1 net at the first table and paid an ante at the second; he has no limit.
    assert api.get("/v1/players/bob/limits").json()["net_loss_24h"] == 0
    assert api.post(f"/v1/tables/{second}/declare", {"decision": "in"}, token=b[1]).ok


def test_another_tenants_limits_are_separate(casino_a: As, casino_b: As):
    assert _limits(casino_b, "alice", loss_limit_24h=0).status_code == 200
    assert casino_a.get("/v1/players/alice/limits").json()["loss_limit_24h"] is None
    table = casino_a.table("three-card", ante=1)
    for player in ("alice", "bob"):
        casino_a.seat(table, player)
    dealt = casino_a.post(f"/v1/tables/{table}/deal")
    assert dealt.status_code == 201 and sorted(dealt.json()["order"]) == [0, 1]  # alice is in


def test_an_excluded_player_cannot_be_seated_until_the_exclusion_ends(api: Api):
    table = api.table("three-card")
    assert _limits(api, "alice", excluded_until="2099-01-01T00:00:00Z").status_code == 200
    refused = api.post(f"/v1/tables/{table}/players", {"player_id": "alice", "buy_in": 10})
    _refused(refused, 409, "until 2099-01-01T00:00:00.000Z")
    assert api.get(f"/v1/tables/{table}").json()["seats"] == []
    # Shortening a running exclusion loosens it: it waits 24 h, and the seat is still refused.
    shortened = _limits(api, "alice", excluded_until=None)
    assert shortened.status_code == 200
    assert shortened.json()["excluded_until"] == "2099-01-01T00:00:00.000Z"
    assert shortened.json()["pending"]["excluded_until"]["value"] is None
    refused = api.post(f"/v1/tables/{table}/players", {"player_id": "alice", "buy_in": 10})
    _refused(refused, 409, "until 2099-01-01T00:00:00.000Z")


def test_only_an_operator_sets_limits_and_a_regulator_names_the_tenant(
    casino_a: As,
    tenants_url: str,
):
    assert _limits(As(tenants_url, AUDITOR_A), "alice", loss_limit_24h=1).status_code == 403
    assert _limits(casino_a, "alice", loss_limit_24h=1).status_code == 200
    regulator = As(tenants_url, REGULATOR)
    assert regulator.get("/v1/players/alice/limits").status_code == 422
    read = regulator.get("/v1/players/alice/limits", params={"tenant": "casino-a"})
    assert read.status_code == 200 and read.json()["loss_limit_24h"] == 1


def test_limits_stored_unreadable_hold_up_only_their_player_until_set_again(
    api: Api, redis_client: Any
):
    """A player's stored limits that do not decode (a bad write, a hand edit) refuse what
    needs them with a 409 naming the fix, not a 500; every other player plays on; an
    operator's PUT replaces them (it cannot read them to compare)."""
    table, other = api.table("three-card"), api.table("three-card")
    assert _limits(api, "alice", loss_limit_24h=500).status_code == 200
    api.seat(table, "alice")
    api.seat(table, "bob")
    key = LedgerStore(redis_client).key("default", "limits")
    redis_client.hset(key, "alice", b'{"loss_limit_24h": "lots"}')
    fix = "set them again (PUT /v1/players/alice/limits)"
    problem = _refused(api.get("/v1/players/alice/limits"), 409, fix)
    assert problem["title"] == "Record Failed Verification", problem
    _refused(api.post(f"/v1/tables/{table}/deal"), 409, fix)
    seat = {"player_id": "alice", "buy_in": 10}
    _refused(api.post(f"/v1/tables/{other}/players", seat), 409, fix)
    api.seat(other, "bob")
    api.seat(other, "carol")
    assert api.post(f"/v1/tables/{other}/deal").status_code == 201
    repaired = _limits(api, "alice", loss_limit_24h=400)
    assert repaired.status_code == 200, repaired.text
    assert repaired.json()["loss_limit_24h"] == 400 and repaired.json()["pending"] == {}
    assert api.post(f"/v1/tables/{table}/deal").status_code == 201


def test_a_protection_profile_stored_unreadable_is_named_and_set_again(api: Api, redis_client: Any):
    table = api.table("three-card")
    redis_client.hset(LedgerStore(redis_client).key("default", "settings"), "profile", "nonsense")
    fix = "set it again (PUT /v1/protection/profile)"
    _refused(api.get("/v1/protection/profile"), 409, fix)
    _refused(api.get("/v1/players/bob/limits"), 409, fix)
    _refused(api.post(f"/v1/tables/{table}/players", {"player_id": "bob", "buy_in": 10}), 409, fix)
    _refused(_limits(api, "bob", loss_limit_24h=5), 409, fix)  # (not the player's record)
    assert api.call("PUT", "/v1/protection/profile", {"profile": "ukgc"}).status_code == 200
    assert api.get("/v1/players/bob/limits").json()["profile"] == "ukgc"
    api.seat(table, "bob")
