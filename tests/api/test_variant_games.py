"""A complete game of each variant over HTTP, with stacked decks and hand-computed outcomes."""

from __future__ import annotations

from typing import Any

from tests.apiclient import AUDITOR, Api


class Table:
    def __init__(self, api: Api, players: int = 3, **rules: Any) -> None:
        self.api = api
        self.id = api.table("three-card", **rules)
        self.tokens = {
            s["seat"]: s["token"] for s in (api.seat(self.id, f"p{i}") for i in range(players))
        }

    def post(self, path: str, body: Any = None, seat: int | None = None) -> dict[str, Any]:
        token = self.tokens[seat] if seat is not None else None
        kwargs = {"token": token} if token else {}
        response = self.api.post(f"/v1/tables/{self.id}/{path}", body, **kwargs)
        assert response.status_code in (200, 201), response.text
        return dict(response.json())

    def view(self, seat: int | None = None) -> dict[str, Any]:
        kwargs = {"token": self.tokens[seat]} if seat is not None else {}
        return dict(self.api.get(f"/v1/tables/{self.id}", **kwargs).json())

    def deal(self, stacked: dict[str, str]) -> dict[str, Any]:
        return self.post("deal", {"stacked_deck": {k: v.split() for k, v in stacked.items()}})

    def stacks(self) -> dict[int, int]:
        return {s["seat"]: s["stack"] for s in self.view()["seats"]}


def test_hi_lo_game(api: Api):
    t = Table(api, ante=2, hi_lo=True)  # each ante: 1 to the high pot, 1 to the low pot
    t.deal({"1": "As Ah Ad", "2": "2d 3c 5h", "0": "Ks Kh 2c"})
    for seat, decision in ((1, "high"), (2, "low"), (0, "both")):
        t.post("declare", {"decision": decision}, seat)
    first = t.post("resolve")
    assert first["won"] == {"1": 3} and first["matched"] == {"0": 3}
    assert first["low"]["won"] == {"2": 3} and first["low"]["matched"] == {"0": 3}
    assert (t.view()["pot"], t.view()["low_pot"]) == (3, 3)
    t.deal({})
    for seat, decision in ((2, "high"), (0, "low"), (1, "out")):
        t.post("declare", {"decision": decision}, seat)
    second = t.post("resolve")
    assert second["game_over"]
    assert t.stacks() == {0: 100 - 2 - 6 + 3, 1: 100 - 2 + 3, 2: 100 - 2 + 3 + 3}


def test_draw_game(api: Api):
    t = Table(api, draw=2)
    t.deal({"1": "2c 7d 9h", "2": "Ks Kh 3d", "next": "As Ad"})
    for seat, decision in ((1, "in"), (2, "in"), (0, "out")):
        t.post("declare", {"decision": decision}, seat)
    assert t.view()["hand"]["phase"] == "drawing"
    drew = t.post("draw", {"discard": ["2c", "7d"]}, 1)
    assert drew["drawn"] == ["As", "Ad"]
    # Seat 2 sees that seat 1 drew two cards, not which.
    events = api.get(f"/v1/tables/{t.id}/events", token=t.tokens[2]).json()["events"]
    drawn = next(e["data"] for e in events if e["type"] == "cards_drawn")
    assert drawn["drawn"] == 2 and "deck" not in drawn
    t.post("draw", {"discard": []}, 2)
    result = t.post("resolve")
    assert result["won"] == {"1": 3} and result["matched"] == {"2": 3}
    history = api.get(f"/v1/tables/{t.id}/hands/1", token=AUDITOR).json()
    assert history["draws"]["1"]["drawn"] == ["As", "Ad"]


def test_community_card_game(api: Api):
    t = Table(api, community_cards=1)
    t.deal({"1": "As Ah 2c", "2": "Ks Kh 3d", "next": "Kd"})
    for seat, decision in ((1, "in"), (2, "in"), (0, "out")):
        t.post("declare", {"decision": decision}, seat)
    assert t.view(0)["hand"]["community"] == ["Kd"]
    result = t.post("resolve")
    assert result["won"] == {"2": 3} and result["matched"] == {"1": 3}


def test_pass_the_trash_game(api: Api):
    t = Table(api, pass_the_trash=True)
    t.deal({"1": "As Kd 2c", "2": "Qs Jd 3c", "0": "Ts 9d 4c"})
    assert t.view()["hand"]["phase"] == "passing"
    t.post("pass", {"card": "2c"}, 1)
    assert "2c" not in t.view(2)["hand"]["cards"]
    assert '"2c"' not in api.get(f"/v1/tables/{t.id}/events", token=t.tokens[2]).text
    t.post("pass", {"card": "3c"}, 2)
    t.post("pass", {"card": "4c"}, 0)
    assert sorted(t.view(2)["hand"]["cards"]) == sorted(["Qs", "Jd", "2c"])
    for seat, decision in ((1, "in"), (2, "in"), (0, "out")):
        t.post("declare", {"decision": decision}, seat)
    result = t.post("resolve")
    assert result["winners"] == [1]


def test_no_peek_game(api: Api):
    t = Table(api, no_peek=True)
    t.deal({"1": "As Ah Ad", "2": "Ks Kh 2c"})
    assert "cards" not in t.view(1)["hand"]
    events = api.get(f"/v1/tables/{t.id}/events", token=t.tokens[1]).text
    assert '"As"' not in events
    for seat, decision in ((1, "in"), (2, "in"), (0, "out")):
        t.post("declare", {"decision": decision}, seat)
    assert t.view(1)["hand"]["cards"] == ["As", "Ah", "Ad"]
    assert t.post("resolve")["won"] == {"1": 3}


def test_wild_card_game(api: Api):
    t = Table(api, wild="deuces")
    t.deal({"1": "2c 2d As", "2": "Ks Kh Kd"})
    for seat, decision in ((1, "in"), (2, "in"), (0, "out")):
        t.post("declare", {"decision": decision}, seat)
    assert t.post("resolve")["winners"] == [1]


def test_a_variant_combination_that_cannot_work_is_refused(api: Api):
    refused = api.post(
        "/v1/tables", {"preset": "three-card", "rules": {"no_peek": True, "pass_the_trash": True}}
    )
    assert refused.status_code == 422
    assert "no_peek" in refused.json()["errors"]
