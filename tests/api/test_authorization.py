"""Every endpoint x every kind of caller -> the expected status."""

from __future__ import annotations

from typing import Any

import pytest

from tests.apiclient import AUDITOR, OPERATOR, Api

CALLERS = ["none", "bad", "operator", "auditor", "seat_player", "other_seat", "other_table"]


class Scene:
    """A table with players at seats 0 and 1, and another table with its own player."""

    def __init__(self, api: Api, stage: str) -> None:
        self.api = api
        self.table = api.table("three-card", decision_timeout_s=60)
        self.p0 = api.seat(self.table, "alice")["token"]
        self.p1 = api.seat(self.table, "bob")["token"]
        other = api.table("three-card")
        self.stranger = api.seat(other, "carol")["token"]
        if stage in ("dealt", "showdown", "finished"):
            assert api.post(f"/v1/tables/{self.table}/deal").status_code == 201
        if stage in ("showdown", "finished"):
            for token in (self.p1, self.p0):
                r = api.post(f"/v1/tables/{self.table}/declare", {"decision": "in"}, token=token)
                assert r.status_code == 200, r.text
        if stage == "finished":
            assert api.post(f"/v1/tables/{self.table}/resolve").status_code == 200

    def token(self, caller: str) -> str | None:
        return {
            "none": None,
            "bad": "not-a-valid-credential",
            "operator": OPERATOR,
            "auditor": AUDITOR,
            "seat_player": self.p0,
            "other_seat": self.p1,
            "other_table": self.stranger,
        }[caller]


# endpoint -> (stage, method, path, body, {caller: status}); "none" and "bad" are always 401.
T = "{t}"
MATRIX: dict[str, tuple[str, str, str, Any, dict[str, int]]] = {
    "create_table": (
        "new",
        "POST",
        "/v1/tables",
        {"preset": "three-card"},
        {
            "operator": 201,
            "auditor": 403,
            "seat_player": 403,
            "other_seat": 403,
            "other_table": 403,
        },
    ),
    "get_table": (
        "new",
        "GET",
        f"/v1/tables/{T}",
        None,
        {
            "operator": 200,
            "auditor": 200,
            "seat_player": 200,
            "other_seat": 200,
            "other_table": 403,
        },
    ),
    "seat_player": (
        "new",
        "POST",
        f"/v1/tables/{T}/players",
        {"player_id": "dan", "buy_in": 5},
        {
            "operator": 201,
            "auditor": 403,
            "seat_player": 403,
            "other_seat": 403,
            "other_table": 403,
        },
    ),
    "top_up": (
        "new",
        "POST",
        f"/v1/tables/{T}/players/0/chips",
        {"amount": 5},
        {
            "operator": 200,
            "auditor": 403,
            "seat_player": 403,
            "other_seat": 403,
            "other_table": 403,
        },
    ),
    "sit_out": (
        "new",
        "POST",
        f"/v1/tables/{T}/players/0/sit-out",
        None,
        {
            "operator": 200,
            "auditor": 403,
            "seat_player": 200,
            "other_seat": 403,
            "other_table": 403,
        },
    ),
    "leave": (
        "new",
        "DELETE",
        f"/v1/tables/{T}/players/0",
        None,
        {
            "operator": 200,
            "auditor": 403,
            "seat_player": 200,
            "other_seat": 403,
            "other_table": 403,
        },
    ),
    "deal": (
        "new",
        "POST",
        f"/v1/tables/{T}/deal",
        None,
        {
            "operator": 201,
            "auditor": 403,
            "seat_player": 403,
            "other_seat": 403,
            "other_table": 403,
        },
    ),
    "declare": (
        "dealt",
        "POST",
        f"/v1/tables/{T}/declare",
        {"decision": "in"},
        {
            "operator": 403,
            "auditor": 403,
            "seat_player": 200,
            "other_seat": 200,
            "other_table": 403,
        },
    ),
    "client_seed": (
        "dealt",
        "PUT",
        f"/v1/tables/{T}/players/0/client-seed",
        {"client_seed": "mine"},
        {
            "operator": 403,
            "auditor": 403,
            "seat_player": 200,
            "other_seat": 403,
            "other_table": 403,
        },
    ),
    "close": (
        "dealt",
        "POST",
        f"/v1/tables/{T}/close",
        None,
        {
            "operator": 409,
            "auditor": 403,
            "seat_player": 403,
            "other_seat": 403,
            "other_table": 403,
        },
    ),
    "resolve": (
        "showdown",
        "POST",
        f"/v1/tables/{T}/resolve",
        None,
        {
            "operator": 200,
            "auditor": 403,
            "seat_player": 403,
            "other_seat": 403,
            "other_table": 403,
        },
    ),
    "void": (
        "dealt",
        "POST",
        f"/v1/tables/{T}/void",
        None,
        {
            "operator": 200,
            "auditor": 403,
            "seat_player": 403,
            "other_seat": 403,
            "other_table": 403,
        },
    ),
    "events": (
        "dealt",
        "GET",
        f"/v1/tables/{T}/events",
        None,
        {
            "operator": 200,
            "auditor": 200,
            "seat_player": 200,
            "other_seat": 200,
            "other_table": 403,
        },
    ),
    "hand_history": (
        "finished",
        "GET",
        f"/v1/tables/{T}/hands/1",
        None,
        {
            "operator": 200,
            "auditor": 200,
            "seat_player": 200,
            "other_seat": 200,
            "other_table": 403,
        },
    ),
    "ledger": (
        "finished",
        "GET",
        f"/v1/ledger?table_id={T}",
        None,
        {
            "operator": 200,
            "auditor": 200,
            "seat_player": 403,
            "other_seat": 403,
            "other_table": 403,
        },
    ),
    "get_limits": (
        "new",
        "GET",
        "/v1/players/alice/limits",
        None,
        {
            "operator": 200,
            "auditor": 200,
            "seat_player": 403,
            "other_seat": 403,
            "other_table": 403,
        },
    ),
    "set_limits": (
        "new",
        "PUT",
        "/v1/players/alice/limits",
        {"loss_limit_24h": 10, "excluded_until": None},
        {
            "operator": 200,
            "auditor": 403,
            "seat_player": 403,
            "other_seat": 403,
            "other_table": 403,
        },
    ),
    "healthz": (
        "new",
        "GET",
        "/healthz",
        None,
        {
            "operator": 200,
            "auditor": 200,
            "seat_player": 200,
            "other_seat": 200,
            "other_table": 200,
        },
    ),
}


