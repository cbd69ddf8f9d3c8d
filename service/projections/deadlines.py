"""Deadlines for outgoing HTTP calls (`service.projections.wallet_http`): a socket's timeout
bounds each read, not the call, so an answer sent a byte at a time would hold its caller for
as long as it dripped.

One watcher per process looks every `LOOK_S` at the calls under way and shuts down the socket
of each one past its deadline, which ends whatever read waits on it. A call costs the watcher
two dictionary operations under a lock (a timer thread per call cost the wallet's calls about
a tenth of a millisecond each, more on a busy machine: starting a thread waits for it to run).
A call ends within its timeout and `LOOK_S`. The watcher is a thread (a greenlet where gevent
patched the process: gunicorn's workers), started at the first call in each process.
"""

from __future__ import annotations

import itertools
import os
import socket
import threading
import time
from http.client import HTTPConnection

LOOK_S = 0.1
"""How often the watcher looks (how far past its deadline a call may run)."""


class Watcher:
    """The calls under way, by ticket: (deadline, connection, whether it was cut)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[int, tuple[float, HTTPConnection, threading.Event]] = {}
        self._tickets = itertools.count()
        self._running_in: int | None = None  # the pid whose watcher thread runs

    def watch(self, connection: HTTPConnection, timeout_s: float) -> tuple[int, threading.Event]:
        """Watch a call on `connection` that must end within `timeout_s`: its ticket (for
        `done`) and the event set if it was cut."""
        cut = threading.Event()
        with self._lock:
            if self._running_in != os.getpid():
                self._running_in = os.getpid()
                threading.Thread(target=self._run, name="http-deadlines", daemon=True).start()
            ticket = next(self._tickets)
            self._calls[ticket] = (time.monotonic() + timeout_s, connection, cut)
        return ticket, cut

    def done(self, ticket: int) -> None:
        with self._lock:
            self._calls.pop(ticket, None)

    def _run(self) -> None:
        while True:
            time.sleep(LOOK_S)
            now = time.monotonic()
            with self._lock:
                overdue = [t for t, (deadline, _, _) in self._calls.items() if deadline <= now]
                cut = [self._calls.pop(t) for t in overdue]
            for _, connection, event in cut:
                event.set()
                _shut(connection)

    def forget(self) -> None:
        """In a forked child: no thread runs here yet, and the parent's calls are not ours."""
        self._lock = threading.Lock()
        self._calls = {}
        self._running_in = None


def _shut(connection: HTTPConnection) -> None:
    """Shut the call's socket down (a connection not made yet is bounded by its connect
    timeout)."""
    sock = connection.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:  # (closed meanwhile)
            pass


WATCHER = Watcher()
"""This process's watcher."""
os.register_at_fork(after_in_child=WATCHER.forget)
