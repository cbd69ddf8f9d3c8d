"""`decide(state, now, command)`: every game command, as a value, is decided by its own rules
function, exactly as a direct call to that function decides it, and the state is left as it
was."""

from __future__ import annotations

import typing
from collections.abc import Callable
from datetime import datetime

import pytest

from service.rules import clock, commands, protection
from service.rules import events as ev
from service.rules.decide import (
    ActWhenDue,
    AnswerRealityCheck,
    Bet,
    CloseAtDeadline,
    ComeBack,
    Command,
    CreateTable,
    Deal,
    Declare,
    Draw,
    EndSession,
    EndTable,
    GoAway,
    Leave,
    PassCard,
    Resolve,
    SeatPlayer,
    SetClientSeed,
    SitIn,
    SitOut,
    TightenSession,
    TopUp,
    VoidHand,
    decide,
)
from service.rules.errors import RuleViolation
from service.rules.limits import Allowance, LossLimitReached
from service.rules.protection import SessionLimits
from service.rules.ruleset import resolve_ruleset
from service.rules.state import TableState

from .harness import START, Table

# Seat 1 draws into aces; the order is 1, 2, 0 (the button is seat 0).
CARDS = {"1": ["2c", "7d", "9h"], "2": ["Ks", "Kh", "3d"], "0": ["4c", "6d", "8s"], "next": ["As"]}
RULES = resolve_ruleset("three-card")


def _new() -> Table:
    return Table(players=3)


def _sat_out() -> Table:
    t = _new()
    t.apply(commands.sit_out(t.state, 0, t.now))
    return t


def _dealt(**rules: object) -> Table:
    t = Table(players=3, **rules)
    t.deal()
    return t


def _passing() -> Table:
    t = Table(players=3, pass_the_trash=True)
    t.deal(CARDS)
    return t


def _drawing(**rules: object) -> Table:
    t = Table(players=3, draw=2, **rules)
    t.deal(CARDS)
    t.declare({seat: "in" for seat in t.state.hand.order})
    return t


def _betting() -> Table:
    t = _drawing(betting_round=True)
    for seat in t.state.hand.order:
        t.apply(commands.draw(t.state, seat, [], t.now))
    return t


def _declared() -> Table:
    t = _dealt()
    t.declare({seat: "in" for seat in t.state.hand.order})
    return t


def _away() -> Table:
    t = _new()
    t.apply(protection.go_away(t.state, 0, "player", t.now))
    return t


def _checked() -> Table:
    t = Table(players=3)
    t.apply(protection.protection_set(0, "p0", protection.SessionLimits(1, None), t.now))
    t.tick(61)
    t.apply(clock.act_when_due(t.state, t.now))
    return t


def _past_deadline() -> Table:
    t = _dealt()
    t.tick(RULES.decision_timeout_s + 1)
    return t


Direct = Callable[[TableState, datetime], list[ev.Event]]
CASES: list[tuple[Command, Callable[[], Table], Direct]] = [
    (
        CreateTable("t2", RULES, b"s" * 32, "casino-a"),
        lambda: Table(players=0),
        lambda s, now: commands.create_table("t2", RULES, now, b"s" * 32, "casino-a"),
    ),
    (
        SeatPlayer("p9", 50, 5, None),
        _new,
        lambda s, now: commands.seat_player(s, "p9", 50, now, 5, None),
    ),
    (TopUp(0, 5), _new, lambda s, now: commands.top_up(s, 0, 5, now)),
    (SitOut(0), _new, lambda s, now: commands.sit_out(s, 0, now)),
    (SitIn(0), _sat_out, lambda s, now: commands.sit_in(s, 0, now)),
    (Leave(0), _new, lambda s, now: commands.leave(s, 0, now)),
    (SetClientSeed(0, "mine"), _new, lambda s, now: commands.set_client_seed(s, 0, "mine", now)),
    (
        Deal(b"x" * 32, "client", None, b"y" * 32, {"p0": Allowance(1000, 0)}),
        _new,
        lambda s, now: commands.deal(
            s, b"x" * 32, now, "client", None, b"y" * 32, {"p0": Allowance(1000, 0)}
        ),
    ),
    (Declare(1, "in"), _dealt, lambda s, now: commands.declare(s, 1, "in", now)),
    (PassCard(1, "2c"), _passing, lambda s, now: commands.pass_card(s, 1, "2c", now)),
    (Draw(1, ("2c",)), _drawing, lambda s, now: commands.draw(s, 1, ["2c"], now)),
    (Bet(1, "check"), _betting, lambda s, now: commands.bet(s, 1, "check", now)),
    (CloseAtDeadline(), _past_deadline, commands.close_at_deadline),
    (Resolve(), _declared, commands.resolve),
    (VoidHand("a misdeal"), _dealt, lambda s, now: commands.void_hand(s, "a misdeal", now)),
    (EndTable(), _new, commands.end_table),
    (GoAway(1, "player"), _dealt, lambda s, now: protection.go_away(s, 1, "player", now)),
    (ComeBack(0, "operator"), _away, lambda s, now: protection.come_back(s, 0, "operator", now)),
    (
        AnswerRealityCheck(0, "stop", "player"),
        _checked,
        lambda s, now: protection.answer_reality_check(s, 0, "stop", "player", now),
    ),
    (
        EndSession("p1", "timeout", "2027-01-01T00:00:00.000Z"),
        _dealt,
        lambda s, now: protection.end_session_of(
            s, "p1", "timeout", "2027-01-01T00:00:00.000Z", now
        ),
    ),
    (
        TightenSession("p1", SessionLimits(5, None)),
        _dealt,
        lambda s, now: protection.tighten_session_of(s, "p1", SessionLimits(5, None), now),
    ),
    (ActWhenDue(), _past_deadline, clock.act_when_due),
]


def test_every_command_type_has_a_case_here():
    assert {type(command) for command, _, _ in CASES} == set(typing.get_args(Command))


@pytest.mark.parametrize(
    ("command", "table", "direct"), CASES, ids=[type(c).__name__ for c, _, _ in CASES]
)
def test_each_command_is_decided_by_its_own_rules_function(
    command: Command, table: Callable[[], Table], direct: Direct
):
    t = table()
    before = t.state.to_data()
    events = decide(t.state, t.now, command)
    assert events and t.state.to_data() == before  # decided, and nothing changed
    assert events == direct(t.state, t.now)


def test_a_command_is_refused_as_its_rules_function_refuses_it():
    t = _dealt()
    with pytest.raises(RuleViolation) as direct:
        commands.top_up(t.state, 1, 5, t.now)
    with pytest.raises(RuleViolation) as decided:
        decide(t.state, t.now, TopUp(1, 5))
    assert (type(decided.value), str(decided.value)) == (type(direct.value), str(direct.value))


def test_the_application_s_look_ups_reach_the_rules_through_the_command():
    t = _dealt(ante=10)
    spent = Allowance(limit=10, net_loss=10)  # nothing left to lose: declaring in could
    with pytest.raises(LossLimitReached):
        decide(t.state, t.now, Declare(1, "in", spent))
    assert decide(t.state, t.now, Declare(1, "in"))  # without a limit, in is allowed
    excluded = SeatPlayer("p9", 50, excluded_until="2026-11-23T00:00:00Z")
    with pytest.raises(RuleViolation, match="exclu"):
        decide(_new().state, START, excluded)


def test_anything_else_is_no_command():
    with pytest.raises(AssertionError):
        decide(TableState(), START, "deal")  # type: ignore[arg-type]
