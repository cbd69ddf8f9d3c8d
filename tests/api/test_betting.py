"""Draw guts with a betting round over HTTP: a whole hand, the refusals, idempotency and
If-Match, who may bet, what each viewer sees."""

from __future__ import annotations

from typing import Any

from tests.apiclient import AUDITOR, Api

# The button is seat 0, so the order (drawing and betting) is 1, 2, 0. Seat 1 draws two aces
# to its 9; seat 2 holds kings; seat 0 a low hand.
STACKED = {
    "1": ["2c", "7d", "9h"],
    "2": ["Ks", "Kh", "3d"],
    "0": ["4c", "6d", "8s"],
    "next": ["As", "Ad"],
}


class Table:
    def __init__(self, api: Api, **rules: Any) -> None:
        self.api = api
        rules = {"draw": 2, "betting_round": True, "decision_timeout_s": 600, **rules}
        self.id = api.table("three-card", **rules)
        self.tokens = {
            s["seat"]: s["token"] for s in (api.seat(self.id, f"p{i}") for i in range(3))
        }

    def post(self, path: str, body: Any = None, seat: int | None = None, **kw: Any) -> Any:
        if seat is not None:
            kw["token"] = self.tokens[seat]
        return self.api.post(f"/v1/tables/{self.id}/{path}", body, **kw)

    def ok(self, path: str, body: Any = None, seat: int | None = None) -> dict[str, Any]:
        response = self.post(path, body, seat)
        assert response.status_code in (200, 201), response.text
        return dict(response.json())

    def bet(self, seat: int, action: str, **kw: Any) -> Any:
        return self.post("bet", {"action": action}, seat, **kw)

    def view(self, token: str | None = None) -> dict[str, Any]:
        kw = {"token": token} if token else {}
        return dict(self.api.get(f"/v1/tables/{self.id}", **kw).json())

    def to_betting(self) -> None:
        self.ok("deal", {"stacked_deck": STACKED})
        for seat in (1, 2, 0):
            self.ok("declare", {"decision": "in"}, seat)
        self.ok("draw", {"discard": ["2c", "7d"]}, 1)
        self.ok("draw", {"discard": []}, 2)
        self.ok("draw", {"discard": []}, 0)


