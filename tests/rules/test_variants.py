"""The seeds' variants: hi-lo, draw, community card, pass the trash, no-peek, wild cards."""

from __future__ import annotations

from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.rules import commands
from service.rules.cards import FULL_DECK
from service.rules.errors import (
    InvalidCard,
    InvalidCommand,
    InvalidRules,
    NotYourTurn,
    RuleViolation,
)
from service.rules.ranking import make_evaluator
from service.rules.ruleset import resolve_ruleset
from service.rules.settlement import scorer
from service.rules.views import Viewer, event_view, table_view

from .harness import Table

TRIPS = "As Ah Ad"
PAIR_K = "Ks Kh 2c"
LOWEST = "2d 3c 5h"  # 5-3-2: the lowest three-card hand (2-3-4 would be a straight)


def _cards(text: str) -> list[str]:
    return text.split()


# --- hi-lo ------------------------------------------------------------------------------------


def test_hi_lo_antes_split_between_the_pots_with_the_odd_chip_high():
    t = Table(players=3, hi_lo=True, ante=3)
    t.deal()
    assert (t.state.pot, t.state.low_pot) == (6, 3)


def test_hi_lo_each_pot_settles_among_its_own_contenders():
    t = Table(players=3, hi_lo=True, ante=2)  # pots 3 and 3
    t.deal({"1": _cards(TRIPS), "2": _cards(LOWEST), "0": _cards(PAIR_K)})
    t.declare({1: "high", 2: "low", 0: "both"})
    result = t.resolve()
    assert result.winners == (1,) and result.won == {1: 3} and result.matched == {0: 3}
    assert result.low.winners == (2,) and result.low.won == {2: 3}
    assert result.low.matched == {0: 3}
    assert (t.state.pot, t.state.low_pot) == (3, 3)
    assert t.stacks()[0] == 100 - 2 - 6
    assert not result.game_over


def test_hi_lo_game_ends_when_both_pots_are_empty():
    t = Table(players=3, hi_lo=True, ante=2)
    t.deal()
    t.declare({1: "high", 2: "low", 0: "out"})
    result = t.resolve()
    assert result.outcome == "uncontested" and result.low.outcome == "uncontested"
    assert result.game_over and not t.state.game_running
    assert (t.state.pot, t.state.low_pot) == (0, 0)


def test_hi_lo_game_goes_on_while_one_pot_is_left():
    t = Table(players=3, hi_lo=True, ante=2)
    t.deal()
    t.declare({1: "high", 2: "out", 0: "out"})
    result = t.resolve()
    assert result.low.outcome == "nobody_in" and not result.game_over
    assert (t.state.pot, t.state.low_pot) == (0, 3)


def test_hi_lo_decisions_are_checked():
    t = Table(players=3, hi_lo=True, ante=2)
    t.deal()
    with pytest.raises(InvalidCommand, match="high, low, both"):
        commands.declare(t.state, 1, "in", t.now)


def test_low_is_the_lowest_hand_under_the_same_ranking():
    rules = resolve_ruleset("three-card")
    low = scorer(rules, (), low=True)
    assert low(_cards(LOWEST)) > low(_cards("2d 3c 6h")) > low(_cards(PAIR_K))
    assert low(_cards("2d 3c 6h")) > low(_cards("2d 3d 4d"))  # a straight flush is high


# --- draw -------------------------------------------------------------------------------------


def test_draw_in_players_draw_in_turn_from_the_buttons_left():
    t = Table(players=3, draw=2)
    t.deal({"1": _cards("2c 7d 9h"), "2": _cards("Ks Kh 3d"), "next": _cards("As Ad")})
    t.declare({1: "in", 2: "in", 0: "out"})
    assert t.state.hand.phase == "drawing" and t.state.hand.drawers == [1, 2]
    with pytest.raises(NotYourTurn):
        commands.draw(t.state, 2, [], t.now)
    with pytest.raises(InvalidCommand):
        commands.draw(t.state, 1, ["2c", "7d", "9h"], t.now)
    with pytest.raises(InvalidCard):
        commands.draw(t.state, 1, ["Ks"], t.now)
    (drawn,) = t.apply(commands.draw(t.state, 1, ["2c", "7d"], t.now))
    assert drawn.drawn == ("As", "Ad")
    assert sorted(t.state.hand.cards[1]) == sorted(["9h", "As", "Ad"])
    t.apply(commands.draw(t.state, 2, [], t.now))  # standing pat
    assert t.state.hand.phase == "showdown"
    result = t.resolve()
    assert result.winners == (1,)  # aces beat kings after the draw
    assert result.matched == {2: 3}  # the pot as it was when they declared


