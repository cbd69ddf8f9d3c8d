"""Players' client seeds over HTTP: chosen with the seat's token, mixed into the next deal,
shown in its history, and checked by the standard-library verifier and `guts verify`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from service.fairness import verify_history
from tests.apiclient import AUDITOR, OPERATOR, Api
from tests.openapi_helpers import SpecValidator
from tests.spec import load_spec

ROOT = Path(__file__).resolve().parents[2]
SPEC = SpecValidator(load_spec())
SEED_PATH = "/v1/tables/{table_id}/players/{seat}/client-seed"


def _put_seed(api: Api, table: str, seat: int, seed: Any, token: str | None, **kw: Any):
    path = f"/v1/tables/{table}/players/{seat}/client-seed"
    response = api.call("PUT", path, {"client_seed": seed}, token=token, **kw)
    SPEC("PUT", SEED_PATH, response)
    return response


def _table(api: Api, players: int = 3) -> tuple[str, list[str]]:
    table = api.table("three-card", decision_timeout_s=300)
    return table, [api.seat(table, f"p{i}")["token"] for i in range(players)]


def _finish(api: Api, table: str, tokens: list[str]) -> int:
    """Everyone in on the hand in play, then the showdown; returns the hand's number."""
    hand = api.get(f"/v1/tables/{table}").json()["hand"]
    for seat in hand["order"]:
        r = api.post(f"/v1/tables/{table}/declare", {"decision": "in"}, token=tokens[seat])
        assert r.status_code == 200, r.text
    assert api.post(f"/v1/tables/{table}/resolve").status_code == 200
    return int(hand["number"])


def _history(api: Api, table: str, hand: int, token: str = AUDITOR) -> dict[str, Any]:
    response = api.get(f"/v1/tables/{table}/hands/{hand}", token=token)
    assert response.status_code == 200, response.text
    return dict(response.json())


def test_players_seeds_go_into_the_deal_and_every_history_verifies(api: Api):
    table, tokens = _table(api)
    chosen = _put_seed(api, table, 2, "b|b", tokens[2])
    assert chosen.status_code == 200, chosen.text
    assert chosen.json() == {
        "seat": 2,
        "client_seed": "b|b",
        "hand": 1,
        "version": chosen.json()["version"],
    }
    assert _put_seed(api, table, 0, "first-choice", tokens[0]).status_code == 200
    assert _put_seed(api, table, 0, "alice-01", tokens[0]).status_code == 200  # changed
    assert api.get(f"/v1/tables/{table}").json()["client_seeds_chosen"] == [0, 2]
    dealt = api.post(f"/v1/tables/{table}/deal", {})
    assert dealt.status_code == 201, dealt.text
    hand = _finish(api, table, tokens)

    expected_context = f"guts-v2|{len(table)}:{table},1:1,0:,1:0,8:alice-01,1:2,3:b|b,"
    for token in (AUDITOR, OPERATOR, *tokens):
        history = _history(api, table, hand, token)
        SPEC(
            "GET",
            "/v1/tables/{table_id}/hands/{hand}",
            api.get(f"/v1/tables/{table}/hands/{hand}", token=token),
        )
        assert history["client_seeds"] == {"0": "alice-01", "2": "b|b"}
        assert history["deck_context"] == expected_context
        report = verify_history(history)
        assert report.ok and report.status == "verified", report.render()
        assert any(c.name == "client seeds" and c.passed for c in report.checks)

    # The player checks that their own seed went in; another seed is not found.
    mine = _history(api, table, hand, tokens[0])
    assert verify_history(mine, "alice-01").ok
    wrong = verify_history(mine, "first-choice")
    assert not wrong.ok and [c.name for c in wrong.failed] == ["your client seed"]


def test_a_seed_changed_after_the_deal_does_not_touch_that_hand(api: Api):
    table, tokens = _table(api, 2)
    _put_seed(api, table, 1, "before-the-deal", tokens[1])
    assert api.post(f"/v1/tables/{table}/deal", {}).status_code == 201
    later = _put_seed(api, table, 1, "after-the-deal", tokens[1])
    assert later.status_code == 200 and later.json()["hand"] == 2
    hand = _finish(api, table, tokens)
    history = _history(api, table, hand)
    assert history["client_seeds"] == {"1": "before-the-deal"}
    assert verify_history(history).ok
    # The later seed is the next hand's, and then it is spent.
    assert api.post(f"/v1/tables/{table}/deal", {}).status_code == 201
    second = _history(api, table, _finish(api, table, tokens))
    assert second["client_seeds"] == {"1": "after-the-deal"}
    assert verify_history(second).ok
    assert api.post(f"/v1/tables/{table}/deal", {}).status_code == 201
    third = _history(api, table, _finish(api, table, tokens))
    assert third["client_seeds"] == {} and third["deck_context"] == f"guts-v1|{table}|3|"
    assert verify_history(third).ok


