"""Responsible gaming in the rules: a player's room under their 24 h loss limit.

The rules never read the ledger or the clock: the use cases pass each player's `Allowance`
(their limit and their 24 h net loss, from the ledger) into `declare` and `deal`, and the
exclusion's end into `seat_player`. docs/rules.md, "Responsible gaming".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from .errors import RuleViolation
from .settlement import most_owed
from .state import TableState
from .times import duration_words, is_moment, parse_iso

COOL_DOWN = timedelta(hours=24)
"""After a session limit ends a player's session, no seat at any of the tenant's tables for this
long (the shortest break the UKGC RTS and the AGCO standards know: 24 hours)."""


@dataclass(frozen=True)
class Limits:
    """A player's responsible-gaming limits in one tenant (None: no limit, not excluded, no
    time-out)."""

    loss_limit_24h: int | None = None
    excluded_until: str | None = None
    reality_check_minutes: int | None = None
    session_limit_minutes: int | None = None
    timeout_until: str | None = None
    # Loosening changes waiting out their 24 h: {field: {"value", "effective_at"}}
    # (limit_changes.py).
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)


_COUNTS = ("loss_limit_24h", "reality_check_minutes", "session_limit_minutes")
_MOMENTS = ("excluded_until", "timeout_until")


def limits_from(fields: Any) -> Limits:
    """The `Limits` of a stored record (a JSON object of its fields); ValueError naming what
    is wrong when `fields` is not one: each count a whole number or null, each moment a time
    with its zone or null, `pending` an object of such values with their `effective_at`."""
    if not isinstance(fields, dict):
        raise ValueError("not an object")
    unknown = set(fields) - {*_COUNTS, *_MOMENTS, "pending"}
    if unknown:
        raise ValueError(f"unknown fields: {', '.join(sorted(map(str, unknown)))}")
    pending = fields.get("pending", {})
    if not isinstance(pending, dict):
        raise ValueError("pending is not an object")
    for name, change in pending.items():
        if name not in (*_COUNTS, *_MOMENTS):
            raise ValueError(f"pending {name!r} is not a limit")
        if not isinstance(change, dict) or set(change) != {"value", "effective_at"}:
            raise ValueError(f"pending {name!r} is not a value with its effective_at")
        _check(name, change["value"])
        if not is_moment(change["effective_at"]):
            raise ValueError("effective_at is not a time with its zone")
    for name in (*_COUNTS, *_MOMENTS):
        _check(name, fields.get(name))
    return Limits(**fields)


def _check(name: str, value: Any) -> None:
    """ValueError unless `value` is null or, as `name` is a count or a moment, a whole number
    or a time with its zone."""
    if value is None:
        return
    if name in _MOMENTS and not is_moment(value):
        raise ValueError(f"{name} is not a time with its zone")
    if name in _COUNTS and (type(value) is not int or value < 0):
        raise ValueError(f"{name} is not a whole number")


class LossLimitReached(RuleViolation):
    """Declaring in could take the player past their 24 h loss limit."""


class PlayerExcluded(RuleViolation):
    """The player has excluded themselves (or been excluded) from play until a date."""


class CoolingDown(RuleViolation):
    """The player's session limit ended a session less than `COOL_DOWN` ago."""


@dataclass(frozen=True)
class Allowance:
    """A player's 24 h loss `limit` and their `net_loss` over the last 24 hours."""

    limit: int
    net_loss: int

    @property
    def left(self) -> int:
        """How much more the player may lose (negative: already past the limit)."""
        return self.limit - self.net_loss


def verify_within_limit(
    state: TableState, seat: int, decision: str, allowance: Allowance | None
) -> None:
    """Declaring `decision` must not risk more than the player has left under their limit;
    `out` always may."""
    if allowance is None or decision == "out":
        return
    owed = most_owed(state, seat, decision)
    if owed > allowance.left:
        raise LossLimitReached(
            f"declaring {decision} could make the 24 h net loss of the player at seat {seat} "
            f"exceed their loss limit of {allowance.limit}: they have lost "
            f"{allowance.net_loss} in the last 24 hours and could owe up to {owed} in this hand"
        )


def verify_may_pay_in(player_id: str, allowance: Allowance | None) -> None:
    """A player whose 24 h net loss has reached their loss limit brings no more money to a
    table from the casino's wallet (a seat or top-up paid by a debit) until it is back under
    it: what they could stake with it is what the limit keeps them from losing."""
    if allowance is not None and allowance.left <= 0:
        raise LossLimitReached(
            f"player {player_id!r} has reached their loss limit of {allowance.limit}: they "
            f"have lost {allowance.net_loss} in the last 24 hours, so no debit of the wallet "
            "for them until that is back under the limit"
        )


def can_ante(due: int, allowance: Allowance | None) -> bool:
    """Whether paying an ante of `due` keeps the player within their loss limit."""
    return allowance is None or due <= allowance.left


def verify_not_excluded(player_id: str, excluded_until: str | None, now: datetime) -> None:
    """An excluded player cannot be seated until their exclusion ends (`excluded_until`, as
    `times.iso` writes it)."""
    if excluded_until is not None and now < parse_iso(excluded_until):
        raise PlayerExcluded(
            f"player {player_id!r} is excluded from play (or on a time-out) until {excluded_until}"
        )


def cooling_down_until(cool_down_until: str | None, now: datetime) -> str | None:
    """The end of a cool-down that still runs at `now` (None: none, or it has ended)."""
    if cool_down_until is not None and now < parse_iso(cool_down_until):
        return cool_down_until
    return None


def verify_cooled_down(player_id: str, cool_down_until: str | None, now: datetime) -> None:
    """A player whose session limit ended a session cannot be seated at the tenant's tables
    until its cool-down ends (`cool_down_until`, as `times.iso` writes it)."""
    if cooling_down_until(cool_down_until, now) is not None:
        raise CoolingDown(
            f"player {player_id!r} reached their session limit: no seat at this operator's "
            f"tables for {duration_words(COOL_DOWN)}, until {cool_down_until}"
        )
