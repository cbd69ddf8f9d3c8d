"""Rulesets: presets, overrides, and validation that names the option."""

from __future__ import annotations

import pytest

from service.rules.errors import InvalidRules
from service.rules.ruleset import PRESETS, resolve_ruleset, ruleset_from_dict


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_preset_is_valid_and_round_trips(preset):
    rules = resolve_ruleset(preset)
    assert ruleset_from_dict(rules.to_dict()) == rules


def test_presets_match_rules_md():
    two = resolve_ruleset("two-card")
    assert (two.cards, two.declare, two.dealer_auto_in, two.cap_mode) == (
        2,
        "sequential",
        True,
        "none",
    )
    three = resolve_ruleset("three-card")
    assert (three.cards, three.declare, three.straights_and_flushes) == (3, "simultaneous", True)
    mc = resolve_ruleset("monte-carlo", {"ante": 2})
    assert (mc.cap_mode, mc.cap, mc.ante_rule, mc.ante_after_all_out, mc.short_stack) == (
        "max_match",
        100,
        "unless_matched",
        True,
        "cover",
    )
    assert resolve_ruleset("survivor").match == "lowest_loser"
    kitty = resolve_ruleset("kitty")
    assert (kitty.cards, kitty.kitty) == (5, True)


@pytest.mark.parametrize(
    ("preset", "overrides", "field"),
    [
        ("three-card", {"colour": "red"}, "colour"),
        ("three-card", {"cards": 4}, "cards"),
        ("three-card", {"ante": 0}, "ante"),
        ("three-card", {"ante": "1"}, "ante"),
        ("three-card", {"kitty": "yes"}, "kitty"),
        ("three-card", {"declare": "shouted"}, "declare"),
        ("three-card", {"seats": 18}, "seats"),
        ("kitty", {"seats": 10}, "seats"),
        ("three-card", {"dealer_auto_in": True}, "dealer_auto_in"),
        ("three-card", {"cap_mode": "cap"}, "cap"),
        ("three-card", {"cap": 10}, "cap"),
        ("two-card", {"straights_and_flushes": True}, "straights_and_flushes"),
        ("kitty", {"straights_and_flushes": False}, "straights_and_flushes"),
        ("three-card", {"winner_skips_ante": True}, "winner_skips_ante"),
        ("three-card", {"wimp_into": "side_pot"}, "wimp_into"),
        ("three-card", {"decision_timeout_s": 0}, "decision_timeout_s"),
    ],
)
def test_invalid_rules_are_refused_naming_the_option(preset, overrides, field):
    with pytest.raises(InvalidRules) as caught:
        resolve_ruleset(preset, overrides)
    assert caught.value.field == field
    assert caught.value.detail


def test_unknown_preset_is_refused():
    with pytest.raises(InvalidRules) as caught:
        resolve_ruleset("five-card-stud")
    assert caught.value.field == "preset"


def test_seat_limit_follows_the_deck():
    assert resolve_ruleset("two-card", {"seats": 26}).seats == 26
    assert resolve_ruleset("three-card", {"seats": 17}).seats == 17
    assert resolve_ruleset("kitty", {"seats": 9}).seats == 9


def test_hi_lo_needs_an_ante_of_at_least_two():
    with pytest.raises(InvalidRules, match="at least 2") as refused:
        resolve_ruleset("three-card", {"hi_lo": True, "ante": 1})
    assert refused.value.field == "ante"
    assert resolve_ruleset("three-card", {"hi_lo": True, "ante": 2}).hi_lo
