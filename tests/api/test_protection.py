"""Player protection over HTTP: limits that loosen wait 24 h, profiles, a time-out that ends
a seated player's session, away and back, and bad input (422 naming the field, nothing kept)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.apiclient import Api


def _limits(api: Api, player: str, **body: Any) -> Any:
    return api.call(
        "PUT",
        f"/v1/players/{player}/limits",
        {"loss_limit_24h": None, "excluded_until": None, **body},
    )


def test_lowering_is_at_once_and_raising_waits_24_hours(api: Api):
    assert _limits(api, "alice", loss_limit_24h=100, session_limit_minutes=60).ok
    lowered = _limits(api, "alice", loss_limit_24h=50).json()
    assert lowered["loss_limit_24h"] == 50 and lowered["pending"] == {}
    raised = _limits(api, "alice", loss_limit_24h=500, session_limit_minutes=None).json()
    assert raised["loss_limit_24h"] == 50 and raised["session_limit_minutes"] == 60
    assert raised["pending"]["loss_limit_24h"]["value"] == 500
    assert raised["pending"]["session_limit_minutes"]["value"] is None
    assert "effective_at" in raised["pending"]["loss_limit_24h"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"reality_check_minutes": 0}, "reality_check_minutes"),
        ({"session_limit_minutes": -5}, "session_limit_minutes"),
        ({"timeout_until": "2020-01-01T00:00:00Z"}, "timeout_until"),
    ],
)
def test_bad_protection_input_is_422_naming_the_field_and_nothing_is_kept(
    api: Api, body: dict[str, Any], field: str
):
    response = _limits(api, "bob", loss_limit_24h=7, **body)
    assert response.status_code == 422, response.text
    assert response.headers["Content-Type"].startswith("application/problem+json")
    assert field in str(response.json())
    assert api.get("/v1/players/bob/limits").json()["loss_limit_24h"] is None


def test_a_break_out_of_the_profiles_bounds_is_422_with_the_bounds_in_words(api: Api):
    assert api.call("PUT", "/v1/protection/profile", {"profile": "ukgc"}).ok
    too_long = _limits(api, "bob", timeout_until="2099-01-01T00:00:00Z")
    assert too_long.status_code == 422, too_long.text
    detail = too_long.json()["detail"]
    assert "timeout_until must be 24 hours to 6 weeks away" in detail, detail
    assert "0:00:00" not in str(too_long.json())


def test_a_profile_sets_defaults_and_an_unknown_one_is_422(api: Api):
    unknown = api.call("PUT", "/v1/protection/profile", {"profile": "nowhere"})
    assert unknown.status_code == 422 and "profile" in str(unknown.json())
    assert api.call("PUT", "/v1/protection/profile", {"profile": "ukgc"}).ok
    assert api.get("/v1/players/carol/limits").json()["reality_check_minutes"] == 60
    table = api.table("three-card")
    api.seat(table, "carol")
    seats = api.get(f"/v1/tables/{table}").json()["seats"]
    assert seats[0]["session"]["reality_check_minutes"] == 60


def test_a_timeout_while_seated_forfeits_and_cashes_out_and_refuses_a_seat(api: Api):
    table = api.table("three-card", ante=1)
    for player in ("alice", "bob", "carol"):
        api.seat(table, player)
    assert api.post(f"/v1/tables/{table}/deal").status_code == 201
    set_ = _limits(api, "alice", timeout_until="2099-01-01T00:00:00Z")
    assert set_.status_code == 200, set_.text
    events = api.get(f"/v1/tables/{table}/events").json()["events"]
    kinds = [(e["type"], e["data"].get("by")) for e in events]
    assert ("session_ended", None) in kinds and ("decision_made", "forfeit") in kinds
    other = api.table("three-card")
    refused = api.post(f"/v1/tables/{other}/players", {"player_id": "alice", "buy_in": 10})
    assert refused.status_code == 409


def test_away_deals_a_player_out_until_back(api: Api):
    table = api.table("three-card", ante=1)
    tokens = [api.seat(table, p)["token"] for p in ("alice", "bob", "carol")]
    away = api.post(f"/v1/tables/{table}/players/0/away", token=tokens[0])
    assert away.status_code == 200 and away.json()["away"] is True
    assert api.post(f"/v1/tables/{table}/players/0/away").status_code == 409
    dealt = api.post(f"/v1/tables/{table}/deal")
    assert 0 not in dealt.json()["order"]
    assert api.post(f"/v1/tables/{table}/players/0/back").json()["away"] is False
    no_check = api.post(f"/v1/tables/{table}/players/1/reality-check", {"continue": True})
    assert no_check.status_code == 409
    bad = api.post(f"/v1/tables/{table}/players/1/reality-check", {"continue": "yes"})
    assert bad.status_code == 422
