"""First come, first served: a gevent worker lets requests in a few at a time, in the order
they came, and live streams past without waiting.

A gevent worker runs every request it has accepted as a greenlet, and switches between them at
each wait (a Redis round trip, a socket read). Under load that is unfair: the hub resumes
whichever greenlet is ready, a request that has just arrived may run before one that has been
waiting, and a few requests wait for many others' turns. Measured with `bench_http` (2 workers
saturated by 32 clients, 2026-11-23): declare p50 5-11 ms but p99 47-94 ms, 2.65x the
baseline's p99 (with sync workers, which take requests one at a time from the kernel's queue,
1.3x); a plain lock around each request made it worse (p99 130-160 ms: a greenlet releasing it
is not the next to get it). The gate below hands a free place to the longest waiter, never to
a newcomer, so requests are served in the order they came, `at_once` at a time (more than one,
so that one request's Redis round trip overlaps another's work).

A request's body is read before it waits for a place and its answer is written after it left
it, so a client that sends or reads slowly holds no place. A request that holds its place
longer than `PATIENCE_S` no longer counts against `at_once`: the longest waiter takes a place
beside it. Requests take milliseconds; one that takes a quarter of a second is waiting on
something that stopped answering (a Redis master SIGSTOPped, whose commands wait out the
socket timeout, 1 s on a cluster, until the node is known to be stalled), and without this the
worker's two places held by a stopped master's tables held up every other table's requests
for that second (docs/chaos.md, "The other masters while one fails over").

Streams (`.../stream`) are not gated: they wait for events for minutes, and cost a greenlet
each, which is why the workers are gevent workers (docs/architecture.md, "The live feed and
the serving model").
"""

from __future__ import annotations

import collections
import io
import itertools
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

WsgiApp = Callable[[dict[str, Any], Any], Iterable[bytes]]


PATIENCE_S = 0.25
"""How long a place is held before its holder stops counting against `at_once` (see the
module doc)."""


class _Turn:
    """A waiter's turn: its `event` is set once it was handed a place (its `token`)."""

    __slots__ = ("event", "token")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.token = 0


class FifoGate:
    """At most `at_once` holders at work; a place that comes free goes to the longest waiter.
    A holder that has held its place longer than `patience_s` stops counting (the longest
    waiter may then enter beside it). `enter` returns the token to `leave` with."""

    def __init__(self, at_once: int, patience_s: float = PATIENCE_S) -> None:
        if at_once < 1:
            raise ValueError(f"at_once must be at least 1, not {at_once}")
        self.at_once = at_once
        self.patience_s = patience_s
        self._held: dict[int, float] = {}  # token -> when its holder entered (monotonic)
        self._tokens = itertools.count(1)
        self._waiting: collections.deque[_Turn] = collections.deque()
        self._lock = threading.Lock()

    def enter(self) -> int:
        """Wait for a place (at once while one is free and nobody waits); its token."""
        with self._lock:
            if not self._waiting and self._room():
                return self._hold()
            turn = _Turn()
            self._waiting.append(turn)
        # (A timed wait, for the patience: measured 2026-12-01, it also made the service's
        # requests cheaper under gunicorn's gevent workers, bench_http 0.42x -> 0.54x, where
        # the same gate waiting without a timeout did not; why is not understood yet.)
        try:
            while not turn.event.wait(self.patience_s):  # (handed a place: `leave` set it)
                with self._lock:  # a holder may have stopped counting meanwhile
                    if turn.event.is_set():
                        break
                    if self._waiting[0] is turn and self._room():
                        self._waiting.popleft()
                        return self._hold()
        except BaseException:  # (a waiter killed: its turn, or the place it was handed, back)
            with self._lock:
                placed = turn.event.is_set()
                if not placed:
                    self._waiting.remove(turn)
            if placed:
                self.leave(turn.token)
            raise
        return turn.token

    @property
    def waiting(self) -> int:
        """How many wait for a place."""
        return len(self._waiting)

    def leave(self, token: int) -> None:
        """Give the place of `token` to the longest waiter, or back."""
        with self._lock:
            del self._held[token]
            if self._waiting and self._room():
                turn = self._waiting.popleft()
                turn.token = self._hold()
                turn.event.set()

    def _room(self) -> bool:
        """Whether fewer than `at_once` holders count (those in for less than patience_s)."""
        if len(self._held) < self.at_once:
            return True
        since = time.monotonic() - self.patience_s
        return sum(1 for entered in self._held.values() if entered > since) < self.at_once

    def _hold(self) -> int:
        token = next(self._tokens)
        self._held[token] = time.monotonic()
        return token


PREREAD_BYTES = 1 << 20
"""Bodies up to this size are read before the request waits for a place (a larger one is the
app's to refuse: its limit is far below)."""


class Admission:
    """WSGI middleware: every request but a stream passes `gate` (see the module doc); the
    answer's body is produced inside, so the place is held for the whole of the work."""

    def __init__(self, wsgi_app: WsgiApp, at_once: int) -> None:
        self.wsgi_app = wsgi_app
        self.gate = FifoGate(at_once)

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        if environ.get("PATH_INFO", "").endswith("/stream"):
            return self.wsgi_app(environ, start_response)
        length = environ.get("CONTENT_LENGTH") or ""
        if length.isdigit() and 0 < int(length) <= PREREAD_BYTES:
            environ["wsgi.input"] = io.BytesIO(environ["wsgi.input"].read(int(length)))
        token = self.gate.enter()
        try:
            body = self.wsgi_app(environ, start_response)
            try:
                return [b"".join(body)]
            finally:
                close = getattr(body, "close", None)
                if close is not None:
                    close()
        finally:
            self.gate.leave(token)
