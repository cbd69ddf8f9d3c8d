"""A shortcut around redis-py's connection pool, retry wrapper and script object, for the
event store's two hot commands (a load's HMGET and an append's EVALSHA) and, through the
store's ``commands``, the two other round trips a request makes (the due index's record, the
loss limits' read): the process's own free list of connections, commands packed by hiredis.

For those two, measured 2026-12-01 (``tests/bench/bench_request_cost.py --gevent``, callgrind,
the same session): a hand's request went from 1,296 K to 1,134 K instructions (-12.5%; -8.3%
unpatched, 1,214 K to 1,113 K). Most of it is the pool's checkout, which asks whether the
connection has data waiting (``can_read``): under gevent that is a ``select.poll`` through
gevent's hub, 25-50 us a call against ~2 us for the system's own.

Worth it, measured (2026-11-26, ``tests/bench/bench_http.py --shortcuts``: real gunicorn and
wrk, the service with every shortcut and without this one taking turns with the baseline, 8
rounds; docs/benchmarks.md): without it the web workers spend 8.9% more CPU per declare
(median per round, +4.3% to +13.2%; 1,431 against 1,312 us), the worth that decides, since
the machine's two cores are saturated; declare throughput, which the shared machine swung by
half from one run to the next, changed by a median -15.5% (-31.0% to +49.4%; 628 against 705
declares/s, baseline 2,538); in two earlier runs (with a third shortcut, since removed) 4.8%
of the workers' CPU, and throughput fell by a median 14.6% in one, rose by 10.6% in the other.
It relies on redis-py's ``Connection`` (``send_packed_command``, ``read_response``,
``disconnect``) and the pool's ``connection_class`` and ``connection_kwargs``, so redis-py is
pinned to the major version it was checked against (8; pyproject.toml).
``GUTS_SHORTCUTS_OFF=redis_py_bypass`` leaves it out (the API, the dispatchers and the jobs:
``service.infrastructure.event_store``); the store contract suite runs against the plain path too
(``RedisEventStore(bypass_redis_py=False)``, which uses ``execute_command``), and CI runs the
API's tests on it (``--plain-requests``).

On a Redis Cluster (`ClusterCommands`) it is what lets the cluster keep up with one Redis
(tests/bench/bench_cluster.py, 2026-11-24, commands through ``Tables`` on 24 tables, 4
threads): through redis-py's cluster client 7,127 commands/s, 0.56x the single Redis with
the shortcut (12,656); with it 13,414, 1.06x (1 thread: 0.72x and 0.98x). The contract suite
runs on the cluster both ways, and tests/test_cluster.py moves a table's slot to another
master under it.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from typing import Any

import redis
from redis.cluster import RedisCluster
from redis.exceptions import RedisClusterException

from service.eventlog.fail_fast import STALLED
from service.eventlog.replication import REROUTED as _REROUTED
from service.eventlog.replication import rerouted

try:  # redis[hiredis] brings it; it packs a command in C
    from hiredis import pack_command as _hiredis_pack
except ImportError:  # pragma: no cover - redis-py's own packer then
    _hiredis_pack = None  # type: ignore[assignment]

__all__ = ["REREAD_S", "ClusterCommands", "DirectCommands", "direct_commands"]

REREAD_S = 0.05
"""How often at most a process reads the map of a cluster's slots again while a master is
away (each a ``CLUSTER SLOTS``): a replica's promotion is noticed that soon after."""


_forks = 0
"""How many forks lie between the first process and this one: a connection made before the
last fork belongs to the parent (comparing this is cheaper than asking for the pid)."""


def _after_fork_in_child() -> None:
    global _forks
    _forks += 1


os.register_at_fork(after_in_child=_after_fork_in_child)


