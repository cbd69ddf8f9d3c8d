"""Checks shared by the commands: the table exists, a seat is held, an amount is sane."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from .errors import GutsError, InvalidCommand, RuleViolation, UnknownSeat
from .ruleset import MAX_CHIPS
from .state import LEFT, Hand, Seat, TableState
from .times import parse_iso


def can(verify: Callable[..., Any], *args: Any) -> bool:
    """The yes/no form of a `verify_*` check."""
    try:
        verify(*args)
    except GutsError:
        return False
    return True


def require_table(state: TableState) -> None:
    """The table must exist, and not have ended."""
    if not state.exists:
        raise RuleViolation("the table does not exist")
    if state.ended:
        raise RuleViolation("the table has ended: it takes no more commands (it can be read)")


def require_phase(state: TableState, phase: str) -> Hand:
    """The hand in play, which must be in `phase`."""
    require_table(state)
    hand = state.hand
    if hand is None:
        raise RuleViolation("no hand is in play")
    if hand.phase != phase:
        raise RuleViolation(f"hand {hand.number} is not {phase} (it is {hand.phase})")
    return hand


def require_in_time(hand: Hand, now: datetime) -> None:
    """The hand's current deadline must not have passed."""
    if now >= parse_iso(hand.deadline):
        raise RuleViolation(f"the deadline passed at {hand.deadline}")


def require_amount(value: int, name: str, minimum: int = 1) -> None:
    """`value` must be a whole number of chips in range."""
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= MAX_CHIPS:
        raise InvalidCommand(f"{name} must be a whole number from {minimum} to {MAX_CHIPS}", name)


def seat_holder(state: TableState, seat: int) -> Seat:
    """The player at `seat` (who has not left)."""
    holder = state.seats.get(seat)
    if holder is None or holder.status == LEFT:
        raise UnknownSeat(f"seat {seat} is empty")
    return holder


def in_live_hand(state: TableState, seat: int) -> bool:
    """Whether `seat` is dealt into the hand in play."""
    return state.hand is not None and seat in state.hand.order