def test_only_the_seats_own_player_may_choose_its_seed(api: Api):
    table, tokens = _table(api, 2)
    other = api.table("three-card")
    stranger = api.seat(other, "carol")["token"]
    for token in (tokens[1], OPERATOR, AUDITOR, stranger):
        refused = _put_seed(api, table, 0, "not-yours", token)
        assert refused.status_code == 403, refused.text
        assert refused.headers["Content-Type"] == "application/problem+json"
    assert _put_seed(api, table, 0, "x", None).status_code == 401
    events = api.get(f"/v1/tables/{table}/events").json()["events"]
    assert not [e for e in events if e["type"] == "client_seed_set"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"client_seed": ""}, "client_seed"),
        ({"client_seed": "has space"}, "client_seed"),
        ({"client_seed": "x" * 129}, "client_seed"),
        ({"client_seed": "caf\u00e9"}, "client_seed"),
        ({"client_seed": 12345}, "client_seed"),
        ({"client_seed": None}, "client_seed"),
        ({}, "client_seed"),
        ({"client_seed": "ok", "extra": 1}, "extra"),
    ],
)
def test_a_bad_seed_is_422_naming_the_field_and_writes_nothing(api: Api, body, field):
    table, tokens = _table(api, 2)
    version = api.get(f"/v1/tables/{table}").json()["version"]
    path = f"/v1/tables/{table}/players/0/client-seed"
    response = api.call("PUT", path, body, token=tokens[0])
    SPEC("PUT", SEED_PATH, response)
    assert response.status_code == 422, response.text
    problem = response.json()
    assert problem["title"] == "Validation Failed" and field in problem["errors"]
    assert api.get(f"/v1/tables/{table}").json()["version"] == version


def test_not_json_stale_if_match_and_idempotent_replays(api: Api):
    table, tokens = _table(api, 2)
    path = f"/v1/tables/{table}/players/0/client-seed"
    auth = {"Authorization": f"Bearer {tokens[0]}"}
    text = api.call(
        "PUT", path, token=None, headers=auth | {"Content-Type": "text/plain"}, data="x"
    )
    assert text.status_code == 415
    broken = api.call(
        "PUT", path, token=None, headers=auth | {"Content-Type": "application/json"}, data="{"
    )
    assert broken.status_code == 400
    version = api.get(f"/v1/tables/{table}").json()["version"]
    stale = _put_seed(api, table, 0, "abc", tokens[0], headers={"If-Match": f'"{version - 1}"'})
    assert stale.status_code == 412
    current = _put_seed(api, table, 0, "abc", tokens[0], headers={"If-Match": f'"{version}"'})
    assert current.status_code == 200

    key = {"Idempotency-Key": "seed-once"}
    first = _put_seed(api, table, 1, "once", tokens[1], headers=key)
    again = _put_seed(api, table, 1, "once", tokens[1], headers=key)
    assert first.status_code == again.status_code == 200
    assert again.json() == first.json() and again.headers["Idempotent-Replayed"] == "true"
    other_body = _put_seed(api, table, 1, "twice", tokens[1], headers=key)
    assert other_body.status_code == 422
    events = api.get(f"/v1/tables/{table}/events").json()["events"]
    assert [e["data"]["seat"] for e in events if e["type"] == "client_seed_set"] == [0, 1]


def test_other_viewers_see_a_seed_only_once_its_deal_is_made(api: Api):
    table, tokens = _table(api, 3)
    _put_seed(api, table, 0, "private-until-dealt", tokens[0])

    def seen_by(token: str) -> list[dict[str, Any]]:
        response = api.get(f"/v1/tables/{table}/events", token=token)
        SPEC("GET", "/v1/tables/{table_id}/events", response)
        return [e["data"] for e in response.json()["events"] if e["type"] == "client_seed_set"]

    assert seen_by(tokens[0])[0]["client_seed"] == "private-until-dealt"
    for token in (tokens[1], OPERATOR, AUDITOR):
        assert "private-until-dealt" not in json.dumps(seen_by(token))
        view = api.get(f"/v1/tables/{table}", token=token)
        SPEC("GET", "/v1/tables/{table_id}", view)
        assert view.json()["client_seeds_chosen"] == [0]
        assert "private-until-dealt" not in view.text
    assert api.post(f"/v1/tables/{table}/deal", {}).status_code == 201
    for token in (tokens[1], OPERATOR, AUDITOR):
        assert seen_by(token)[0]["client_seed"] == "private-until-dealt"


def test_the_operator_seed_is_refused_with_players_seeds(api: Api):
    table, tokens = _table(api, 2)
    _put_seed(api, table, 1, "mine", tokens[1])
    refused = api.post(f"/v1/tables/{table}/deal", {"client_seed": "ground-by-the-house"})
    assert refused.status_code == 409, refused.text
    assert "seat(s) 1 chose client seeds" in refused.json()["detail"]
    assert api.post(f"/v1/tables/{table}/deal", {}).status_code == 201


def test_guts_verify_checks_a_v2_hand_and_the_players_seed(api: Api, tmp_path: Path):
    table, tokens = _table(api, 2)
    _put_seed(api, table, 0, "cli-seed", tokens[0])
    assert api.post(f"/v1/tables/{table}/deal", {}).status_code == 201
    hand = _finish(api, table, tokens)
    saved = tmp_path / "hand.json"
    saved.write_text(json.dumps(_history(api, table, hand, tokens[0])))
    guts = [str(Path(sys.executable).with_name("guts")), "verify", str(saved)]
    ok = subprocess.run([*guts, "--client-seed", "cli-seed"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "your client seed" in ok.stdout and "VERIFIED" in ok.stdout
    missing = subprocess.run([*guts, "--client-seed", "other"], capture_output=True, text=True)
    assert missing.returncode == 1 and "FAIL  your client seed" in missing.stdout

    tampered = json.loads(saved.read_text())
    tampered["client_seeds"]["0"] = "swapped"
    saved.write_text(json.dumps(tampered))
    failed = subprocess.run(guts, capture_output=True, text=True)
    assert failed.returncode == 1 and "FAIL  deck context" in failed.stdout
