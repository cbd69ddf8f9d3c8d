"""Player protection in the rules: reality checks, away, sessions ended by a limit, a
time-out or an exclusion; drawn at random with the game, chips stay conserved, a replay is the
live state, and the audit re-decides every protection event the same."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.audit.redecide import check_decision, check_protection
from service.rules import clock, commands, protection
from service.rules import events as ev
from service.rules import protection_events as pe
from service.rules.errors import GutsError, RuleViolation
from service.rules.limits import CoolingDown, verify_cooled_down
from service.rules.protection import SessionLimits
from service.rules.state import TableState, replay
from service.rules.times import iso

from .harness import Table
from .test_properties import _natural, _step


def _limited(every: int | None = 1, limit: int | None = None, players: int = 3) -> Table:
    t = Table(players=players)
    for seat in range(players):
        t.apply(protection.protection_set(seat, f"p{seat}", SessionLimits(every, limit), t.now))
    return t


def _due(t: Table) -> list[ev.Event]:
    return t.apply(clock.act_when_due(t.state, t.now))


def test_a_reality_check_comes_every_interval_with_minutes_and_net_result():
    t = _limited(every=10, players=2)
    t.tick(10 * 60 - 1)
    assert clock.next_due(t.state).action == protection.REALITY_CHECK
    try:
        clock.act_when_due(t.state, t.now)
        raise AssertionError("a reality check before it is due")
    except clock.NothingDue:
        pass
    t.tick(1)
    (check,) = _due(t)
    assert check == pe.RealityCheck(
        seat=0, player_id="p0", number=1, minutes_played=10, net_result=0, at=check.at
    )
    (other,) = _due(t)
    assert isinstance(other, pe.RealityCheck) and other.seat == 1
    # Both unanswered: nobody can be dealt in; seat 0 continues, seat 1 still waits.
    try:
        commands.deal(t.state, b"s" * 32, t.now)
        raise AssertionError("dealt to players whose reality check waits")
    except RuleViolation:
        pass
    t.apply(protection.answer_reality_check(t.state, 0, "continue", "player", t.now))
    assert not t.state.seats[0].check_pending and t.state.seats[1].check_pending
    # The next check of seat 0 is 10 minutes after the first was due, not after the answer.
    assert clock.next_due(t.state).at == "2026-11-22T12:20:00.000Z"


def test_stop_cashes_the_player_out_through_player_left():
    t = _limited(every=1)
    t.tick(60)
    _due(t)
    events = t.apply(protection.answer_reality_check(t.state, 0, "stop", "player", t.now))
    assert [e.TYPE for e in events] == ["reality_check_answered", "session_ended", "player_left"]
    assert events[-1] == ev.PlayerLeft(seat=0, cash_out=100, at=events[-1].at)


def test_a_session_limit_reached_mid_hand_forfeits_and_cashes_out_after_the_hand():
    t = _limited(every=None, limit=5)
    t.tick(5 * 60 - 10)
    t.deal()
    t.tick(10)
    ended = _due(t)  # every session ends at once: each in turn, the earliest first
    assert ended[0].TYPE == "session_ended" and ended[1].by == "forfeit"
    while t.state.hand.phase == "declaring":
        _due(t)  # the other sessions end, and their players forfeit
    assert all(s.leaving == "session_limit" for s in t.state.seated())
    assert clock.next_due(t.state) is None  # nobody is cashed out while the hand holds them
    t.resolve()
    left = [e for e in _due(t) + _due(t) + _due(t) if isinstance(e, ev.PlayerLeft)]
    assert sorted(e.seat for e in left) == [0, 1, 2]
    assert clock.next_due(t.state) is None


def test_a_session_limit_starts_a_cool_down_24_hours_from_when_it_was_reached():
    t = _limited(every=None, limit=5, players=2)
    reached = t.now + timedelta(minutes=5)
    t.tick(5 * 60 - 1)
    assert protection.cool_downs_due(t.state, t.now) == {}
    t.tick(30)  # however late the clock asks, the cool-down runs from the limit
    until = iso(reached + timedelta(hours=24))
    assert protection.cool_downs_due(t.state, t.now) == {"p0": until, "p1": until}
    ended = _due(t)
    # The session's end says until when the player cannot sit (the cool-down's end).
    assert ended[0] == pe.SessionEnded(
        seat=0, reason="session_limit", until=until, at=ended[0].at, hand=None
    )
    assert protection.cool_downs_due(t.state, t.now) == {"p1": until}  # p0's has ended
    try:
        verify_cooled_down("p0", until, reached + timedelta(hours=23, minutes=59))
        raise AssertionError("seated during the cool-down")
    except CoolingDown as refused:
        assert f"for 24 hours, until {until}" in str(refused)
    verify_cooled_down("p0", until, reached + timedelta(hours=24))
    verify_cooled_down("p0", None, reached)


def test_the_audit_takes_a_session_limits_end_only_with_its_cool_down_or_none():
    """The audit re-decides a session limit's `until`: the cool-down's end, or None (a log
    written before the end said it); any other moment is a bad event."""
    t = _limited(every=None, limit=5, players=2)
    t.tick(5 * 60)
    _due(t)
    _redecided(t.log)
    ended = next(e for e in t.log if isinstance(e, pe.SessionEnded))
    assert ended.until is not None
    for until, good in ((None, True), (iso(t.now + timedelta(hours=1)), False)):
        log = [replace(e, until=until) if e is ended else e for e in t.log]
        if good:
            _redecided(log)
        else:
            with pytest.raises(ValueError, match="cool-down"):
                _redecided(log)


def test_a_timeout_while_seated_makes_them_out_at_once_and_only_once():
    t = Table(players=3)
    t.deal()
    until = "2026-12-01T00:00:00.000Z"
    events = t.apply(protection.end_session_of(t.state, "p1", "timeout", until, t.now))
    assert events[0] == pe.SessionEnded(
        seat=1, reason="timeout", until=until, at=events[0].at, hand=1
    )
    assert events[1].by == "forfeit"
    try:
        protection.end_session_of(t.state, "p1", "timeout", until, t.now)
        raise AssertionError("a session ended twice")
    except protection.NothingToEnd:
        pass


def test_missed_deadlines_make_a_player_away_and_away_players_are_dealt_out():
    t = Table(players=3, away_after_missed=2)
    for _ in range(2):
        t.deal()
        others = [s for s in t.state.hand.order if s != 2]
        t.declare({s: "in" for s in others})
        t.tick(31)
        closed = _due(t)
        t.resolve()
    assert any(isinstance(e, pe.PlayerAway) and e.seat == 2 for e in closed)
    assert 2 not in t.deal().order  # no ante, no cards
    t.resolve() if t.state.hand.phase == "showdown" else None


def test_away_after_missed_zero_never_makes_anyone_away():
    t = Table(players=2, away_after_missed=0)
    for _ in range(3):
        t.deal()
        t.tick(31)
        assert not any(isinstance(e, pe.PlayerAway) for e in _due(t))
        t.resolve()


def test_going_away_before_declaring_forfeits_the_round_and_back_deals_in_again():
    t = Table(players=3)
    t.deal()
    events = t.apply(protection.go_away(t.state, 1, "player", t.now))
    assert [e.TYPE for e in events][:2] == ["player_away", "decision_made"]
    t.declare({s: "in" for s in t.state.hand.order})
    t.resolve()
    assert 1 not in t.deal().order
    t.declare({s: "out" for s in t.state.hand.order})
    t.resolve()
    t.apply(protection.come_back(t.state, 1, "operator", t.now))
    assert 1 in t.deal().order


PROTECTION_ACTIONS = ["away", "back", "answer", "timeout", "limits", "due", "later"]


def _protect(t: Table, action: str, data: st.DataObject) -> None:
    state, seat = t.state, data.draw(st.integers(0, 5))
    if action == "away":
        t.apply(protection.go_away(state, seat, "player", t.now))
    elif action == "back":
        t.apply(protection.come_back(state, seat, "player", t.now))
    elif action == "answer":
        answer = data.draw(st.sampled_from(protection.ANSWERS))
        t.apply(protection.answer_reality_check(state, seat, answer, "player", t.now))
    elif action == "timeout":
        player = state.seats[seat].player_id if seat in state.seats else "nobody"
        t.apply(
            protection.end_session_of(state, player, "timeout", "2027-01-01T00:00:00.000Z", t.now)
        )
    elif action == "limits" and seat in state.seats and state.seats[seat].status != "left":
        limits = SessionLimits(
            data.draw(st.sampled_from([None, 1, 2])), data.draw(st.sampled_from([None, 3, 9]))
        )
        t.apply(protection.tighten_session_of(state, state.seats[seat].player_id, limits, t.now))
    elif action == "due":
        t.apply(clock.act_when_due(state, t.now))
    elif action == "later":
        t.now += timedelta(seconds=data.draw(st.integers(10, 200)))


def _redecided(log: list[ev.Event]) -> None:
    """Each protection event and forfeit is what the audit's re-decision makes."""
    state = TableState()
    for event in log:
        if isinstance(event, ev.DecisionMade):
            check_decision(state, event)
        elif isinstance(
            event,
            pe.PlayerAway
            | pe.PlayerBack
            | pe.ProtectionSet
            | pe.RealityCheck
            | pe.RealityCheckAnswered
            | pe.SessionEnded,
        ):
            check_protection(state, event)
        replay([event], state)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(players=st.integers(2, 4), data=st.data())
