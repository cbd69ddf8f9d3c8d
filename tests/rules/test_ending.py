"""Ending a table (docs/rules.md "Ending a table"): between hands only; the pots go back to the
players of the current game in proportion to what each paid in during it, rounded down, the
leftover chips one each from the button's left; everyone is cashed out; nothing after."""

from __future__ import annotations

import pytest

from service.rules import commands
from service.rules import events as ev
from service.rules.errors import RuleViolation
from service.rules.state import LEFT
from tests.rules.harness import Table


def _end(t: Table) -> ev.TableEnded:
    (ended,) = t.apply(commands.end_table(t.state, t.now))
    assert isinstance(ended, ev.TableEnded)
    return ended


def test_the_pot_goes_back_in_proportion_to_what_each_paid_this_game():
    t = Table("three-card", players=3, buy_in=100, ante=10)
    # seats 1 and 2 go in, 1 wins, 2 matches 30: the pot is 30 again, the game goes on
    t.play({1: "As Ah Ad", 2: "Ks Kh 2c", 0: "3c 5d 7h"}, {0: "out", 1: "in", 2: "in"})
    paid = dict(t.state.game_paid)
    assert paid == {0: 10, 1: 10, 2: 40} and t.state.pot == 30
    ended = _end(t)
    # 30 * 10/60 = 5, 30 * 10/60 = 5, 30 * 40/60 = 20: nothing left over
    assert ended.refunds == {0: 5, 1: 5, 2: 20}
    assert t.state.ended and t.state.pot == 0
    assert all(s.status == LEFT and s.stack == 0 for s in t.state.seats.values())
    assert sum(ended.cash_outs.values()) == t.state.bought_in - t.state.raked


def test_chips_left_over_go_one_each_from_the_buttons_left():
    t = Table("three-card", players=3, buy_in=100, ante=1)
    t.deal()
    t.declare({0: "out", 1: "out", 2: "out"})  # nobody in: the pot of 3 carries over
    t.resolve()
    t.apply(commands.leave(t.state, 1, t.now))  # seat 1 gives up its share
    assert t.state.pot == 3 and t.state.game_paid == {0: 1, 2: 1}
    first = (t.state.button + 1) % 3  # the button's left...
    while first not in (0, 2):  # ...the first of the payers from there
        first = (first + 1) % 3
    ended = _end(t)
    assert ended.refunds == {0: 1, 2: 1} | {first: 2}  # 3 * 1/2 = 1 each, 1 over


def test_an_uneven_split_gives_the_odd_chips_from_the_buttons_left():
    t = Table("three-card", players=3, buy_in=100, ante=10)
    t.play({1: "As Ah Ad", 2: "Ks Kh 2c", 0: "3c 5d 7h"}, {0: "out", 1: "in", 2: "in"})
    t.apply(commands.leave(t.state, 0, t.now))  # seat 0 leaves: gives up its share
    assert t.state.game_paid == {1: 10, 2: 40}
    ended = _end(t)
    # 30 * 10/50 = 6, 30 * 40/50 = 24: exact
    assert ended.refunds == {1: 6, 2: 24}


def test_a_pot_stranded_with_one_player_able_to_ante_is_settled_by_the_end():
    t = Table("kitty", players=2, buy_in=[12, 100], ante=6)
    # p0 goes in against the kitty and loses: they match, and cannot ante any more
    for _ in range(3):
        if t.state.seats[0].stack < 6:
            break
        t.deal({"0": "2c 3d 5h 7s 9c".split(), "kitty": "As Ah Ad Ks Kh".split()})
        t.declare({0: "in", 1: "out"})
        t.resolve()
    with pytest.raises(RuleViolation):
        commands.deal(t.state, b"s" * 32, t.now)  # fewer than two can ante: stranded
    stranded = t.state.pot
    assert stranded > 0
    ended = _end(t)
    assert sum(ended.refunds.values()) == stranded
    assert t.state.chips_on_table() == t.state.bought_in - t.state.cashed_out


def test_hi_lo_low_pot_reserve_and_side_pot_all_go_back():
    t = Table("three-card", players=3, buy_in=100, ante=4, hi_lo=True)
    t.deal()
    t.declare({0: "out", 1: "out", 2: "out"})
    t.resolve()
    assert t.state.pot + t.state.low_pot > 0
    left = t.state.pot + t.state.low_pot + t.state.reserve + t.state.side_pot
    ended = _end(t)
    assert sum(ended.refunds.values()) == left


def test_no_end_during_a_hand_and_no_command_after_it():
    t = Table("three-card", players=3, buy_in=100)
    t.deal()
    with pytest.raises(RuleViolation, match="in play"):
        commands.end_table(t.state, t.now)
    t.declare({0: "out", 1: "out", 2: "out"})
    t.resolve()
    _end(t)
    refused = [
        lambda: commands.end_table(t.state, t.now),
        lambda: commands.deal(t.state, b"s" * 32, t.now),
        lambda: commands.seat_player(t.state, "zed", 10, t.now),
        lambda: commands.top_up(t.state, 0, 5, t.now),
    ]
    for command in refused:
        with pytest.raises(RuleViolation, match="ended"):
            command()


def test_an_empty_pot_ends_with_cash_outs_only_and_nobody_seated_with_chips_is_refused():
    t = Table("three-card", players=2, buy_in=50)
    ended = _end(t)
    assert ended.refunds == {} and ended.cash_outs == {0: 50, 1: 50}
    u = Table("three-card", players=2, buy_in=50)
    u.deal()
    u.declare({0: "out", 1: "out"})
    u.resolve()
    for seat in (0, 1):
        u.apply(commands.leave(u.state, seat, u.now))
    with pytest.raises(RuleViolation, match="nobody is seated"):
        commands.end_table(u.state, u.now)
