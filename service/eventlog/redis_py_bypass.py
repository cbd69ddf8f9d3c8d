"""A shortcut around redis-py's connection pool, retry wrapper and script object, for the
event store's two hot commands (a load's HMGET and an append's EVALSHA): one connection per
thread and process, commands packed by hiredis.

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
import threading
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
    """One connection per thread and process, for the store's hot commands, used without
    redis-py's pool (a lock and a pid check per command), retry wrapper and script object;
    commands are packed by hiredis directly (redis-py adds a pass over the arguments). A
    command that fails on a broken connection is sent again on a new one (up to `attempts`
    times), as redis-py's default retry would."""

    def __init__(self, client: redis.Redis, attempts: int = 3) -> None:
        self._pool = client.connection_pool
        self._local = threading.local()
        self.attempts = attempts

    def _connection(self) -> Any:
        owned = getattr(self._local, "owned", None)
        if owned is None or owned.forks != _forks:  # first use here, or in a forked child
            connection = self._pool.connection_class(**self._pool.connection_kwargs)
            owned = self._local.owned = _Owned(connection)
        return owned.connection

    def call(self, *args: Any) -> Any:
        """The reply to one command (Redis errors raise as redis-py raises them)."""
        for attempt in range(1, self.attempts + 1):
            connection = self._connection()
            try:
                connection.send_packed_command(_pack(connection, args))
                return connection.read_response()
            except (redis.ConnectionError, redis.TimeoutError):
                connection.disconnect()
                if attempt == self.attempts:
                    raise
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
    """One thread's connection, closed as soon as the thread ends (its thread-local value,
    this object, is then released) rather than whenever the garbage collector gets to the
    connection's reference cycles. (redis-py's disconnect leaves a socket inherited from
    the parent process open in the parent.)"""

    __slots__ = ("connection", "forks")

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self.forks = _forks

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.connection.disconnect()
