"""Changing a player's limits: tightening takes effect at once, loosening after 24 h; and the
tenant profiles that set a tenant's players' defaults (docs/api.md, "Player protection").

Stricter is a smaller number (`loss_limit_24h`, `reality_check_minutes`,
`session_limit_minutes`; None: no limit, the loosest) and a later end (`timeout_until`,
`excluded_until`; an end in the past or None: not on a break). A change that loosens a limit
waits in `pending` ({field: {"value", "effective_at"}}) for 24 h; `effective(limits, now)`
applies what has come due. Nothing here reads the clock.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from .errors import InvalidCommand
from .limits import Limits
from .times import duration_words, iso, parse_iso

COOLING_OFF = timedelta(hours=24)
AMOUNTS = ("loss_limit_24h", "reality_check_minutes", "session_limit_minutes")
BREAKS = ("timeout_until", "excluded_until")


@dataclass(frozen=True)
class Profile:
    """A tenant's profile: its players' default limits, and the lengths a time-out and an
    exclusion may have (None: any)."""

    name: str
    defaults: Limits
    timeout: tuple[timedelta, timedelta] | None = None
    exclusion: tuple[timedelta, timedelta] | None = None


_DAY = timedelta(days=1)
DEFAULT_PROFILE = "default"
"""The profile of a tenant that chose none."""
PROFILES: dict[str, Profile] = {
    DEFAULT_PROFILE: Profile(DEFAULT_PROFILE, Limits()),
    # UKGC RTS: reality checks (an hour unless the player chooses), time-outs of 24 h to 6
    # weeks, self-exclusion of 6 months to 5 years.
    "ukgc": Profile(
        "ukgc",
        Limits(reality_check_minutes=60),
        (_DAY, 42 * _DAY),
        (182 * _DAY, 5 * 365 * _DAY + _DAY),
    ),
    # AGCO: breaks of a day to three months.
    "agco": Profile("agco", Limits(reality_check_minutes=60), (_DAY, 92 * _DAY)),
}


def profile(name: str) -> Profile:
    """The profile called `name` (InvalidCommand naming `profile` when there is none)."""
    found = PROFILES.get(name)
    if found is None:
        raise InvalidCommand(f"profile must be one of: {', '.join(PROFILES)}", "profile")
    return found


def effective(limits: Limits, now: datetime) -> Limits:
    """`limits` with every pending change whose 24 h have passed applied."""
    due = {k: p for k, p in limits.pending.items() if parse_iso(p["effective_at"]) <= now}
    if not due:
        return limits
    rest = {k: p for k, p in limits.pending.items() if k not in due}
    values = {k: p["value"] for k, p in due.items()}
    return replace(limits, **values, pending=rest)


def _stricter(name: str, new: Any, old: Any, now: datetime) -> bool:
    if name in BREAKS:
        if old is None or parse_iso(old) <= now:
            return True  # not on a break: anything starts (or stays off) at once
        return new is not None and parse_iso(new) >= parse_iso(old)
    return new is not None and (old is None or new <= old)


def _check_break(name: str, until: str | None, now: datetime, rules: Profile) -> None:
    if until is None:
        return
    length = parse_iso(until) - now
    if length <= timedelta(0):
        raise InvalidCommand(f"{name} must be in the future", name)
    bounds = rules.timeout if name == "timeout_until" else rules.exclusion
    if bounds is not None and not bounds[0] <= length <= bounds[1]:
        shortest, longest = (duration_words(bound) for bound in bounds)
        raise InvalidCommand(
            f"under the {rules.name} profile, {name} must be {shortest} to {longest} away",
            name,
        )


def change_limits(
    current: Limits, asked: Mapping[str, Any], now: datetime, rules: Profile
) -> Limits:
    """`current` (as in effect at `now`) changed as `asked` (field: new value): a stricter
    value at once (dropping any pending change of that field), a looser one pending for 24 h.
    A new time-out or exclusion must be in the future (and as long as the profile allows)."""
    limits = effective(current, now)
    pending = dict(limits.pending)
    values: dict[str, Any] = {}
    for name, new in asked.items():
        old = getattr(limits, name)
        if new == old:
            pending.pop(name, None)
            continue
        if name in BREAKS and new is not None:
            if parse_iso(new) <= now:
                raise InvalidCommand(f"{name} must be in the future", name)
            if old is None or parse_iso(new) > parse_iso(old):
                _check_break(name, new, now, rules)
        if _stricter(name, new, old, now):
            values[name] = new
            pending.pop(name, None)
        else:
            pending[name] = {"value": new, "effective_at": iso(now + COOLING_OFF)}
    return replace(limits, **values, pending=pending)


def blocked_until(limits: Limits, now: datetime) -> str | None:
    """The end of the player's time-out or exclusion, whichever ends later (None: neither
    runs at `now`)."""
    ends = [u for u in (limits.timeout_until, limits.excluded_until) if u and parse_iso(u) > now]
    return max(ends, key=parse_iso) if ends else None


def _lowered(before: int | None, after: int | None) -> bool:
    return after is not None and (before is None or after < before)


def outbox_entry(before: Limits, after: Limits, now: datetime) -> dict[str, Any] | None:
    """What of the change from `before` to `after` (both in effect at `now`) the player's
    sessions at the tables must take at once, or None: a time-out or exclusion that started
    (`reason`, `until`), a reality check or session limit lowered. The entry carries the break
    running and both session limits as they now are (the newest entry carries everything), its
    moment (`at`) and an `id` derived from them (the tables' idempotency key)."""
    until = blocked_until(after, now)
    started = until is not None and until != blocked_until(before, now)
    lowered = _lowered(before.reality_check_minutes, after.reality_check_minutes) or _lowered(
        before.session_limit_minutes, after.session_limit_minutes
    )
    if not (started or lowered):
        return None
    entry: dict[str, Any] = {
        "reason": None if until is None else _break_reason(after, until),
        "until": until,
        "reality_check_minutes": after.reality_check_minutes,
        "session_limit_minutes": after.session_limit_minutes,
        "at": iso(now),
    }
    digest = hashlib.sha256(json.dumps(entry, sort_keys=True).encode()).hexdigest()[:16]
    return {"id": digest, **entry}


def outbox_entry_from(fields: Any) -> dict[str, Any]:
    """An outbox entry as stored (`outbox_entry`'s), checked; ValueError naming what is wrong
    when `fields` is not one."""
    if not isinstance(fields, dict) or set(fields) != _ENTRY_FIELDS:
        raise ValueError("not an outbox entry's fields")
    if not isinstance(fields["id"], str) or fields["reason"] not in (None, "excluded", "timeout"):
        raise ValueError("an outbox entry's id or reason is not one")
    if (fields["reason"] is None) != (fields["until"] is None):
        raise ValueError("an outbox entry's reason and until go together")
    for name in ("reality_check_minutes", "session_limit_minutes"):
        value = fields[name]
        if value is not None and (type(value) is not int or value <= 0):
            raise ValueError(f"an outbox entry's {name} is not a number of minutes")
    for name in ("until", "at"):
        if fields[name] is not None and not isinstance(fields[name], str):
            raise ValueError(f"an outbox entry's {name} is not a time")
        if fields[name] is not None and parse_iso(fields[name]).tzinfo is None:
            raise ValueError(f"an outbox entry's {name} has no zone")
    if fields["at"] is None:
        raise ValueError("an outbox entry has no moment")
    return fields


_ENTRY_FIELDS = {"id", "reason", "until", "reality_check_minutes", "session_limit_minutes", "at"}


def _break_reason(limits: Limits, until: str) -> str:
    return "excluded" if until == limits.excluded_until else "timeout"
