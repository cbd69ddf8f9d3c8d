"""Durations in words, as the 422 messages print them (never a raw timedelta such as
"42 days, 0:00:00")."""

from __future__ import annotations

from datetime import timedelta

import pytest

from service.rules.times import duration_words


@pytest.mark.parametrize(
    ("length", "words"),
    [
        (timedelta(days=1), "24 hours"),
        (timedelta(days=42), "6 weeks"),
        (timedelta(days=5 * 365 + 1), "5 years and 1 day"),
        (timedelta(days=2, hours=3), "2 days and 3 hours"),
        (timedelta(days=9, hours=1, minutes=2), "1 week, 2 days, 1 hour and 2 minutes"),
        (timedelta(minutes=1), "1 minute"),
        (timedelta(seconds=90), "1 minute and 30 seconds"),
        (timedelta(0), "0 seconds"),
    ],
)
def test_a_duration_is_said_in_words(length: timedelta, words: str):
    assert duration_words(length) == words
