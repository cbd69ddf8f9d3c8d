"""The rules own time: what falls due next on a table, and what the platform does then."""

from __future__ import annotations

import pytest

from service.rules import clock
from service.rules.clock import CLOSE, ENFORCE_COVER, RESOLVE, NothingDue, act_when_due, next_due
from service.rules.events import HandResolved
from service.rules.times import parse_iso

from .harness import Table


def test_nothing_is_due_on_a_table_between_hands():
    table = Table()
    assert next_due(table.state) is None
    with pytest.raises(NothingDue):
        act_when_due(table.state, table.now)


def test_a_dealt_hand_is_due_to_close_at_its_deadline():
    table = Table(decision_timeout_s=30)
    dealt = table.deal()
    due = next_due(table.state)
    assert due == clock.Due(CLOSE, dealt.deadline)
    assert due.epoch == parse_iso(dealt.deadline).timestamp()


def test_nothing_is_done_before_the_deadline_and_the_silent_are_out_after_it():
    table = Table(decision_timeout_s=30)
    table.deal()
    table.declare({0: "in"})
    table.tick(29.9)
    with pytest.raises(NothingDue):
        act_when_due(table.state, table.now)
    table.tick(0.1)
    table.apply(act_when_due(table.state, table.now))
    hand = table.state.hand
    assert hand is not None and hand.phase == "showdown"
    assert hand.decided_by == {0: "player", 1: "platform", 2: "platform"}


def test_a_showdown_is_due_at_once_only_with_auto_resolve():
    manual = Table("three-card")
    manual.deal()
    manual.declare({0: "in", 1: "in", 2: "out"})
    assert next_due(manual.state) is None

    auto = Table("monte-carlo", players=3)
    auto.deal()
    auto.declare({0: "in", 1: "in", 2: "out"})
    due = next_due(auto.state)
    assert due is not None and due.action == RESOLVE
    assert parse_iso(due.at) <= auto.now  # due at once
    (resolved,) = auto.apply(act_when_due(auto.state, auto.now))
    assert isinstance(resolved, HandResolved)
    assert auto.state.hand is None


def test_sequential_declaring_is_due_again_at_each_turns_own_deadline():
    table = Table("two-card", decision_timeout_s=10)
    dealt = table.deal()
    table.tick(10)
    table.apply(act_when_due(table.state, table.now))
    due = next_due(table.state)
    assert due is not None and due.action == CLOSE
    assert parse_iso(due.at) > parse_iso(dealt.deadline)


def test_the_end_of_a_cover_grace_is_due_while_a_player_is_short():
    table = Table("monte-carlo", buy_in=[100, 100, 6], cover_grace_s=5, auto_resolve=False)
    table.play({1: "As Ah Ad", 2: "Ks Kh 2c"}, {1: "in", 2: "in", 0: "out"})
    due = next_due(table.state)
    assert due is not None and due.action == ENFORCE_COVER
    assert due.at == table.state.grace_until
    table.tick(5)
    table.apply(act_when_due(table.state, table.now))
    assert table.state.seats[2].status == "waiting"
    assert next_due(table.state) is None
