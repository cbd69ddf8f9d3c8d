"""A complete game of every preset over HTTP, with stacked decks and hand-computed outcomes."""

from __future__ import annotations

from typing import Any

from tests.apiclient import Api

TRIPS = "As Ah Ad"
PAIR_K = "Ks Kh 2c"
PAIR_Q = "Qs Qh 3c"


class Game:
    """A table with seated players and their tokens."""

    def __init__(self, api: Api, preset: str, players: int, **rules: Any) -> None:
        self.api = api
        self.table = api.table(preset, **rules)
        self.tokens = {
            seat["seat"]: seat["token"]
            for seat in (api.seat(self.table, f"player{i}") for i in range(players))
        }

    def hand(self, cards: dict[Any, str], decisions: dict[int, str]) -> dict[str, Any]:
        stacked = {str(k): v.split() for k, v in cards.items()}
        dealt = self.api.post(f"/v1/tables/{self.table}/deal", {"stacked_deck": stacked})
        assert dealt.status_code == 201, dealt.text
        for seat in dealt.json()["order"]:
            if seat not in decisions:
                continue
            table = self.api.get(f"/v1/tables/{self.table}").json()
            if seat in table["hand"].get("decisions", {}) or table["hand"]["phase"] != "declaring":
                continue  # decided for them (the dealer's automatic "in")
            response = self.api.post(
                f"/v1/tables/{self.table}/declare",
                {"decision": decisions[seat]},
                token=self.tokens[seat],
            )
            assert response.status_code == 200, response.text
        resolved = self.api.post(f"/v1/tables/{self.table}/resolve")
        assert resolved.status_code == 200, resolved.text
        return dict(resolved.json())

    def view(self) -> dict[str, Any]:
        return dict(self.api.get(f"/v1/tables/{self.table}").json())

    def stacks(self) -> dict[int, int]:
        return {s["seat"]: s["stack"] for s in self.view()["seats"]}


def test_three_card_game(api: Api):
    game = Game(api, "three-card", 3)
    first = game.hand({1: TRIPS, 2: PAIR_K}, {1: "in", 2: "in", 0: "out"})
    assert first["outcome"] == "showdown" and first["won"] == {"1": 3}
    assert first["matched"] == {"2": 3} and first["pot"] == 3 and not first["game_over"]
    second = game.hand({}, {2: "out", 0: "in", 1: "out"})
    assert second["outcome"] == "uncontested" and second["game_over"]
    assert game.stacks() == {0: 102, 1: 102, 2: 96}
    view = game.view()
    assert (view["pot"], view["game_running"], view["hand"]) == (0, False, None)


def test_two_card_game_dealer_auto_in(api: Api):
    game = Game(api, "two-card", 3)
    result = game.hand({}, {1: "out", 2: "out"})
    assert result["outcome"] == "uncontested" and result["won"] == {"0": 3}
    assert result["game_over"]
    assert game.stacks() == {0: 102, 1: 99, 2: 99}


def test_monte_carlo_game(api: Api):
    game = Game(api, "monte-carlo", 4)
    first = game.hand({1: TRIPS, 2: PAIR_K, 3: PAIR_Q}, {1: "in", 2: "in", 3: "in", 0: "out"})
    assert first["won"] == {"1": 4} and first["matched"] == {"2": 4, "3": 4}
    assert first["pot"] == 8
    second = game.hand({}, {2: "in", 3: "out", 0: "out", 1: "out"})
    assert second["won"] == {"2": 10} and second["game_over"]
    assert game.stacks() == {0: 98, 1: 102, 2: 105, 3: 95}


def test_survivor_game(api: Api):
    game = Game(api, "survivor", 4)
    first = game.hand({1: TRIPS, 2: PAIR_K, 3: PAIR_Q}, {1: "in", 2: "in", 3: "in", 0: "out"})
    assert first["matched"] == {"3": 4} and first["pot"] == 4
    second = game.hand({}, {2: "in", 3: "out", 0: "out", 1: "out"})
    assert second["won"] == {"2": 7} and second["game_over"]
    assert game.stacks() == {0: 98, 1: 102, 2: 105, 3: 95}


def test_kitty_game(api: Api):
    game = Game(api, "kitty", 3)
    first = game.hand(
        {"kitty": "As Ah Ad Ac Ks", 1: "Kh Kd Kc Qs Qh"}, {1: "in", 2: "out", 0: "out"}
    )
    assert first["outcome"] == "kitty_wins" and first["matched"] == {"1": 3}
    assert first["kitty_shown"] == ["As", "Ah", "Ad", "Ac", "Ks"]
    second = game.hand(
        {"kitty": "2c 3d 4h 5s 7c", 2: "As Ah Ad Ac Ks"}, {2: "in", 0: "out", 1: "out"}
    )
    assert second["won"] == {"2": 6} and second["game_over"]
    assert game.stacks() == {0: 99, 1: 96, 2: 105}


def test_reserve_over_http(api: Api):
    game = Game(api, "two-card", 4, ante=20, cap_mode="reserve", cap=100)
    # Everyone bought in 100; seat 1 wins 80 and three others pay 80.
    first = game.hand({1: "As Ad", 2: "Ks Kd", 3: "Qs Qd", 0: "Js Jd"}, {s: "in" for s in range(4)})
    assert (first["pot"], first["reserve"]) == (100, 140)
    view = game.view()
    assert sum(s["stack"] for s in view["seats"]) + view["pot"] + view["reserve"] == 400