class DirectCommands:
    """The process's connections for the store's hot commands, used without redis-py's pool
    (a lock and a pid check per command), retry wrapper and script object; commands are
    packed by hiredis directly (redis-py adds a pass over the arguments). A caller (a thread,
    or a greenlet under gunicorn's gevent workers) takes a free connection for one command
    and gives it back: a pop and an append on a list, each atomic under the GIL and never
    interrupted by gevent, so no two callers share one. At most `limit` connections are open
    (a connection holds ~43 KB of buffers: a burst of hundreds of streams opening at once must
    not leave hundreds of them behind): past that a caller waits for a free one, checking every
    few milliseconds (the wait is the only place with a lock; taking and giving back stay a pop
    and an append). A command that fails on a broken connection is sent again on a new one (up
    to `attempts` times), as redis-py's default retry would, and the free connections are
    dropped (a restarted Redis broke them all)."""

    def __init__(self, client: redis.Redis, attempts: int = 3, limit: int = 32) -> None:
        self._pool = client.connection_pool
        self._free: list[_Owned] = []
        self.attempts = attempts
        self.limit = limit
        self._opened = 0  # connections made in this process and not dropped
        self._counted_in = _forks  # the process `_opened` counts for
        self._generation = 0  # goes up when Redis broke the connections: older ones are dropped
        self._opening = threading.Lock()
        self._returned = threading.Event()
        self._waiting = 0  # callers waiting for a connection

    def _take(self) -> _Owned:
        while True:
            while self._free:
                owned = self._free.pop()
                if owned.forks == _forks and owned.generation == self._generation:
                    return owned  # not one the parent made before a fork, nor one from before
                if owned.forks == _forks:  # a restart of Redis: only ours count
                    self._dropped()
            with self._opening:
                if self._counted_in != _forks:  # a forked child: the parent's are not ours
                    self._opened, self._counted_in = 0, _forks
                if self._opened < self.limit:
                    self._opened += 1
                    made = self._pool.connection_class(**self._pool.connection_kwargs)
                    return _Owned(made, self._generation)
                self._returned.clear()
                self._waiting += 1
            try:
                self._returned.wait(0.005)
            finally:
                with self._opening:
                    self._waiting -= 1

    def _give_back(self, owned: _Owned) -> None:
        self._free.append(owned)
        if self._waiting:  # (read without the lock: a waiter missed looks again in 5 ms)
            self._returned.set()

    def _dropped(self) -> None:
        with self._opening:
            if self._counted_in == _forks:
                self._opened = max(0, self._opened - 1)

    def call(self, *args: Any) -> Any:
        """The reply to one command (Redis errors raise as redis-py raises them)."""
        return self.call_many(args)[0]

    def call_many(self, *commands: tuple[Any, ...]) -> list[Any]:
        """The replies to `commands`, sent together on one connection (so a ``WAIT`` after a
        write waits for that write); an error reply raises, once every reply was read."""
        for attempt in range(1, self.attempts + 1):
            owned = self._take()
            connection = owned.connection
            try:
                connection.send_packed_command(_packed(connection, commands))
                replies, refused = [], None
                for _ in commands:
                    try:
                        replies.append(connection.read_response())
                    except redis.ResponseError as error:  # an error reply: read on
                        replies.append(None)
                        refused = refused or error
            except redis.TimeoutError:
                # No answer in time (a stalled node): the same node would keep the next
                # attempt waiting as long, so the caller hears of it now (on a cluster, it goes
                # where the map says once it has been read again).
                connection.disconnect()
                self._dropped()
                raise
            except redis.ConnectionError:
                connection.disconnect()
                # The free ones were opened to the same server: after a restart they are all
                # broken, so the next attempt takes a new connection.
                self._dropped()
                self._generation += 1  # and those of the free list, when next taken
                if attempt == self.attempts:
                    raise
                continue
            except BaseException:
                # Anything else, say an interruption mid-reply, drops the connection (`owned`
                # closes it when it is collected).
                self._dropped()
                raise
            self._give_back(owned)  # (the connection is fine after an error reply)
            if refused is not None:
                raise refused
            return replies
        raise AssertionError("unreachable")


def direct_commands(client: redis.Redis) -> DirectCommands | ClusterCommands:
    """The shortcut for `client`: `DirectCommands`, or `ClusterCommands` when it is a cluster
    client."""
    if isinstance(client, RedisCluster):
        return ClusterCommands(client)
    return DirectCommands(client)


