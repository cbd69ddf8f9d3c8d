"""Settlement rules from docs/rules.md and its worked examples, one test per rule."""

from __future__ import annotations

import pytest

from service.rules.errors import RuleViolation
from service.rules.state import ACTIVE, WAITING

from .harness import Table

TRIPS = "As Ah Ad"
PAIR_K = "Ks Kh 2c"
PAIR_Q = "Qs Qh 3c"
HIGH_J = "Jd 9c 4h"
HIGH_T = "Td 8c 5h"


def test_pot_of_8_with_three_in_players_becomes_16():
    t = Table(players=8)  # button seat 0: declaring starts at seat 1
    result = t.play(
        {1: TRIPS, 2: PAIR_K, 3: PAIR_Q}, {s: "in" if s in (1, 2, 3) else "out" for s in range(8)}
    )
    assert result.pot_in_play == 8
    assert result.won == {1: 8}
    assert result.matched == {2: 8, 3: 8}
    assert t.state.pot == 16
    assert t.stacks()[1] == 100 - 1 + 8
    assert t.stacks()[2] == t.stacks()[3] == 100 - 1 - 8
    assert t.state.game_running


def test_reserve_worked_example_from_seed_001_step_by_step():
    t = Table("two-card", players=4, buy_in=200, ante=20, cap_mode="reserve", cap=100)
    hands = {1: "As Ad", 2: "Ks Kd", 3: "Qs Qd", 0: "Js Jd"}
    first = t.play(hands, {s: "in" for s in range(4)})
    assert first.pot_in_play == 80 and first.won == {1: 80}
    assert first.matched == {2: 80, 3: 80, 0: 80}
    assert (t.state.pot, t.state.reserve) == (100, 140)
    # Uncontested: the button moved to seat 1, so seat 2 declares first and goes in alone.
    second = t.play({}, {2: "in", 3: "out", 0: "out", 1: "out"})
    assert second.outcome == "uncontested" and second.won == {2: 100}
    assert (t.state.pot, t.state.reserve) == (100, 40)
    third = t.play({}, {3: "in", 0: "out", 1: "out", 2: "out"})
    assert third.won == {3: 100}
    assert (t.state.pot, t.state.reserve) == (40, 0)
    assert t.state.game_running
    fourth = t.play({}, {0: "in", 1: "out", 2: "out", 3: "out"})
    assert fourth.won == {0: 40} and fourth.game_over
    assert (t.state.pot, t.state.reserve) == (0, 0)


def test_game_ends_only_after_a_winner_with_no_losing_in_player():
    t = Table(players=3)
    t.play({1: TRIPS, 2: PAIR_K}, {1: "in", 2: "in", 0: "out"})
    assert t.state.game_running and t.state.pot == 3
    all_out = t.play({}, {0: "out", 1: "out", 2: "out"})
    assert all_out.outcome == "nobody_in" and not all_out.game_over
    assert t.state.pot == 3
    lone = t.play({}, {0: "in", 1: "out", 2: "out"})
    assert lone.outcome == "uncontested" and lone.game_over
    assert not t.state.game_running and t.state.pot == 0
    dealt = t.deal()
    assert dealt.new_game and dealt.game == 2
    assert dealt.antes == {0: 1, 1: 1, 2: 1}


def test_lone_in_player_takes_pot_without_showing_cards():
    t = Table(players=3)
    result = t.play({1: HIGH_T}, {1: "in", 2: "out", 0: "out"})
    assert result.outcome == "uncontested"
    assert result.shown == {}
    assert result.won == {1: 3}


def test_survivor_only_the_lowest_loser_matches():
    t = Table("survivor", players=4)
    result = t.play({1: TRIPS, 2: PAIR_K, 3: HIGH_T}, {1: "in", 2: "in", 3: "in", 0: "out"})
    assert result.won == {1: 4}
    assert result.matched == {3: 4}
    assert t.state.pot == 4 and t.state.game_running
    # Ante unless matched: everyone but seat 3 antes the next hand.
    assert t.deal().antes == {0: 1, 1: 1, 2: 1}


