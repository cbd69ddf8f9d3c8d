"""Reading back what the protections store keeps: a player's limits and an outbox entry are
taken as they were written, and anything else is named as unreadable (ValueError), never
handed on to the rules half-formed."""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest

from service.rules.limit_changes import DEFAULT_PROFILE, change_limits, outbox_entry, profile
from service.rules.limit_changes import outbox_entry_from as entry_from
from service.rules.limits import Limits, limits_from

NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)


def _stored(limits: Limits) -> Any:
    """The record as the store writes it and reads it back (`set_limits`: JSON of asdict)."""
    return orjson.loads(orjson.dumps(asdict(limits)))


def _changed(before: Limits, asked: dict[str, Any]) -> Limits:
    return change_limits(before, asked, NOW, profile(DEFAULT_PROFILE))


@pytest.mark.parametrize(
    "limits",
    [
        Limits(),
        Limits(loss_limit_24h=0, reality_check_minutes=30, session_limit_minutes=120),
        Limits(excluded_until="2099-01-01T00:00:00.000Z", timeout_until="2027-01-01T00:00:00Z"),
    ],
)
def test_limits_as_written_are_read_back_equal(limits: Limits):
    assert limits_from(_stored(limits)) == limits


def test_limits_with_a_loosening_pending_are_read_back_equal():
    strict = _changed(Limits(), {"loss_limit_24h": 100, "excluded_until": None})
    loosened = _changed(strict, {"loss_limit_24h": None, "excluded_until": None})
    assert loosened.pending["loss_limit_24h"]["value"] is None  # (it waits out its 24 h)
    assert limits_from(_stored(loosened)) == loosened


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ([1, 2], "not an object"),
        ("garbage", "not an object"),
        ({"loss_limit": 5}, "unknown fields: loss_limit"),
        ({"loss_limit_24h": "lots"}, "loss_limit_24h is not a whole number"),
        ({"loss_limit_24h": 2.5}, "loss_limit_24h is not a whole number"),
        ({"loss_limit_24h": True}, "loss_limit_24h is not a whole number"),
        ({"reality_check_minutes": -1}, "reality_check_minutes is not a whole number"),
        ({"excluded_until": "soon"}, "excluded_until is not a time with its zone"),
        ({"timeout_until": "2099-01-01T00:00:00"}, "timeout_until is not a time with its zone"),
        ({"excluded_until": 7}, "excluded_until is not a time with its zone"),
        ({"pending": []}, "pending is not an object"),
        ({"pending": {"colour": {"value": 1, "effective_at": "2099-01-01T00:00:00Z"}}},
         "pending 'colour' is not a limit"),
        ({"pending": {"loss_limit_24h": 5}}, "is not a value with its effective_at"),
        ({"pending": {"loss_limit_24h": {"value": "x", "effective_at": "2099-01-01T00:00:00Z"}}},
         "loss_limit_24h is not a whole number"),
        ({"pending": {"loss_limit_24h": {"value": None, "effective_at": None}}},
         "effective_at is not a time with its zone"),
    ],
)  # fmt: skip
def test_anything_else_is_named_unreadable(fields: Any, words: str):
    with pytest.raises(ValueError, match=words):
        limits_from(fields)


def _entry() -> dict[str, Any]:
    before = Limits()
    after = _changed(before, {"timeout_until": "2099-01-01T00:00:00Z", "excluded_until": None})
    entry = outbox_entry(before, after, NOW)
    assert entry is not None
    return orjson.loads(orjson.dumps(entry))


def test_an_outbox_entry_as_written_is_read_back_equal():
    entry = _entry()
    assert entry["reason"] == "timeout"
    assert entry_from(entry) == entry
    lowered = outbox_entry(Limits(), Limits(session_limit_minutes=60), NOW)
    assert lowered is not None and lowered["reason"] is None
    assert entry_from(orjson.loads(orjson.dumps(lowered))) == lowered


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"id": None}, "id or reason"),
        ({"reason": "bored"}, "id or reason"),
        ({"reason": None}, "reason and until go together"),
        ({"until": None}, "reason and until go together"),
        ({"session_limit_minutes": "60"}, "session_limit_minutes is not a number of minutes"),
        ({"reality_check_minutes": 0}, "reality_check_minutes is not a number of minutes"),
        ({"at": "2026-12-07T12:00:00"}, "at has no zone"),
        ({"at": 5}, "at is not a time"),
        ({"at": None}, "no moment"),
        ({"until": "later"}, "Invalid isoformat"),
        ({"extra": 1}, "not an outbox entry's fields"),
    ],
)
def test_an_outbox_entry_that_is_not_one_is_named_unreadable(change: dict[str, Any], words: str):
    with pytest.raises(ValueError, match=words):
        entry_from({**_entry(), **change})
    with pytest.raises(ValueError, match="not an outbox entry's fields"):
        entry_from([_entry()])


def test_a_moment_a_day_ahead_is_still_a_moment():
    later = (NOW + timedelta(days=1)).isoformat()
    assert limits_from({"excluded_until": later}).excluded_until == later