def test_draw_deadline_makes_a_silent_player_stand_pat():
    t = Table(players=2, draw=1)
    t.deal()
    t.declare({1: "in", 0: "in"})
    before = t.state.hand.cards[1]
    t.tick(31)
    (stood,) = t.apply(commands.close_at_deadline(t.state, t.now))
    assert stood.by == "platform" and stood.discarded == () and t.state.hand.cards[1] == before
    assert t.state.hand.drawing_turn() == 0


def test_no_draw_for_a_lone_in_player():
    t = Table(players=3, draw=2)
    t.deal()
    t.declare({1: "in", 2: "out", 0: "out"})
    assert t.state.hand.phase == "showdown"


def test_draw_reshuffles_the_discards_when_the_deck_runs_short():
    t = Table(players=16, draw=3)  # 48 cards dealt, 4 left
    t.deal()
    t.declare({s: "in" for s in range(16)})
    drawers = list(t.state.hand.drawers)
    reshuffles = 0
    for seat in drawers[:3]:
        discard = list(t.state.hand.cards[seat])
        (drawn,) = t.apply(commands.draw(t.state, seat, discard, t.now))
        reshuffles += drawn.reshuffled
        held = [c for s in t.state.hand.order for c in t.state.hand.cards[s]]
        everything = held + list(t.state.deck) + list(t.state.hand.discards)
        assert sorted(everything) == sorted(FULL_DECK)  # no card lost or duplicated
    assert reshuffles >= 1


# --- community card ---------------------------------------------------------------------------


def test_community_card_is_dealt_face_up_after_the_reveal_and_plays():
    t = Table(players=3, community_cards=1)
    t.deal({"1": _cards("As Ah 2c"), "2": _cards("Ks Kh 3d"), "next": ["Kd"]})
    events = t.apply(commands.declare(t.state, 1, "in", t.now))
    events += t.apply(commands.declare(t.state, 2, "in", t.now))
    events += t.apply(commands.declare(t.state, 0, "out", t.now))
    assert [e.TYPE for e in events][-2:] == ["declarations_revealed", "community_card_dealt"]
    assert t.state.hand.community == ("Kd",)
    assert table_view(t.state, Viewer("player", 0))["hand"]["community"] == ["Kd"]
    assert t.resolve().winners == (2,)  # Ks Kh + Kd: trips beat aces


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(FULL_DECK), min_size=4, max_size=4, unique=True))
def test_best_hand_with_a_community_card_matches_brute_force(cards):
    rules = resolve_ruleset("three-card", {"community_cards": 1})
    hole, community = cards[:3], cards[3:]
    plain = make_evaluator(3)
    brute_high = max(plain(list(c)) for c in combinations(cards, 3))
    brute_low = min(plain(list(c)) for c in combinations(cards, 3))
    assert scorer(rules, community)(hole) == brute_high
    assert scorer(rules, community, low=True)(hole) == -brute_low


# --- pass the trash ---------------------------------------------------------------------------


