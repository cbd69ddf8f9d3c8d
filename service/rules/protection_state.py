"""How player protection's events change a table's state (`evolve`'s share of them), and the
count of deadlines a seat missed in a row."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import protection_events as pe
from .table_state import TableState


def count_missed(state: TableState, seat: int, by: str) -> None:
    """A deadline the player at `seat` let pass (the platform acted: `by` "platform") counts;
    an action of their own starts the count again."""
    holder = state.seats.get(seat)
    if holder is None:
        return
    if by == "platform":
        holder.missed += 1
    elif by == "player":
        holder.missed = 0


def _protection_set(state: TableState, e: pe.ProtectionSet) -> None:
    seat = state.seats[e.seat]
    seat.reality_check_minutes = e.reality_check_minutes
    seat.session_limit_minutes = e.session_limit_minutes


def _reality_check(state: TableState, e: pe.RealityCheck) -> None:
    seat = state.seats[e.seat]
    seat.checks = e.number
    seat.check_pending = True


def _answered(state: TableState, e: pe.RealityCheckAnswered) -> None:
    state.seats[e.seat].check_pending = False


def _away(state: TableState, e: pe.PlayerAway) -> None:
    state.seats[e.seat].away = True


def _back(state: TableState, e: pe.PlayerBack) -> None:
    seat = state.seats[e.seat]
    seat.away, seat.missed = False, 0


def _session_ended(state: TableState, e: pe.SessionEnded) -> None:
    state.seats[e.seat].leaving = e.reason


PROTECTION_APPLY: dict[type[Any], Callable[[TableState, Any], None]] = {
    pe.ProtectionSet: _protection_set,
    pe.RealityCheck: _reality_check,
    pe.RealityCheckAnswered: _answered,
    pe.PlayerAway: _away,
    pe.PlayerBack: _back,
    pe.SessionEnded: _session_ended,
}
