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
fails at once, but the retries with their back-off took ~1 s. (The rate limiter's storage, a
cluster client the ``limits`` library builds, takes this connection class too:
`service.infrastructure.rate_limit_storage`.)

`FailFastConnection`, the connection class of the API's cluster clients:

- a node that has left a command unanswered within the socket timeout is *stalled*
  (`StalledNodes`) until it answers again, which a thread of the process's own learns by
  sending it a ``PING`` (one at a time, each with the same timeout): no command is sent to it
  meanwhile, every one is refused unsent (`_NodeStalled`) at once, so a stopped master holds
  no request but those already waiting on it when it stopped (before, it was sent one
  request's command at a time, to learn whether it answered: that request waited out the
  socket timeout, taking one of a web worker's two places, again and again until the
  promotion);
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
from redis.backoff import NoBackoff
from redis.retry import Retry

__all__ = ["STALLED", "FailFastConnection", "StalledNodes"]


class _NodeStalled(redis.TimeoutError):
    """A node left a command unanswered (this one, or another: this one was not sent)."""


class _NodeDown(redis.ConnectionError):
    """A node refused a connection."""


class StalledNodes:
    """The nodes (``host:port``) that have left a command unanswered, each until it answers a
    ``PING`` from a thread (a greenlet under gevent) that this process runs for it meanwhile:
    any reply, an error reply too, or a refused connection (a node killed: its commands fail
    at once) ends the stall; only silence keeps it."""

    def __init__(self) -> None:
        self._stalled: dict[str, tuple[threading.Thread, float]] = {}  # name -> pinger, timeout
        self._lock = threading.Lock()

    def __contains__(self, name: str) -> bool:
        watch = self._stalled.get(name)
        if watch is None:
            return False
        if not watch[0].is_alive():  # (a forked child's: its parent's thread is not its own)
            self.stalled(name, watch[1], again=True)
        return True

    def stalled(self, name: str, timeout_s: float, *, again: bool = False) -> None:
        """`name` left a command unanswered within `timeout_s`: it is stalled until it
        answers a PING (each sent with that timeout)."""
        with self._lock:
            watch = self._stalled.get(name)
            if watch is not None and (watch[0].is_alive() or not again):
                return
            pinger = threading.Thread(
                target=self._ping, args=(name, timeout_s), daemon=True, name=f"ping {name}"
            )
            self._stalled[name] = (pinger, timeout_s)
        pinger.start()

    def _ping(self, name: str, timeout_s: float) -> None:
        host, _, port = name.rpartition(":")
        client = redis.Redis(
            host=host,
            port=int(port),
            socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
            retry=Retry(NoBackoff(), 0),
        )
        try:
            while True:
                began = time.monotonic()
                try:
                    client.ping()
                    break
                except redis.TimeoutError:
                    client.connection_pool.disconnect()  # (its reply would come late)
                except redis.RedisError:  # an error reply, a refused connection: not silent
                    break
                time.sleep(max(0.0, 0.05 - (time.monotonic() - began)))  # (at most 20 a second)
        finally:
            client.close()
            with self._lock:
                if self._stalled.get(name, (None,))[0] is threading.current_thread():
                    del self._stalled[name]


STALLED = StalledNodes()
"""The process's stalled nodes (the cluster clients of one process share them: a node stalls
for all)."""


class FailFastConnection(redis.Connection):
    """A connection that refuses a command to a stalled node unsent, and fails without being
    sent again by redis-py's cluster client (see the module doc)."""

    stalled_nodes = STALLED

    @property
    def _name(self) -> str:
        return f"{self.host}:{self.port}"

    def _refuse_if_stalled(self) -> None:
        if self._name in self.stalled_nodes:
            raise _NodeStalled(f"{self._name} left a command unanswered: not sent")

    def _stalled(self, error: redis.TimeoutError) -> _NodeStalled:
        self.stalled_nodes.stalled(self._name, self.socket_timeout or 1.0)
        return _NodeStalled(str(error))

    def connect(self) -> None:
        self._refuse_if_stalled()
        try:
            super().connect()  # type: ignore[no-untyped-call]
        except (_NodeStalled, _NodeDown):
            raise
        except redis.TimeoutError as error:  # (the connection's handshake unanswered)
            raise self._stalled(error) from error
        except redis.ConnectionError as error:
            raise _NodeDown(str(error)) from error

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        self._refuse_if_stalled()
        super().send_packed_command(command, check_health)  # type: ignore[no-untyped-call]

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().read_response(*args, **kwargs)
        except _NodeStalled:
            raise
        except redis.TimeoutError as error:
            if "timeout" in kwargs:  # (a read of its own timeout: a subscriber's)
                raise
            raise self._stalled(error) from error


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