def _cases() -> list[tuple[str, str, int]]:
    cases = []
    for name, (_, _, path, _, expected) in MATRIX.items():
        for caller in CALLERS:
            if caller in ("none", "bad"):
                status = 200 if path == "/healthz" else 401
            else:
                status = expected[caller]
            cases.append((name, caller, status))
    return cases


@pytest.mark.parametrize(("endpoint", "caller", "status"), _cases())
def test_authorization_matrix(api: Api, endpoint: str, caller: str, status: int):
    stage, method, path, body, _ = MATRIX[endpoint]
    scene = Scene(api, stage)
    response = api.call(method, path.replace(T, scene.table), body, token=scene.token(caller))
    assert response.status_code == status, response.text
    if status >= 400:
        assert response.headers["Content-Type"].startswith("application/problem+json")
        assert response.json()["status"] == status


def test_a_player_token_dies_when_the_player_leaves(api: Api):
    scene = Scene(api, "new")
    assert api.delete(f"/v1/tables/{scene.table}/players/0", token=scene.p0).status_code == 200
    again = api.post(f"/v1/tables/{scene.table}/players/0/sit-out", token=scene.p0)
    assert again.status_code == 403
    for read in ("", "/events", "/hands/1"):  # nor does it read the table any more
        assert api.get(f"/v1/tables/{scene.table}{read}", token=scene.p0).status_code == 403
    # A new player in the same seat gets a different token; the old one stays dead.
    new = api.seat(scene.table, "erin", seat=0)
    assert new["token"] != scene.p0
    assert (
        api.post(f"/v1/tables/{scene.table}/players/0/sit-out", token=scene.p0).status_code == 403
    )


def test_a_forged_token_is_refused(api: Api):
    scene = Scene(api, "new")
    claim, mac = scene.p0.split(".")
    forged = f"{claim}.{mac[:-2]}AA"
    assert api.get(f"/v1/tables/{scene.table}", token=forged).status_code == 401
