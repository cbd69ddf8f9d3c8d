"""Draw guts with a betting round (docs/rules.md, `betting_round`): options, turns,
fixed-limit actions, folds that still match, both match bases, deadlines, voids."""

from __future__ import annotations

import pytest

from service.rules import commands
from service.rules import events as ev
from service.rules.clock import CLOSE, act_when_due, next_due
from service.rules.errors import InvalidCommand, InvalidRules, NotYourTurn, RuleViolation
from service.rules.events import BetMade
from service.rules.ruleset import resolve_ruleset
from service.rules.state import replay
from service.rules.views import Viewer, event_view, table_view

from .harness import Table

# Seat 1 draws into aces; seat 2 holds kings; seat 0 a low hand. The button is seat 0, so the
# order (and the betting order) is 1, 2, 0.
CARDS = {"1": ["2c", "7d", "9h"], "2": ["Ks", "Kh", "3d"], "0": ["4c", "6d", "8s"]}
NEXT = ["As", "Ad", "Qc", "Jc"]


def _betting_table(players: int = 3, **rules: object) -> Table:
    """A hand dealt, everyone in, the draws done: the betting round starts."""
    rules = {"draw": 2, "betting_round": True, **rules}
    t = Table(players=players, **rules)
    t.deal({**{k: v for k, v in CARDS.items() if int(k) < players}, "next": NEXT})
    t.declare({s: "in" for s in t.state.hand.order})
    t.apply(commands.draw(t.state, 1, ["2c", "7d"], t.now))  # aces
    for seat in t.state.hand.order[1:]:
        t.apply(commands.draw(t.state, seat, [], t.now))
    return t


def _act(t: Table, seat: int, action: str) -> BetMade:
    (made,) = t.apply(commands.bet(t.state, seat, action, t.now))
    assert isinstance(made, BetMade)
    return made


def _round(t: Table, *actions: str) -> ev.HandResolved:
    """Each action by the seat on turn, then the showdown."""
    for action in actions:
        _act(t, t.state.hand.bet_turn, action)
    assert t.state.hand.phase == "showdown"
    return t.resolve()


# --- options ----------------------------------------------------------------------------------


def test_betting_round_needs_a_draw():
    with pytest.raises(InvalidRules) as refused:
        resolve_ruleset("three-card", {"betting_round": True})
    assert refused.value.field == "betting_round"


def test_bet_size_defaults_to_the_ante_and_the_options_need_the_round():
    rules = resolve_ruleset("three-card", {"draw": 1, "betting_round": True, "ante": 4})
    assert (rules.bet_size, rules.max_raises, rules.match_basis) == (4, 3, "declared")
    for name, value in (("bet_size", 2), ("max_raises", 1), ("match_basis", "after_betting")):
        with pytest.raises(InvalidRules) as refused:
            resolve_ruleset("three-card", {"draw": 1, name: value})
        assert refused.value.field == name


@pytest.mark.parametrize(
    ("name", "value"),
    [("bet_size", 0), ("max_raises", -1), ("max_raises", 11), ("match_basis", "x")],
)
def test_betting_options_out_of_range_are_refused(name, value):
    with pytest.raises(InvalidRules) as refused:
        resolve_ruleset("three-card", {"draw": 1, "betting_round": True, name: value})
    assert refused.value.field == name


def test_betting_cannot_be_combined_with_hi_lo():
    with pytest.raises(InvalidRules):
        resolve_ruleset("three-card", {"draw": 1, "betting_round": True, "hi_lo": True, "ante": 2})


# --- the round --------------------------------------------------------------------------------


def test_betting_starts_after_the_draw_from_the_buttons_left():
    t = _betting_table()
    hand = t.state.hand
    assert (hand.phase, hand.bettors, hand.bet_turn, hand.bet_to) == ("betting", [1, 2, 0], 1, 0)
    assert hand.deadline > hand.dealt_at


