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
it, so a client that sends or reads slowly holds no place.

Streams (`.../stream`) are not gated: they wait for events for minutes, and cost a greenlet
each, which is why the workers are gevent workers (docs/architecture.md, "The live feed and
the serving model").
"""

from __future__ import annotations

import collections
import io
import threading
from collections.abc import Callable, Iterable
from typing import Any

WsgiApp = Callable[[dict[str, Any], Any], Iterable[bytes]]


class FifoGate:
    """At most `at_once` holders; a place that comes free goes to the longest waiter."""

    def __init__(self, at_once: int) -> None:
        if at_once < 1:
            raise ValueError(f"at_once must be at least 1, not {at_once}")
        self._free = at_once
        self._waiting: collections.deque[threading.Event] = collections.deque()
        self._lock = threading.Lock()

    def enter(self) -> None:
        """Wait for a place (returns at once while one is free and nobody waits)."""
        with self._lock:
            if self._free and not self._waiting:
                self._free -= 1
                return
            turn = threading.Event()
            self._waiting.append(turn)
        turn.wait()  # the place is handed over: `_free` was not given back

    @property
    def waiting(self) -> int:
        """How many wait for a place."""
        return len(self._waiting)

    def leave(self) -> None:
        """Give the place to the longest waiter, or back."""
        with self._lock:
            if self._waiting:
                self._waiting.popleft().set()
            else:
                self._free += 1


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
        self.gate.enter()
        try:
            body = self.wsgi_app(environ, start_response)
            try:
                return [b"".join(body)]
            finally:
                close = getattr(body, "close", None)
                if close is not None:
                    close()
        finally:
            self.gate.leave()
