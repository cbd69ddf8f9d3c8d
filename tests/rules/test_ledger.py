"""The ledger the rules derive from the events, and the responsible-gaming rules: what a
player could owe, declaring within a loss limit, anteing within it, exclusion.

(Every rules test also checks the ledger against the state after every event: the harness.)
"""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import timedelta

import pytest

from service.rules import commands, ledger
from service.rules.events import event_from_data, event_to_data
from service.rules.limits import Allowance, LossLimitReached, PlayerExcluded
from service.rules.settlement import most_owed
from service.rules.times import iso

from .harness import Table

TRIPS, PAIR_K, PAIR_Q = "As Ah Ad", "Ks Kh 2c", "Qs Qh 3c"


def _kinds(t: Table, version_from: int = 0) -> list[tuple[str | None, str, int, int]]:
    return [
        (e.player_id, e.kind, e.amount, e.balance_after)
        for e in t.entries
        if e.version > version_from
    ]


def test_a_showdown_is_antes_then_the_win_and_the_matches_with_stacks_after():
    t = Table(players=3, buy_in=50)
    t.play({1: TRIPS, 2: PAIR_K, 0: PAIR_Q}, {0: "in", 1: "in", 2: "in"})
    assert _kinds(t, 4) == [
        ("p1", "ante", -1, 49),
        ("p2", "ante", -1, 49),
        ("p0", "ante", -1, 49),
        ("p1", "win", 3, 52),
        ("p2", "match", -3, 46),
        ("p0", "match", -3, 46),
    ]
    hand = [e for e in t.entries if e.round_id is not None]
    assert {e.round_id for e in hand} == {"t1:1"} and {e.hand for e in hand} == {1}
    seated = [e for e in t.entries if e.kind == "buy_in"]
    assert [(e.round_id, e.hand, e.tx_id) for e in seated] == [
        (None, None, "t1:2:0:buy_in"),
        (None, None, "t1:3:1:buy_in"),
        (None, None, "t1:4:2:buy_in"),
    ]


def test_tx_ids_are_unique_and_the_same_log_gives_the_same_entries():
    t = Table(players=3, hi_lo=True, ante=2)
    t.play({1: TRIPS, 2: PAIR_K, 0: "3c 4d 6h"}, {1: "both", 2: "high", 0: "low"})
    t.play({}, {s: "both" for s in range(3)})
    ids = [e.tx_id for e in t.entries]
    assert len(set(ids)) == len(ids)
    assert any(i.endswith(":low") for i in ids)  # the low pot's movements
    copied = [event_from_data(json.loads(json.dumps(event_to_data(e)))) for e in t.log]
    again = ledger.fold(enumerate(copied, start=1))[1]
    assert [asdict(e) for e in again] == [asdict(e) for e in t.entries]


def test_the_wimp_penalty_is_its_own_kind():
    t = Table(players=3, wimp_penalty=2)
    t.play({1: TRIPS, 2: PAIR_K, 0: PAIR_Q}, {0: "out", 1: "out", 2: "out"})
    assert [k for k in _kinds(t, 4) if k[1] == "wimp"] == [("p1", "wimp", -2, 97)]


def test_leaving_cashes_out_the_whole_stack_outside_any_hand():
    t = Table(players=3)
    t.apply(commands.leave(t.state, 2, t.now))
    (entry,) = [e for e in t.entries if e.kind == "cash_out"]
    assert (entry.player_id, entry.amount, entry.balance_after, entry.round_id) == (
        "p2",
        -100,
        0,
        None,
    )


def test_net_loss_is_paid_in_minus_paid_out():
    t = Table(players=3)
    t.play({1: TRIPS, 2: PAIR_K, 0: PAIR_Q}, {0: "in", 1: "in", 2: "in"})
    mine = {p: [e for e in t.entries if e.player_id == p] for p in ("p0", "p1")}
    assert ledger.net_loss(mine["p0"]) == 1 + 3
    assert ledger.net_loss(mine["p1"]) == 1 - 3  # buy-ins are not losses


def test_what_a_player_could_owe_is_the_match_under_the_caps_never_more_than_the_stack():
    t = Table(players=3, ante=2)
    t.deal()
    assert most_owed(t.state, 0) == 6  # the pot
    capped = Table(players=3, ante=2, cap_mode="max_match", cap=4)
    capped.deal()
    assert most_owed(capped.state, 0) == 4
    short = Table(buy_in=[3, 100, 100], ante=2)
    short.deal()
    assert most_owed(short.state, 0) == 1  # what is left of their stack


def test_with_a_betting_round_every_bet_a_player_could_make_counts():
    t = Table(players=3, ante=1, draw=1, betting_round=True, bet_size=2, max_raises=1)
    t.deal()
    assert most_owed(t.state, 0) == 3 + 2 * 2  # the declared pot + a bet and a raise
    after = Table(
        players=3, ante=1, draw=1, betting_round=True, bet_size=2, max_raises=1,
        match_basis="after_betting",
    )  # fmt: skip
    after.deal()
    assert most_owed(after.state, 0) == (3 + 3 * 4) + 4  # everyone's bets may be matched


def test_hi_lo_owes_the_pots_the_decision_contends():
    t = Table(players=3, hi_lo=True, ante=3)  # high 6, low 3
    t.deal()
    owed = {d: most_owed(t.state, 0, d) for d in ("high", "low", "both")}
    assert owed == {"high": 6, "low": 3, "both": 9}


def test_declaring_in_past_the_limit_is_refused_and_out_never_is():
    t = Table(players=3, ante=1)
    t.deal()  # pot 3: in could cost 3 more
    seat = t.state.hand.order[0]
    tight = Allowance(limit=4, net_loss=2)
    with pytest.raises(LossLimitReached, match="exceed their loss limit of 4"):
        commands.declare(t.state, seat, "in", t.now, tight)
    assert not commands.can_declare(t.state, seat, "in", t.now, tight)
    assert commands.can_declare(t.state, seat, "out", t.now, tight)
    assert commands.can_declare(t.state, seat, "in", t.now, Allowance(limit=5, net_loss=2))
    assert commands.can_declare(t.state, seat, "in", t.now, None)


def test_a_player_who_cannot_ante_within_the_limit_waits_for_the_next_game():
    t = Table(players=3, ante=2)
    allowances = {"p1": Allowance(limit=10, net_loss=9)}
    (dealt,) = t.apply(commands.deal(t.state, b"s" * 32, t.now, allowances=allowances))
    assert dealt.removed == {1: "loss_limit"}
    assert 1 not in dealt.order and t.state.seats[1].status == "waiting"
    none_left = {p: Allowance(limit=0, net_loss=0) for p in ("p0", "p1")}
    t2 = Table(players=3, ante=1)
    with pytest.raises(commands.RuleViolation, match="at least two players"):
        commands.deal(t2.state, b"s" * 32, t2.now, allowances=none_left)


def test_an_excluded_player_is_seated_only_after_the_exclusion_ends():
    t = Table(players=2)
    until = iso(t.now + timedelta(days=1))
    with pytest.raises(
        PlayerExcluded, match=rf"excluded from play \(or on a time-out\) until {until}"
    ):
        commands.seat_player(t.state, "x", 10, t.now, excluded_until=until)
    t.tick(24 * 3600)
    assert commands.seat_player(t.state, "x", 10, t.now, excluded_until=until)
