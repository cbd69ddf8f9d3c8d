"""Requests that fail at once, rather than wait, while a Redis Cluster master is away: for the
API's cluster client, whose every command is a request's (issue 31, "Where a failover's time
goes" in docs/chaos.md).

A gunicorn web worker admits two requests into the app at a time (service/api/admission.py).
The event store's commands fail fast on their own (`ClusterCommands`), but a request also
reaches Redis through redis-py's cluster client: the due index's record after an append, the
ledger's limits before a deal, the quarantine list. On a stopped master (SIGSTOP) each of
those waited out the socket timeout, and redis-py sent it again, up to 10 times, to the same
master until a replica took over (3.4-4.4 s): two of them held both of a worker's places, so
every table the worker served waited with the failed master's. On a killed one each attempt
fails at once, but the retries with their back-off took ~1 s. (The rate limiter's storage has
a client of its own, built by the ``limits`` library, which does not take a connection class:
not covered; by default it reaches Redis only after a failed authentication, and with
per-key limits (`GUTS_RATE_LIMIT_KEYS`) for an operator's or a tenant's every request.)

`FailFastConnection`, the connection class of the API's cluster client:

- a node that has left a command unanswered within the socket timeout (`StalledNodes`) is
  sent one command at a time, to learn whether it answers again; every other command for it
  is refused unsent (`_NodeStalled`), so a stopped master holds at most one request per
  process, for at most the socket timeout at a time;
- a command unanswered, or a node that refuses a connection (`_NodeDown`), fails with a class
  of its own, which redis-py's cluster client does not send again (it retries only the exact
  classes ``ConnectionError`` and ``TimeoutError``; it still reads the map of the slots again,
  so the next command goes to a promoted replica): the request answers 503 with Retry-After
  (a store unavailable) and the client tries again.

What a request does not wait for is covered elsewhere: the due index's record is best effort
(a dispatcher's repair records a table the index lacks within seconds), the other reads
answer 503. A command redis-py sends on a connection that broke otherwise (a restarted node,
an idle connection closed) is sent again as before.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import redis

__all__ = ["STALLED", "FailFastConnection", "StalledNodes"]


class _NodeStalled(redis.TimeoutError):
    """A node left a command unanswered (this one, or another: this one was not sent)."""


class _NodeDown(redis.ConnectionError):
    """A node refused a connection."""


class StalledNodes:
    """The nodes (``host:port``) that have left a command unanswered, until one answers, and
    of those the ones a command is being sent to now (at most one each; a send that neither
    answered nor failed within `hold_s` no longer counts: its connection was abandoned; longer
    than the socket timeout, 1 s by default, or a second command may be sent meanwhile)."""

    def __init__(self, hold_s: float = 5.0) -> None:
        self.hold_s = hold_s
        self._stalled: set[str] = set()
        self._probing: dict[str, float] = {}  # node -> until when its probe counts
        self._lock = threading.Lock()

    def __contains__(self, name: str) -> bool:
        return name in self._stalled

    def probing(self, name: str) -> bool:
        """Whether a command is being sent to the stalled node `name` now."""
        return self._probing.get(name, 0.0) > time.monotonic()

    def take_probe(self, name: str) -> None:
        """Let one command go to the stalled node `name`; _NodeStalled if one is under way."""
        with self._lock:
            if self.probing(name):
                raise _NodeStalled(f"{name} left a command unanswered: not sent")
            self._probing[name] = time.monotonic() + self.hold_s

    def end_probe(self, name: str) -> None:
        self._probing.pop(name, None)

    def stalled(self, name: str) -> None:
        self._stalled.add(name)

    def answered(self, name: str) -> None:
        self._stalled.discard(name)


STALLED = StalledNodes()
"""The process's stalled nodes (the cluster clients of one process share them: a node stalls
for all)."""


class FailFastConnection(redis.Connection):
    """A connection that refuses a command to a stalled node unsent, and fails without being
    sent again by redis-py's cluster client (see the module doc)."""

    stalled_nodes = STALLED

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[no-untyped-call]
        self._probe = False  # this connection is sending the one command to a stalled node

    @property
    def _name(self) -> str:
        return f"{self.host}:{self.port}"

    def connect(self) -> None:
        try:
            super().connect()  # type: ignore[no-untyped-call]
        except (_NodeStalled, _NodeDown):
            raise
        except redis.TimeoutError as error:  # (the connection's handshake unanswered)
            self.stalled_nodes.stalled(self._name)
            raise _NodeStalled(str(error)) from error
        except redis.ConnectionError as error:
            raise _NodeDown(str(error)) from error

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        if not self._probe and self._name in self.stalled_nodes:
            self.stalled_nodes.take_probe(self._name)
            self._probe = True
        try:
            super().send_packed_command(command, check_health)  # type: ignore[no-untyped-call]
        except BaseException:
            self._end_probe()
            raise

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        try:
            reply = super().read_response(*args, **kwargs)
        except _NodeStalled:
            raise
        except redis.TimeoutError as error:
            if "timeout" in kwargs:  # (a read of its own timeout: a subscriber's)
                raise
            self.stalled_nodes.stalled(self._name)
            raise _NodeStalled(str(error)) from error
        finally:
            self._end_probe()
        self.stalled_nodes.answered(self._name)
        return reply

    def disconnect(self, *args: Any, **kwargs: Any) -> None:
        self._end_probe()
        super().disconnect(*args, **kwargs)  # type: ignore[no-untyped-call]

    def _end_probe(self) -> None:
        if self._probe:
            self._probe = False
            self.stalled_nodes.end_probe(self._name)


def reread_at_most_every(cluster: Any, every_s: float) -> None:
    """Make `cluster` (a redis-py cluster client) read the map of the slots after a failed
    command at most every `every_s`: it reads it after each (``initialize`` with the failed
    node's name), and with `FailFastConnection` a stalled master's commands fail by the
    hundred (each read is a ``CLUSTER SLOTS`` and drops the free connections of the node
    asked). Other reads (after a redirect, at start) are left as they are."""
    manager = cluster.nodes_manager
    initialize = manager.initialize
    last = [0.0]

    def throttled(*args: Any, **kwargs: Any) -> None:
        if kwargs.get("last_failed_node_name") is not None:
            now = time.monotonic()
            if now - last[0] < every_s:
                return
            last[0] = now
        initialize(*args, **kwargs)

    manager.initialize = throttled