def test_tied_lowest_losers_each_match_in_survivor():
    t = Table("survivor", players=4)
    result = t.play({1: TRIPS, 2: "Td 8c 5h", 3: "Th 8d 5c"}, {1: "in", 2: "in", 3: "in", 0: "out"})
    assert result.matched == {2: 4, 3: 4}


def test_kitty_beating_everyone_makes_every_in_player_lose():
    t = Table("kitty", players=3)
    t.deal(
        {
            "kitty": "As Ah Ad Ac Ks".split(),
            "1": "Kh Kd Kc Qs Qh".split(),
            "2": "2c 3c 4c 5c 7c".split(),
        }
    )
    t.declare({1: "in", 2: "in", 0: "out"})
    result = t.resolve()
    assert result.outcome == "kitty_wins"
    assert result.winners == () and result.won == {}
    assert result.matched == {1: 3, 2: 3}
    assert result.kitty_shown == ("As", "Ah", "Ad", "Ac", "Ks")
    assert t.state.pot == 3 + 6


def test_lone_in_player_must_beat_the_kitty():
    t = Table("kitty", players=3)
    t.deal({"kitty": "As Ah Ad Ac Ks".split(), "1": "2c 3d 4h 5s 7c".split()})
    t.declare({1: "in", 2: "out", 0: "out"})
    result = t.resolve()
    assert result.outcome == "kitty_wins" and result.matched == {1: 3}
    assert t.state.pot == 6
    t2 = Table("kitty", players=3)
    t2.deal({"kitty": "2c 3d 4h 5s 7c".split(), "1": "As Ah Ad Ac Ks".split()})
    t2.declare({1: "in", 2: "out", 0: "out"})
    won = t2.resolve()
    assert won.won == {1: 3} and won.game_over
    assert won.outcome == "beats_kitty" and won.winners == (1,) and won.matched == {}


def test_in_players_who_tie_above_the_kitty_share_the_pot_as_a_tie():
    t = Table("kitty", players=3)
    t.deal(
        {
            "kitty": "2c 3d 4h 5s 7c".split(),
            "1": "As Ah Ad Ac Ks".split(),
            "2": "Kd Kh Kc 2d 2h".split(),
        }
    )
    t.declare({1: "in", 2: "in", 0: "out"})
    result = t.resolve()
    assert result.outcome == "showdown" and result.winners == (1,) and result.matched == {2: 3}


def test_tie_with_the_kitty_is_a_loss():
    t = Table("kitty", players=2)
    t.deal({"kitty": "As Kd Qh Jc 9s".split(), "1": "Ah Kc Qd Js 9d".split()})
    t.declare({1: "in", 0: "out"})
    assert t.resolve().outcome == "kitty_wins"


def test_wimp_penalty_into_side_pot_and_next_winner_takes_both():
    t = Table(players=3, wimp_penalty=2, wimp_into="side_pot")
    wimp = t.play({1: TRIPS, 2: PAIR_K}, {0: "out", 1: "out", 2: "out"})
    assert wimp.outcome == "nobody_in" and wimp.wimp == {1: 2}
    assert set(wimp.shown) == {0, 1, 2}
    assert (t.state.pot, t.state.side_pot) == (3, 2)
    result = t.play({2: TRIPS, 0: PAIR_K}, {2: "in", 0: "in", 1: "out"})
    assert result.won == {2: 3 + 2}
    assert result.matched == {0: 3}  # losers match only the pot, not the side pot
    assert (t.state.pot, t.state.side_pot) == (3, 0)


def test_wimp_penalty_into_the_pot():
    t = Table(players=3, wimp_penalty=3)
    t.play({2: TRIPS}, {0: "out", 1: "out", 2: "out"})
    assert (t.state.pot, t.state.side_pot) == (6, 0)
    assert t.stacks()[2] == 100 - 1 - 3


