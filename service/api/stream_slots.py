"""How many live streams one node holds open at most: its stream capacity.

A gevent worker holds at most `worker_connections` sockets (and no more than its open-file
limit allows); past that it stops accepting. A stream holds its socket for minutes, so
without a cap streams took every socket and a plain command's connect timed out
(`bench_stream` with 10,000 subscribers on 2 workers of 2,000 connections). So a node admits
streams up to its capacity, which by default leaves each worker a tenth of its sockets (at
least `MIN_RESERVE`) for everything else; past it a new stream is refused at once with 503 and
`Retry-After` (the client goes to another node), and commands are always served: a worker
whose sockets are all taken stops accepting, and another, which has some left, takes the
connection.

The count is the node's, not a worker's (the kernel does not share connections out evenly):
the workers of one gunicorn share one array of counters in memory the master maps before it
forks them (as the state cache's tails, `service/tables/state_cache.py`), each worker writing
only its own counter, the node's count being their sum. A stream takes its place under a lock
the workers share, so two workers never both take the last one. A worker that dies (kill -9)
has its counter cleared by the master (`gunicorn_conf.child_exit`). The lock is waited for
`LOCK_WAIT_S` at most: should a worker die holding it, a stream opens unchecked (one over the
capacity at worst) rather than the node refusing every stream.
"""

from __future__ import annotations

import mmap
import multiprocessing
import resource
import struct

from .refusal import ApiError

MAX_WORKERS = 256
"""Workers of one node that have a counter (gunicorn's --workers is far below)."""
MIN_RESERVE = 100
"""Sockets each worker keeps for requests other than streams, at least (a tenth by default)."""
FILE_MARGIN = 256
"""Open files a worker needs besides its clients' sockets (Redis and PostgreSQL connections,
logs, the listening socket, shared memory)."""
LOCK_WAIT_S = 0.5

_COUNTERS = struct.Struct(f"<{MAX_WORKERS}q")


class StreamsFull(ApiError):
    """The node holds its capacity of streams: 503, open it on another node (with a
    `Retry-After` of its own: `service.api.errors`)."""

    status, title = 503, "Unavailable"


def raise_open_files(worker_connections: int) -> str | None:
    """Raise this process's soft limit of open files (its children inherit it) to what
    `worker_connections` clients need, within the hard limit; a warning when that is short."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = worker_connections + FILE_MARGIN
    if hard != resource.RLIM_INFINITY:
        wanted = min(wanted, hard)
    if wanted > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    if wanted < worker_connections + FILE_MARGIN:
        return (
            f"the hard limit of open files ({hard}) is below what {worker_connections} worker "
            f"connections need ({worker_connections + FILE_MARGIN}); the stream capacity is "
            "lowered to fit (raise `ulimit -Hn`)"
        )
    return None


def usable_connections(worker_connections: int) -> int:
    """The sockets one worker can hold: `worker_connections`, within its open-file limit."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(1, min(worker_connections, soft - FILE_MARGIN))


def default_capacity(worker_connections: int, workers: int) -> int:
    """The node's stream capacity when GUTS_STREAM_CAPACITY is not set: each worker's usable
    sockets less its reserve (a tenth, at least `MIN_RESERVE`, at most half)."""
    usable = usable_connections(worker_connections)
    reserve = max(min(MIN_RESERVE, usable // 2), usable // 10)
    return max(1, workers * (usable - reserve))


class StreamSlots:
    """The node's count of open streams against its `capacity` (see the module doc). Made
    before the workers are forked, it is shared by them; made in one process, it is that
    process's."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"a stream capacity is at least 1, not {capacity}")
        self.capacity = capacity
        self._counters = mmap.mmap(-1, _COUNTERS.size)  # MAP_SHARED: inherited by forks
        self._lock = multiprocessing.Lock()
        self._index = 0
        self._held = 0

    def assign(self, index: int) -> None:
        """In a worker just forked: `index` is its counter (given by the master)."""
        self._index, self._held = index, 0
        self._write(index, 0)

    def clear(self, index: int) -> None:
        """In the master: the worker that had counter `index` exited."""
        self._write(index, 0)

    def take(self) -> bool:
        """A place for one more stream, if the node has one."""
        acquired = self._lock.acquire(timeout=LOCK_WAIT_S)
        try:
            if self.open() >= self.capacity:
                return False
            self._held += 1
            self._write(self._index, self._held)
            return True
        finally:
            if acquired:
                self._lock.release()

    def give_back(self) -> None:
        """A stream of this process has ended."""
        acquired = self._lock.acquire(timeout=LOCK_WAIT_S)
        try:
            self._held = max(0, self._held - 1)
            self._write(self._index, self._held)
        finally:
            if acquired:
                self._lock.release()

    @property
    def held(self) -> int:
        """Streams this process holds open."""
        return self._held

    def open(self) -> int:
        """Streams the node holds open."""
        return sum(_COUNTERS.unpack_from(self._counters))

    def _write(self, index: int, value: int) -> None:
        struct.pack_into("<q", self._counters, 8 * index, value)


def free_index(taken: set[int]) -> int:
    """The lowest counter no live worker has."""
    return min(set(range(MAX_WORKERS)) - taken)


_shared: StreamSlots | None = None


def share_stream_slots(capacity: int) -> StreamSlots:
    """Make (once) the node's slots; call it before forking the workers."""
    global _shared
    if _shared is None:
        _shared = StreamSlots(capacity)
    return _shared


def inherited_slots() -> StreamSlots | None:
    """The slots this process made or inherited from the master, if any."""
    return _shared
