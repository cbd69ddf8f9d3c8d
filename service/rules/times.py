"""Timestamps as the events store them: ISO 8601, UTC, milliseconds, a trailing Z.

The rules never read the clock; callers pass `now` as an aware datetime.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


def iso(moment: datetime) -> str:
    """`moment` as `2026-11-22T15:00:00.123Z`."""
    if moment.tzinfo is not UTC:
        moment = moment.astimezone(UTC)
    # isoformat is several times faster than strftime; its UTC offset "+00:00" becomes "Z".
    return moment.isoformat(timespec="milliseconds")[:-6] + "Z"


def parse_iso(text: str) -> datetime:
    """The aware datetime written by `iso` (CPython 3.11's fromisoformat reads the "Z")."""
    return datetime.fromisoformat(text)


def is_moment(value: object) -> bool:
    """Whether `value` is a time as stored: text that parses, with its zone."""
    try:
        return isinstance(value, str) and parse_iso(value).tzinfo is not None
    except ValueError:
        return False


def later(moment: datetime, seconds: float) -> str:
    """`moment` plus `seconds`, as `iso` writes it."""
    return iso(moment + timedelta(seconds=seconds))


_UNITS = (
    ("year", 365 * 86400),
    ("week", 7 * 86400),
    ("day", 86400),
    ("hour", 3600),
    ("minute", 60),
    ("second", 1),
)


def duration_words(length: timedelta) -> str:
    """`length` in words, as a person says it: "24 hours", "6 weeks", "5 years and 1 day"
    (years of 365 days; under two days in hours, as the standards write a day's break)."""
    left = int(length.total_seconds())
    if left <= 0:
        return "0 seconds"
    units = _UNITS[3:] if left < 2 * 86400 else _UNITS
    parts = []
    for name, size in units:
        count, left = divmod(left, size)
        if count:
            parts.append(f"{count} {name}{'' if count == 1 else 's'}")
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"