def test_tied_winners_split_and_odd_chip_goes_from_the_buttons_left():
    t = Table(players=3)  # order 1, 2, 0
    result = t.play({1: "2c 3d 5h", 2: "As Kd 9c", 0: "Ah Kc 9d"}, {1: "in", 2: "in", 0: "in"})
    assert result.winners == (2, 0)
    assert result.won == {2: 2, 0: 1}
    assert result.matched == {1: 3}


def test_all_in_players_tied_empties_the_pot_and_ends_the_game():
    t = Table(players=3)
    result = t.play({1: "As Kd 9c", 2: "Ah Kc 9d"}, {1: "in", 2: "in", 0: "out"})
    assert result.outcome == "all_tied" and result.game_over
    assert result.won == {1: 2, 2: 1}
    assert t.state.pot == 0 and not t.state.game_running


def test_cap_limits_what_a_winner_takes_and_a_loser_pays():
    # docs/rules.md, the `cap_mode` example: a 6 pot, three in, cap 5: the winner takes 5, the
    # two losers pay 5 each.
    t = Table(players=6, cap_mode="cap", cap=5)
    result = t.play(
        {1: TRIPS, 2: PAIR_K, 3: PAIR_Q}, {s: "in" if s in (1, 2, 3) else "out" for s in range(6)}
    )
    assert result.won == {1: 5}
    assert result.matched == {2: 5, 3: 5}
    assert t.state.pot == 1 + 10


def test_cap_lone_winner_takes_only_the_cap_and_the_game_goes_on():
    t = Table(players=6, cap_mode="cap", cap=5)
    result = t.play({}, {1: "in", **{s: "out" for s in (0, 2, 3, 4, 5)}})
    assert result.won == {1: 5} and not result.game_over
    assert t.state.pot == 1 and t.state.game_running


def test_max_match_loser_pays_at_most_the_cap():
    t = Table("monte-carlo", players=4, cap=2)
    result = t.play({1: TRIPS, 2: PAIR_K}, {1: "in", 2: "in", 3: "out", 0: "out"})
    assert result.won == {1: 4}
    assert result.matched == {2: 2}


def test_table_stakes_loser_pays_at_most_what_they_have():
    t = Table(players=3, buy_in=[100, 100, 3])
    result = t.play({1: TRIPS, 2: PAIR_K}, {1: "in", 2: "in", 0: "out"})
    assert result.matched == {2: 2}
    assert result.removed == {2: "no_chips"}
    assert t.state.seats[2].status == WAITING


def test_cover_sits_out_a_player_who_cannot_cover_after_the_grace():
    t = Table("monte-carlo", players=4, buy_in=[100, 100, 100, 6])
    t.play({1: TRIPS, 2: PAIR_K, 3: PAIR_Q}, {1: "in", 2: "in", 3: "in", 0: "out"})
    assert t.stacks()[3] == 1 and t.state.pot == 8
    with pytest.raises(RuleViolation, match="cannot cover"):
        t.deal()
    t.tick(6)
    dealt = t.deal()
    assert dealt.removed == {3: "cannot_cover"}
    assert 3 not in dealt.order
    assert t.state.seats[3].status == WAITING


def test_cover_top_up_within_the_grace_keeps_the_player_in():
    from service.rules import commands

    t = Table("monte-carlo", players=4, buy_in=[100, 100, 100, 6])
    t.play({1: TRIPS, 2: PAIR_K, 3: PAIR_Q}, {1: "in", 2: "in", 3: "in", 0: "out"})
    t.tick(2)
    t.apply(commands.top_up(t.state, 3, 20, t.now))
    dealt = t.deal()
    assert 3 in dealt.order and dealt.removed == {}
    assert t.state.seats[3].status == ACTIVE
