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
    """The aware datetime written by `iso`."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def later(moment: datetime, seconds: float) -> str:
    """`moment` plus `seconds`, as `iso` writes it."""
    return iso(moment + timedelta(seconds=seconds))
