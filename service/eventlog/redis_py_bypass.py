"""A shortcut around redis-py's connection pool, retry wrapper and script object, for the
event store's two hot commands (a load's HMGET and an append's EVALSHA): the process's own
free list of connections, commands packed by hiredis.

Worth it, measured (tests/bench/bench_request_plumbing.py, declares through the WSGI app
in-process against a real Redis, variants ``new`` and ``new-plain-store`` taking turns, 8
rounds, 2026-11-23): the plain path costs 8.3% and 10.9% of declare throughput per CPU-second
(2,553 and 2,267 against 2,785 and 2,544 declares per CPU-second), 5.2% and 5.0% per
wall-clock second. It relies on redis-py's ``Connection`` (``send_packed_command``,
``read_response``, ``disconnect``) and the pool's ``connection_class`` and
``connection_kwargs``, so redis-py is pinned to the major version it was checked against
(pyproject.toml). The store contract suite runs against the plain path too
(``RedisEventStore(bypass_redis_py=False)``, which uses ``execute_command``).
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import redis

try:  # redis[hiredis] brings it; it packs a command in C
    from hiredis import pack_command as _hiredis_pack
except ImportError:  # pragma: no cover - redis-py's own packer then
    _hiredis_pack = None  # type: ignore[assignment]

__all__ = ["DirectCommands"]


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
    interrupted by gevent, so no two callers share one, and there are as many connections as
    commands ever ran at once. A command that fails on a broken connection is sent again on a
    new one (up to `attempts` times), as redis-py's default retry would, and the free
    connections are dropped (a restarted Redis broke them all)."""

    def __init__(self, client: redis.Redis, attempts: int = 3) -> None:
        self._pool = client.connection_pool
        self._free: list[_Owned] = []
        self.attempts = attempts

    def _take(self) -> _Owned:
        while self._free:
            owned = self._free.pop()
            if owned.forks == _forks:  # not one the parent made before a fork
                return owned
        return _Owned(self._pool.connection_class(**self._pool.connection_kwargs))

    def call(self, *args: Any) -> Any:
        """The reply to one command (Redis errors raise as redis-py raises them)."""
        for attempt in range(1, self.attempts + 1):
            owned = self._take()
            connection = owned.connection
            try:
                connection.send_packed_command(_pack(connection, args))
                reply = connection.read_response()
            except (redis.ConnectionError, redis.TimeoutError):
                connection.disconnect()
                # The free ones were opened to the same server: after a restart they are all
                # broken, so the next attempt takes a new connection.
                self._free.clear()
                if attempt == self.attempts:
                    raise
                continue
            except redis.ResponseError:  # an error reply: the connection is fine
                self._free.append(owned)
                raise
            # (Anything else, say an interruption mid-reply, drops the connection: `owned`
            # is not given back, and closes it when it is collected.)
            self._free.append(owned)
            return reply
        raise AssertionError("unreachable")


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

    __slots__ = ("connection", "forks")

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self.forks = _forks

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.connection.disconnect()
