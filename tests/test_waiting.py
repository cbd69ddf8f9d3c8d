"""tests/waiting.py, on real time with small bounds (what is asserted is what was returned or
raised, never how long it took)."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from tests.waiting import eventually, holds_within


def _answers(*values: object) -> Callable[[], object]:
    """A `found` that gives `values` in turn, then its last one for ever."""
    given = itertools.chain(values, itertools.repeat(values[-1]))
    return lambda: next(given)


def test_eventually_returns_the_first_true_value() -> None:
    assert eventually(_answers(None, 0, [], "here", "later"), 5, "here") == "here"


def test_eventually_fails_naming_what_it_waited_for_once_the_bound_passed() -> None:
    asked = itertools.count()
    with pytest.raises(AssertionError, match=r"^not within 0.1 s: the light green$"):
        eventually(lambda: next(asked) < 0, 0.1, "the light green", every_s=0.01)
    assert next(asked) >= 2  # asked again after the first answer, and once at the deadline


def test_eventually_adds_its_detail_to_the_failure() -> None:
    with pytest.raises(AssertionError, match=r"not within 0 s: ready\nthe log says why"):
        eventually(lambda: False, 0, "ready", detail=lambda: "the log says why")


def test_the_named_exceptions_count_as_not_yet() -> None:
    def found() -> str:
        answer = answers()
        if isinstance(answer, Exception):
            raise answer
        return str(answer)

    answers = _answers(ConnectionError("refused"), TimeoutError("slow"), "up")
    assert eventually(found, 5, "up", tolerate=(ConnectionError, TimeoutError)) == "up"
    answers = _answers(ConnectionError("refused"), KeyError("a bug"))
    with pytest.raises(KeyError):  # not named: it is the test's failure, at once
        eventually(found, 5, "up", tolerate=(ConnectionError,))


def test_a_named_exception_still_raised_at_the_deadline_is_the_failures_cause() -> None:
    def refused() -> bool:
        raise ConnectionError("refused")

    with pytest.raises(AssertionError, match="not within 0.05 s: up") as failed:
        eventually(refused, 0.05, "up", every_s=0.01, tolerate=(ConnectionError,))
    assert isinstance(failed.value.__cause__, ConnectionError)
    with pytest.raises(ConnectionError):
        holds_within(refused, 0.05, every_s=0.01, tolerate=(ConnectionError,))


def test_holds_within_returns_the_first_true_value_or_the_last_false_one() -> None:
    assert holds_within(_answers(0, 7, 8), 5) == 7
    assert holds_within(_answers(None, 0), 0.1, every_s=0.01) == 0
    assert holds_within(_answers([]), 0) == []  # asked once: the bound had passed