def test_no_betting_round_for_a_lone_in_player():
    t = Table(players=3, draw=2, betting_round=True, kitty=False)
    t.deal()
    t.declare({1: "in", 2: "out", 0: "out"})
    assert t.state.hand.phase == "showdown"


def test_players_act_in_turn_and_only_as_fixed_limit_allows():
    t = _betting_table(bet_size=2)
    with pytest.raises(NotYourTurn):
        commands.bet(t.state, 2, "check", t.now)
    with pytest.raises(RuleViolation, match="no bet to call"):
        commands.bet(t.state, 1, "call", t.now)
    with pytest.raises(RuleViolation, match="no bet to raise"):
        commands.bet(t.state, 1, "raise", t.now)
    with pytest.raises(InvalidCommand):
        commands.bet(t.state, 1, "all-in", t.now)
    assert _act(t, 1, "bet").amount == 2
    with pytest.raises(RuleViolation, match="bet of 2 to call"):
        commands.bet(t.state, 2, "check", t.now)
    with pytest.raises(RuleViolation, match="already a bet"):
        commands.bet(t.state, 2, "bet", t.now)
    raised = _act(t, 2, "raise")
    assert (raised.amount, raised.bet_to, raised.raises) == (4, 4, 1)
    assert _act(t, 0, "call").amount == 4
    assert _act(t, 1, "call").amount == 2  # owed the raise only
    assert t.state.hand.phase == "showdown" and t.state.hand.bets == {1: 4, 2: 4, 0: 4}
    assert t.state.pot == 3 + 12


def test_the_raise_cap_is_enforced():
    t = _betting_table(max_raises=1)
    _act(t, 1, "bet")
    _act(t, 2, "raise")
    with pytest.raises(RuleViolation, match="raise cap is reached"):
        commands.bet(t.state, 0, "raise", t.now)
    assert not commands.can_bet(t.state, 0, "raise", t.now)
    assert commands.can_bet(t.state, 0, "call", t.now)


def test_the_round_ends_when_all_check():
    t = _betting_table()
    for seat in (1, 2, 0):
        assert t.state.hand.phase == "betting"
        _act(t, seat, "check")
    assert t.state.hand.phase == "showdown" and t.state.hand.bets == {}


def test_a_player_who_cannot_afford_a_call_is_refused_and_may_fold():
    t = _betting_table(buy_in=[100, 100, 1])  # seat 2 has nothing left after the ante
    _act(t, 1, "bet")
    with pytest.raises(RuleViolation, match="has 0 chips and a call costs 1"):
        commands.bet(t.state, 2, "call", t.now)
    _act(t, 2, "fold")
    assert t.state.hand.bet_turn == 0


def test_a_fold_loses_and_still_matches_the_declared_pot():
    t = _betting_table()  # pot 3 when declared
    result = _round(t, "bet", "fold", "call")
    assert result.outcome == "showdown" and result.folded == (2,)
    assert result.pot_in_play == 5 and result.bets == {1: 1, 0: 1}
    assert result.winners == (1,) and result.won == {1: 5}  # the whole pot, bets included
    assert result.matched == {0: 3, 2: 3}  # the pot as it was declared
    assert 2 not in result.shown  # a folded hand is mucked
    assert t.state.pot == 6


def test_after_betting_losers_match_the_pot_with_the_bets():
    result = _round(_betting_table(match_basis="after_betting"), "bet", "call", "fold")
    assert result.pot_in_play == 5 and result.matched == {2: 5, 0: 5}


def test_the_last_player_standing_takes_the_pot_unseen_and_the_folders_match():
    result = _round(_betting_table(), "bet", "fold", "fold")
    assert result.outcome == "others_folded" and result.shown == {}
    assert result.won == {1: 4} and result.matched == {2: 3, 0: 3}
    assert not result.game_over


def test_with_lowest_loser_only_the_folders_pay():
    result = _round(_betting_table(match="lowest_loser"), "check", "check", "fold")
    assert result.winners == (1,) and result.matched == {0: 3}


