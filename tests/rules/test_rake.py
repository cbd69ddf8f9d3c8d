"""Rake (docs/rules.md, `rake_percent`): the house's share of a pot won at a showdown of two
or more in-players, from the whole pot before it is split, rounded down, at most `rake_cap` per
pot; with hi-lo, from each pot. Chip conservation counts it."""

from __future__ import annotations

import pytest

from service.rules.errors import InvalidRules
from service.rules.ruleset import resolve_ruleset
from service.rules.settlement import rake_of
from tests.rules.harness import Table


def test_a_showdown_pot_is_raked_before_it_is_paid_rounded_down():
    t = Table("three-card", players=3, buy_in=100, ante=10, rake_percent=5)
    hands = {0: "As Ad Ah", 1: "2c 3d 5h", 2: "9c 9d 4h"}
    resolved = t.play(hands, {0: "in", 1: "in", 2: "out"})
    assert resolved.outcome == "showdown" and resolved.pot_in_play == 30
    assert resolved.rake == 1  # 5% of 30 is 1.5: rounded down
    assert resolved.won == {0: 29}
    assert t.state.raked == 1
    assert t.state.chips_on_table() == t.state.bought_in - t.state.cashed_out


def test_the_cap_bounds_the_rake_of_each_pot():
    rules = resolve_ruleset("three-card", {"rake_percent": 10, "rake_cap": 3})
    assert rake_of(rules, "showdown", 100) == 3
    assert rake_of(rules, "showdown", 29) == 2
    assert rake_of(rules, "all_tied", 100) == 3  # a tie among two or more is a showdown


@pytest.mark.parametrize(
    "outcome", ["uncontested", "nobody_in", "kitty_wins", "beats_kitty", "others_folded"]
)
def test_pots_not_decided_at_a_showdown_of_two_or_more_are_not_raked(outcome):
    rules = resolve_ruleset("three-card", {"rake_percent": 10})
    assert rake_of(rules, outcome, 100) == 0


def test_an_uncontested_pot_is_taken_whole():
    t = Table("three-card", players=3, buy_in=100, ante=10, rake_percent=10)
    t.deal()
    t.declare({0: "in", 1: "out", 2: "out"})
    resolved = t.resolve()
    assert resolved.outcome == "uncontested" and resolved.rake == 0
    assert resolved.won == {0: 30}


def test_hi_lo_rakes_each_pot():
    t = Table("three-card", players=4, buy_in=100, ante=20, hi_lo=True, rake_percent=10)
    hands = {0: "As Ad Ah", 1: "Kc Kd Qh", 2: "2c 3d 5h", 3: "2d 4c 7h"}
    resolved = t.play(hands, {0: "high", 1: "high", 2: "low", 3: "low"})
    assert resolved.outcome == "showdown" and resolved.low is not None
    assert resolved.low.outcome == "showdown"
    assert resolved.rake == resolved.pot_in_play // 10
    assert resolved.low.rake == resolved.low.pot_in_play // 10
    assert t.state.raked == resolved.rake + resolved.low.rake
    assert t.state.chips_on_table() == t.state.bought_in - t.state.cashed_out


@pytest.mark.parametrize("value", [-1, 10.5, 2.555, "5", True])
def test_rake_percent_is_a_number_from_0_to_10_with_two_decimals_at_most(value):
    with pytest.raises(InvalidRules):
        resolve_ruleset("three-card", {"rake_percent": value})


def test_rake_in_basis_points_is_exact():
    assert resolve_ruleset("three-card", {"rake_percent": 2.55}).rake_basis_points == 255
    assert resolve_ruleset("three-card", {"rake_percent": 2.5}).to_dict()["rake_percent"] == 2.5
    assert resolve_ruleset("three-card", {"rake_percent": 5.0}).to_dict()["rake_percent"] == 5