class ClusterCommands:
    """The same shortcut on a Redis Cluster: each command goes straight to the master that
    holds its key's slot, as redis-py's cluster client maps the slots (its public
    ``get_node_from_key`` and ``get_redis_connection``), over that node's `DirectCommands`.
    The key is the command's first (``HMGET key ...``; ``EVALSHA sha numkeys key ...``); every
    key of one command shares its slot (one table's hash tag).

    A master that cannot take a command (its connections refused: a node killed; none
    answered within the socket timeout: a node stalled) makes the client read the map of the
    slots again (at once: `_now_at`), and the command goes straight to the slot's new master
    if a replica has taken over, with its ``WAIT``: the first answer after a failover can be
    confirmed. While the map still names that master the command fails at once (503: the
    client tries again), and a stalled master is sent no command until it answers a ``PING``
    from a thread of the process's own (`StalledNodes`, shared with the API's cluster
    client), every command for it failing at once after reading the map (at most every
    `REREAD_S`) rather than each waiting a timeout out: the first command after the promotion
    goes to the new master. A command the node redirects (``MOVED``, ``ASK``: the slot moved)
    is sent again through the cluster client, which follows the redirect and refreshes its
    map. Sending again is safe for what goes this way: a read, or an append conditional on
    the version (a second append finds the first and is refused, or replayed by its
    idempotency key)."""

    def __init__(self, cluster: RedisCluster) -> None:
        self.cluster = cluster
        self._nodes: dict[str, DirectCommands] = {}
        self._making = threading.Lock()
        self._stalled = STALLED  # nodes that left a command unanswered, until one answers
        timeout = cluster.nodes_manager.connection_kwargs.get("socket_timeout")
        self._timeout_s = float(timeout or 1.0)  # (the pings' to a stalled node)
        self._read_at = 0.0  # when the map of the slots was last read again here

    def call(self, *args: Any) -> Any:
        """The reply to one command (Redis errors raise as redis-py's cluster client raises
        them)."""
        return self.call_many(args)[0]

    def call_many(self, *commands: tuple[Any, ...]) -> list[Any]:
        """The replies to `commands` (the first names the key: the others, a ``WAIT``, go
        with it to its master, on one connection). Redirected (see the class), the first is
        sent again through the cluster client and the others' replies are None (unknown: a
        ``WAIT`` on another connection would not wait for that write)."""
        first = commands[0]
        key = first[3] if first[0] == "EVALSHA" else first[1]
        try:
            node = self.cluster.get_node_from_key(key)  # type: ignore[no-untyped-call]
            if node.name in self._stalled:
                node = self._now_at(key, node)
            try:
                return self._sent(node, commands)
            except (redis.ConnectionError, redis.TimeoutError):
                moved = self._now_at(key, node)
                if moved.name == node.name:
                    raise  # the slot's master away: the caller answers 503 (the client tries again)
            return self._sent(moved, commands)
        except (redis.ConnectionError, redis.TimeoutError):
            raise  # (not sent again through the cluster client: to the same node)
        except _REROUTED:
            return rerouted(self.cluster, commands)

    def _sent(self, node: Any, commands: tuple[tuple[Any, ...], ...]) -> list[Any]:
        """`commands` sent to `node`, unless it has left one unanswered and not yet answered a
        ``PING`` again (`StalledNodes`): then refused unsent (a TimeoutError)."""
        name = node.name
        if name in self._stalled:
            raise redis.TimeoutError(f"{name} left a command unanswered: not sent")
        try:
            return (self._nodes.get(name) or self._node(node)).call_many(*commands)
        except redis.TimeoutError:
            self._stalled.stalled(name, self._timeout_s)
            raise

    def _now_at(self, key: Any, node: Any) -> Any:
        """The master of `key`'s slot after reading the map of the slots again from the nodes
        other than `node`, one that is away (at most every `REREAD_S`: else as last read)."""
        now = time.monotonic()
        if now - self._read_at >= REREAD_S:
            self._read_at = now
            with contextlib.suppress(RedisClusterException, redis.RedisError):
                # (as redis-py's own recovery calls it, the node away asked last)
                self.cluster.nodes_manager.initialize(last_failed_node_name=node.name)
        return self.cluster.get_node_from_key(key)  # type: ignore[no-untyped-call]

    def _node(self, node: Any) -> DirectCommands:
        with self._making:
            if node.name not in self._nodes:
                client = self.cluster.get_redis_connection(node)
                self._nodes[node.name] = DirectCommands(client)
            return self._nodes[node.name]


def _packed(connection: Any, commands: tuple[tuple[Any, ...], ...]) -> list[bytes]:
    """`commands` in Redis's protocol, in one buffer: redis-py's connection sends each part
    with a system call of its own (and, with TCP_NODELAY, a packet of its own), so several
    commands as one part cost one (redis-py's pipeline joins them so too, `pack_commands`)."""
    parts = [part for command in commands for part in _pack(connection, command)]
    return parts if len(parts) == 1 else [b"".join(parts)]


def _pack(connection: Any, args: tuple[Any, ...]) -> list[bytes]:
    """One command in Redis's protocol (arguments: bytes, str, int or float)."""
    if _hiredis_pack is None:
        packed: list[bytes] = connection.pack_command(*args)
        return packed
    try:
        return [_hiredis_pack(args)]
    except TypeError as error:  # as redis-py reports it
        raise redis.DataError(str(error)) from error


class _Owned:
    """A connection and the fork it was made in, closed as soon as it is dropped rather than
    whenever the garbage collector gets to the connection's reference cycles. (redis-py's
    disconnect leaves a socket inherited from the parent process open in the parent.)"""

    __slots__ = ("connection", "forks", "generation")

    def __init__(self, connection: Any, generation: int) -> None:
        self.connection = connection
        self.forks = _forks
        self.generation = generation

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.connection.disconnect()