def test_caps_bound_what_is_won_and_matched_with_bets_in_the_pot():
    t = _betting_table(cap_mode="cap", cap=4, match_basis="after_betting")
    result = _round(t, "bet", "raise", "fold", "call")  # pot 3 + 4 = 7
    assert result.won == {1: 4} and result.matched == {2: 4, 0: 4}
    assert result.pot == 7 - 4 + 8


def test_a_silent_player_checks_if_they_may_else_folds_at_the_deadline():
    t = _betting_table()
    assert next_due(t.state).action == CLOSE
    t.tick(31)
    (checked,) = t.apply(act_when_due(t.state, t.now))
    assert (checked.seat, checked.action, checked.by) == (1, "check", "platform")
    _act(t, 2, "bet")
    t.tick(31)
    (folded,) = t.apply(act_when_due(t.state, t.now))
    assert (folded.seat, folded.action, folded.by) == (0, "fold", "platform")
    assert t.state.hand.bet_turn == 1


def test_acting_after_the_deadline_is_refused():
    t = _betting_table()
    t.tick(31)
    with pytest.raises(RuleViolation, match="deadline passed"):
        commands.bet(t.state, 1, "check", t.now)


def test_a_voided_hand_gives_the_bets_back_and_keeps_the_antes():
    t = _betting_table()
    _act(t, 1, "bet")
    _act(t, 2, "call")
    t.apply(commands.void_hand(t.state, "misdeal", t.now))
    assert t.state.pot == 3 and t.stacks() == {0: 99, 1: 99, 2: 99}


def test_resolve_waits_for_the_betting_round():
    t = _betting_table()
    with pytest.raises(RuleViolation, match="still betting"):
        commands.resolve(t.state, t.now)


def test_replay_of_a_betting_hand_equals_the_live_state():
    t = _betting_table()
    _round(t, "bet", "raise", "fold", "raise", "call")
    assert replay(t.log).to_data() == t.state.to_data()


# --- what each viewer sees --------------------------------------------------------------------


def test_the_betting_round_is_public_and_cards_stay_private():
    t = _betting_table(bet_size=2)
    _act(t, 1, "bet")
    _act(t, 2, "fold")
    viewers = [Viewer("operator"), Viewer("auditor"), *(Viewer("player", s) for s in (0, 1, 2))]
    views = {v: table_view(t.state, v)["hand"] for v in viewers}
    expected = {
        "bettors": [1, 2, 0],
        "turn": 0,
        "bet_to": 2,
        "to_call": 2,
        "raises": 0,
        "max_raises": 3,
        "bet_size": 2,
        "bets": {"1": 2, "2": 0, "0": 0},
        "folded": [2],
        "pot_declared": 3,
    }
    for viewer, hand in views.items():
        assert hand["betting"] == expected
        assert hand["decisions"] == {"1": "in", "2": "in", "0": "in"}  # revealed before the draw
        if viewer.role == "player":
            assert hand["cards"] == list(t.state.hand.cards[viewer.seat])
        else:
            assert "cards" not in hand
    bets = [(v, e) for v, e in enumerate(t.log, start=1) if isinstance(e, BetMade)]
    for viewer in viewers:
        for version, made in bets:
            assert event_view(made, t.state, viewer, version)["data"]["amount"] == made.amount
    at, dealt = next((v, e) for v, e in enumerate(t.log, start=1) if e.TYPE == "hand_dealt")
    for seat in (0, 1, 2):
        data = event_view(dealt, t.state, Viewer("player", seat), at)["data"]
        assert list(data["cards"]) == [str(seat)] and "seed" not in data


def test_decisions_are_public_while_drawing_once_revealed():
    t = Table(players=3, draw=1)
    t.deal()
    t.declare({1: "in", 2: "in", 0: "out"})
    assert t.state.hand.phase == "drawing"
    assert table_view(t.state, Viewer("player", 0))["hand"]["decisions"] == {
        "1": "in",
        "2": "in",
        "0": "out",
    }