def test_pass_the_trash_moves_one_card_left_all_at_once():
    t = Table(players=3, pass_the_trash=True)  # order 1, 2, 0
    t.deal({"1": _cards("As Kd 2c"), "2": _cards("Qs Jd 3c"), "0": _cards("Ts 9d 4c")})
    assert t.state.hand.phase == "passing"
    t.apply(commands.pass_card(t.state, 1, "2c", t.now))
    with pytest.raises(RuleViolation, match="already passed"):
        commands.pass_card(t.state, 1, "As", t.now)
    with pytest.raises(InvalidCard):
        commands.pass_card(t.state, 2, "As", t.now)
    # Nobody sees the card before everyone has passed: not even its receiver.
    seen = [event_view(e, t.state, Viewer("player", 2)) for e in t.log]
    assert "'2c'" not in str(seen)
    t.apply(commands.pass_card(t.state, 2, "3c", t.now))
    t.apply(commands.pass_card(t.state, 0, "4c", t.now))
    hand = t.state.hand
    assert hand.phase == "declaring"
    assert sorted(hand.cards[2]) == sorted(["Qs", "Jd", "2c"])
    assert sorted(hand.cards[0]) == sorted(["Ts", "9d", "3c"])
    assert sorted(hand.cards[1]) == sorted(["As", "Kd", "4c"])


def test_pass_deadline_passes_the_players_lowest_card():
    t = Table(players=2, pass_the_trash=True)
    t.deal({"1": _cards("As Kd 2c"), "0": _cards("Qs 2h 9c")})
    t.tick(31)
    events = t.apply(commands.close_at_deadline(t.state, t.now))
    passed = {e.seat: e.card for e in events if e.TYPE == "card_passed"}
    assert passed == {1: "2c", 0: "2h"}
    assert t.state.hand.phase == "declaring"


# --- no-peek ----------------------------------------------------------------------------------


def test_no_peek_players_do_not_see_their_cards_before_the_reveal():
    t = Table(players=2, no_peek=True)
    dealt = t.deal()
    me = Viewer("player", 1)
    assert "cards" not in table_view(t.state, me)["hand"]
    assert all(c not in str(event_view(dealt, t.state, me)) for c in dealt.cards[1])
    t.declare({1: "in", 0: "in"})
    assert table_view(t.state, me)["hand"]["cards"] == list(dealt.cards[1])


# --- wild cards -------------------------------------------------------------------------------


def test_wild_deuces_make_the_best_hand_at_the_showdown():
    t = Table(players=3, wild="deuces")
    result = t.play({1: "2c 2d As", 2: "Ks Kh Kd"}, {1: "in", 2: "in", 0: "out"})
    assert result.winners == (1,)


def test_one_eyed_jacks_are_wild():
    t = Table(players=3, wild="one_eyed_jacks")
    result = t.play({1: "Js Qd Qc", 2: "Ks Kh 9d"}, {1: "in", 2: "in", 0: "out"})
    assert result.winners == (1,)  # Q-Q plus a wild jack: three queens


# --- combinations -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {"no_peek": True, "pass_the_trash": True},
        {"no_peek": True, "draw": 1},
        {"draw": 1, "community_cards": 1},
        {"hi_lo": True, "wimp_penalty": 2},
        {"hi_lo": True, "cap_mode": "reserve", "cap": 10},
        {"draw": 4},
    ],
)
def test_combinations_that_cannot_work_are_refused(options):
    with pytest.raises(InvalidRules):
        resolve_ruleset("three-card", options)


def test_hi_lo_with_a_kitty_is_refused():
    with pytest.raises(InvalidRules, match="kitty"):
        resolve_ruleset("kitty", {"hi_lo": True})


def test_the_receiver_sees_the_passed_card_in_the_log_even_after_the_hand():
    t = Table(players=3, pass_the_trash=True)  # order 1, 2, 0: seat 1 passes to seat 2
    t.deal({"1": _cards("As Kd 2c"), "2": _cards("Qs Jd 3c"), "0": _cards("Ts 9d 4c")})
    for seat, card in ((1, "2c"), (2, "3c"), (0, "4c")):
        t.apply(commands.pass_card(t.state, seat, card, t.now))
    t.declare({1: "out", 2: "out", 0: "out"})
    t.resolve()
    passed = next(e for e in t.log if e.TYPE == "card_passed" and e.seat == 1)
    assert passed.to_seat == 2
    assert event_view(passed, t.state, Viewer("player", 2))["data"]["card"] == "2c"
    assert "card" not in event_view(passed, t.state, Viewer("player", 0))["data"]
