"""Waiting, in the tests, for something the system does in its own time (a process starting, a
dispatcher acting on a deadline, a gauge coming down), by asking again and again until it holds.

It answers two questions:

- `eventually`: does it come to hold within the bound? Its first true value, or the test fails
  with an AssertionError naming what was awaited (and, with `detail`, what the system said).
- `holds_within`: whether it holds within the bound, for the caller to decide: its first true
  value, or the last (false) one once the bound has passed. For a wait whose failure is not the
  test's failure (a read-back that records what is missing), or one asserted the other way.

The bound is never a measure of speed: it is how long a busy machine may take. `found()` is
asked once more at (or after) the deadline before giving up, so that a slow last question is
not lost. `every_s` is the pause between questions (fine for threads in this process, coarser
for a question that costs a request). `tolerate` names the exceptions that `found()` may raise
while the thing is not there yet (a server still starting, a connection refused): they count as
a false value, and the last one, if the bound passes on it, is raised (by `eventually`, as the
cause of its AssertionError)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

EVERY_S = 0.05


def eventually(
    found: Callable[[], T | None],
    within_s: float,
    what: str,
    *,
    every_s: float = EVERY_S,
    tolerate: tuple[type[Exception], ...] = (),
    detail: Callable[[], object] | None = None,
) -> T:
    """The first true value of `found()` within `within_s` (never None); else AssertionError("not
    within {within_s} s: {what}"), followed by `detail()` when given (a server's output, the last
    state seen)."""
    try:
        value = holds_within(found, within_s, every_s=every_s, tolerate=tolerate)
    except tolerate as error:
        raise AssertionError(_not_within(within_s, what, detail)) from error
    if not value:
        raise AssertionError(_not_within(within_s, what, detail))
    return value


def holds_within(
    found: Callable[[], T],
    within_s: float,
    *,
    every_s: float = EVERY_S,
    tolerate: tuple[type[Exception], ...] = (),
) -> T:
    """The first true value of `found()` within `within_s`, else its last (false) value; the
    last call's exception instead when it raised one of `tolerate`."""
    deadline = time.monotonic() + within_s
    while True:
        last = time.monotonic() >= deadline
        try:
            value = found()
        except tolerate:
            if last:
                raise
        else:
            if value or last:
                return value
        time.sleep(every_s)


def _not_within(within_s: float, what: str, detail: Callable[[], object] | None) -> str:
    said = f"not within {within_s} s: {what}"
    return said if detail is None else f"{said}\n{detail()}"