def _refused(response: Any, status: int, words: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["Content-Type"].startswith("application/problem+json")
    assert words in response.json()["detail"], response.json()


def test_a_betting_hand_settles_with_the_bets_in_the_pot(api: Api):
    t = Table(api)
    t.to_betting()
    betting = t.view()["hand"]["betting"]
    assert t.view()["hand"]["phase"] == "betting"
    assert (betting["turn"], betting["bet_to"], betting["to_call"]) == (1, 0, 0)
    made = t.bet(1, "bet").json()
    assert (made["amount"], made["bet_to"], made["pot"], made["betting_turn"]) == (1, 1, 4, 2)
    assert t.bet(2, "raise").json()["amount"] == 2
    assert t.bet(0, "fold").json()["amount"] == 0
    betting = t.view(t.tokens[0])["hand"]["betting"]
    assert (betting["turn"], betting["to_call"], betting["raises"]) == (1, 1, 1)
    assert betting["bets"] == {"1": 1, "2": 2, "0": 0} and betting["folded"] == [0]
    assert betting["pot_declared"] == 3
    last = t.bet(1, "call").json()
    assert (last["phase"], last["betting_turn"], last["pot"]) == ("showdown", None, 7)
    outcome = t.ok("resolve")
    assert outcome["winners"] == [1] and outcome["won"] == {"1": 7}
    assert outcome["matched"] == {"2": 3, "0": 3}  # the pot as declared (match_basis)
    assert outcome["folded"] == [0] and "0" not in outcome["shown"]
    stacks = {s["seat"]: s["stack"] for s in t.view()["seats"]}
    assert stacks == {1: 100 - 1 - 2 + 7, 2: 100 - 1 - 2 - 3, 0: 100 - 1 - 3}


def test_betting_refusals_say_why(api: Api):
    t = Table(api, max_raises=1)
    _refused(t.bet(1, "check"), 409, "no hand is in play")
    t.ok("deal", {"stacked_deck": STACKED})
    _refused(t.bet(1, "check"), 409, "is not betting (it is declaring)")
    t.ok("void", {"reason": "test"})
    t.to_betting()
    _refused(t.bet(2, "check"), 409, "seat 1's turn")
    _refused(t.bet(1, "call"), 409, "no bet to call")
    _refused(t.bet(1, "raise"), 409, "no bet to raise")
    t.bet(1, "bet")
    _refused(t.bet(2, "check"), 409, "bet of 1 to call")
    t.bet(2, "raise")
    _refused(t.bet(0, "raise"), 409, "raise cap is reached")
    _refused(t.post("bet", {"action": "all-in"}, 0), 422, "")
    _refused(t.post("bet", {}, 0), 422, "")
    _refused(t.post("bet", {"action": "call"}, token="not-a-token"), 401, "")
    operator = t.post("bet", {"action": "call"})
    _refused(operator, 403, "player")
    _refused(t.post("bet", {"action": "call"}, token=AUDITOR), 403, "")
    assert t.view()["hand"]["betting"]["turn"] == 0  # nothing was written by a refusal


def test_betting_needs_a_draw_at_table_creation(api: Api):
    response = api.post("/v1/tables", {"rules": {"betting_round": True}})
    _refused(response, 422, "betting_round needs draw")
    assert list(response.json()["errors"]) == ["betting_round"]


def test_a_bet_is_idempotent_and_honours_if_match(api: Api):
    t = Table(api)
    t.to_betting()
    version = t.view()["version"]
    stale = t.bet(1, "bet", headers={"If-Match": f'"{version - 1}"'})
    assert stale.status_code == 412
    key = {"Idempotency-Key": "bet-once"}
    first = t.bet(1, "bet", headers=key)
    again = t.bet(1, "bet", headers=key)
    assert first.status_code == again.status_code == 200
    assert again.json() == first.json() and again.headers.get("Idempotent-Replayed") == "true"
    assert t.view()["pot"] == 4  # one bet, not two
    other = t.post("bet", {"action": "check"}, 1, headers=key)
    assert other.status_code == 422


def test_bets_are_public_and_cards_stay_redacted(api: Api):
    t = Table(api)
    t.to_betting()
    t.bet(1, "bet")
    t.bet(2, "call")
    t.bet(0, "fold")
    t.ok("resolve")
    for seat, token in t.tokens.items():
        view = t.view(token)
        assert view["hand"] is None
        events = api.get(f"/v1/tables/{t.id}/events", token=token).json()["events"]
        bets = [e["data"] for e in events if e["type"] == "bet_made"]
        assert [(b["seat"], b["action"], b["amount"]) for b in bets] == [
            (1, "bet", 1),
            (2, "call", 1),
            (0, "fold", 0),
        ]
        dealt = next(e["data"] for e in events if e["type"] == "hand_dealt")
        assert list(dealt["cards"]) == [str(seat)]  # only their own cards
        history = api.get(f"/v1/tables/{t.id}/hands/1", token=token).json()
        assert [b["action"] for b in history["bets"]] == ["bet", "call", "fold"]
        assert history["pot_before"] == 0 and history["pot_in_play"] == 5
        shown = history["outcome"]["shown"]
        assert set(shown) == {"1", "2"}  # the folder's hand is mucked, for everyone
        # Shown hands are named by the rules; a mucked hand is not named either.
        assert set(history["hand_names"]) == {"1", "2"}
        for named in history["hand_names"].values():
            assert named["high"]["category"] in ("high_card", "pair", "flush", "straight")
            assert named["high"]["text"]
        assert set(history["cards"]) == {str(seat)}
        draws = history["draws"]
        for other in {"0", "1", "2"} - {str(seat)}:
            assert isinstance(draws[other]["drawn"], int)  # counts, never cards