def test_chips_are_conserved_with_protection_events_drawn_at_random(players, data):
    declare = data.draw(st.sampled_from(["simultaneous", "sequential"]))
    t = Table(
        "three-card",
        players=players,
        declare=declare,
        away_after_missed=data.draw(st.integers(0, 2)),
    )
    for _ in range(data.draw(st.integers(10, 80))):
        roll = data.draw(st.integers(0, 9))
        try:
            if roll < 4:
                _protect(t, data.draw(st.sampled_from(PROTECTION_ACTIONS)), data)
            else:
                _step(t, _natural(t) if roll < 8 else "close", data)
        except GutsError:
            pass  # refused: no events
    assert replay(t.log).to_data() == t.state.to_data()  # (the harness checked every event)
    _redecided(t.log)


def test_lowered_limits_tighten_a_running_session_once_and_never_loosen_it():
    t = Table(players=2)
    t.apply(protection.protection_set(0, "p0", SessionLimits(60, 300), t.now))
    (tightened,) = t.apply(
        protection.tighten_session_of(t.state, "p0", SessionLimits(None, 30), t.now)
    )
    assert (tightened.reality_check_minutes, tightened.session_limit_minutes) == (60, 30)
    for looser in (SessionLimits(None, 30), SessionLimits(90, 45), SessionLimits()):
        with pytest.raises(protection.NothingToEnd):  # (a retry, or looser: nothing changes)
            protection.tighten_session_of(t.state, "p0", looser, t.now)
    with pytest.raises(protection.NothingToEnd):
        protection.tighten_session_of(t.state, "nobody", SessionLimits(1, 1), t.now)
