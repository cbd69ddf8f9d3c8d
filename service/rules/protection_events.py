"""Player protection's events (docs/rules.md, "Player protection"): the limits a seated
player's session runs under, reality checks and their answers, away and back, and a session
ended by its limit, a time-out, an exclusion or the player's own stop.

`protection_set`, `reality_check`, `reality_check_answered` and `session_ended` are the
player's own: only that seat, operators and auditors see them (views.py). Away and back are
public (the table shows who is away). A cash-out these cause is an ordinary `player_left`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .event_base import Event


@dataclass(frozen=True)
class ProtectionSet(Event):
    """The limits the session at `seat` runs under from now: a reality check every
    `reality_check_minutes` of it, and its end at `session_limit_minutes` (None: none)."""

    TYPE: ClassVar[str] = "protection_set"
    seat: int
    player_id: str
    reality_check_minutes: int | None
    session_limit_minutes: int | None
    at: str


@dataclass(frozen=True)
class RealityCheck(Event):
    """Check number `number` of the session at `seat`: `minutes_played` since the player sat
    down, and `net_result`, the chips they have now minus the chips they brought (buy-in and
    top-ups). They are dealt out of new hands until they answer `continue`."""

    TYPE: ClassVar[str] = "reality_check"
    seat: int
    player_id: str
    number: int
    minutes_played: int
    net_result: int
    at: str
    hand: int | None = None  # the hand in play then (its history keeps this event)


@dataclass(frozen=True)
class RealityCheckAnswered(Event):
    """The answer to the pending reality check at `seat`: "continue" or "stop" (the player
    leaves at the next moment they may). `by` is "player" or "operator"."""

    TYPE: ClassVar[str] = "reality_check_answered"
    seat: int
    answer: str
    by: str
    at: str
    hand: int | None = None  # the hand in play then (its history keeps this event)


@dataclass(frozen=True)
class PlayerAway(Event):
    """The player at `seat` is away: dealt out (no ante, no cards) until back. `reason`:
    "player", "operator", or "missed_deadlines" (`away_after_missed` in a row)."""

    TYPE: ClassVar[str] = "player_away"
    seat: int
    reason: str
    at: str
    hand: int | None = None  # the hand in play then (its history keeps this event)


@dataclass(frozen=True)
class PlayerBack(Event):
    """The away player at `seat` is back; dealt in from the next hand. `by`: "player" or
    "operator"."""

    TYPE: ClassVar[str] = "player_back"
    seat: int
    by: str
    at: str
    hand: int | None = None  # the hand in play then (its history keeps this event)


@dataclass(frozen=True)
class SessionEnded(Event):
    """The session at `seat` ends: `reason` is "session_limit", "timeout", "excluded" or
    "stopped" (the player's answer to a reality check). The player is made out of the hand in
    play if they have not declared, and cashed out (`player_left`) once no hand holds them.
    `until`: when the player may be seated again at the tenant's tables: the end of the
    time-out or exclusion, or of the 24 h cool-down a session limit starts (None for "stopped",
    and for a session limit in logs written before it was given)."""

    TYPE: ClassVar[str] = "session_ended"
    seat: int
    reason: str
    until: str | None
    at: str
    hand: int | None = None  # the hand in play then (its history keeps this event)
