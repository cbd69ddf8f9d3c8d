"""When time matters to a table: its next due moment, and what the platform does then.

The platform acts on a table without a player only when time says so:

- a waiting phase (passing, declaring, drawing) whose deadline passed: it closes it for the
  players who let it pass (`close_at_deadline`);
- a hand whose declarations are complete, under the `auto_resolve` option: it resolves it at
  once (`resolve`);
- a game whose cover grace ended with players still short: they sit out (`enforce_cover`);
- player protection (protection.py): a reality check or a session limit that falls due, a
  player away or whose session ended to be made out of the hand in play, or cashed out.

A deadline the platform closes can leave a player `away_after_missed` deadlines missed in a
row: they go away in the same step.

`next_due(state)` says which of these comes next and when; `act_when_due(state, now)` returns
the events of that action once its moment has come. Whatever runs the clock (the dispatcher,
an operator's close) asks these two instead of looking at phases itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from . import events as ev
from .commands import close_at_deadline, enforce_cover, resolve, short_of_cover
from .errors import RuleViolation
from .protection import Duty as ProtectionDuty
from .protection import act_on, away_after_missed, protection_dues
from .state import SHOWDOWN, TIMED_PHASES, TableState
from .times import parse_iso

CLOSE = "close"
"""A waiting phase's deadline: the platform acts for the players who let it pass."""
RESOLVE = "resolve"
"""Declarations are complete and the table resolves by itself (`auto_resolve`)."""
ENFORCE_COVER = "enforce_cover"
"""The cover grace ended: players who still cannot cover sit out the rest of the game."""


class NothingDue(RuleViolation):
    """Nothing falls due on the table at this moment."""


@dataclass(frozen=True)
class Due:
    """The next thing the platform does on a table by itself, and from when (`at`, ISO UTC)."""

    action: str
    at: str
    seat: int | None = None  # the seat a protection action is for

    @property
    def epoch(self) -> float:
        """`at` in seconds since the epoch."""
        return parse_iso(self.at).timestamp()


def next_due(state: TableState) -> Due | None:
    """What falls due next on the table, if anything will without a player acting (the
    earliest of the game's and protection's)."""
    game = _game_due(state)
    duties = protection_dues(state)
    if not duties:  # (the usual case: no moment to compare)
        return game
    dues = [Due(d.action, d.at, d.seat) for d in duties]
    if game is not None:
        dues.insert(0, game)
    return min(dues, key=lambda due: parse_iso(due.at))


def _game_due(state: TableState) -> Due | None:
    hand = state.hand
    if hand is not None:
        if hand.phase in TIMED_PHASES:
            return Due(CLOSE, hand.deadline)
        if hand.phase == SHOWDOWN and state.rules.auto_resolve:
            # Due from the moment the declarations completed, which is before any time the
            # state records after the deal: the deal's time says "now" to any later clock.
            return Due(RESOLVE, hand.dealt_at)
        return None
    if state.grace_until is not None and short_of_cover(state):
        return Due(ENFORCE_COVER, state.grace_until)
    return None


def act_when_due(state: TableState, now: datetime) -> list[ev.Event]:
    """The events of the action due at `now`; `NothingDue` when nothing is (yet)."""
    due = next_due(state)
    if due is None:
        raise NothingDue("nothing falls due on this table")
    if now < parse_iso(due.at):
        raise NothingDue(f"the next {due.action} is due at {due.at}")
    if due.action == CLOSE:
        closed = close_at_deadline(state, now)
        return [*closed, *away_after_missed(state, closed, now)]
    if due.action == RESOLVE:
        return resolve(state, now)
    if due.action == ENFORCE_COVER:
        return enforce_cover(state, now)
    assert due.seat is not None
    done = act_on(state, ProtectionDuty(due.action, due.at, due.seat), now)
    if not done:
        raise NothingDue(f"nothing to do for seat {due.seat} now")
    return done
