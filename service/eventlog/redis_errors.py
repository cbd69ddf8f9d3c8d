"""What the Redis event store makes of redis-py's errors and replies (`redis_store`), and
its scan of a Redis or a Redis Cluster."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import redis
from redis.cluster import RedisCluster
from redis.exceptions import ClusterError, RedisClusterException, SlotNotCoveredError

from service.eventlog.decoding import CorruptTable
from service.eventlog.store import StoreError, StoreRefusesWrites, StoreUnavailable

__all__ = [
    "REDIS_ERRORS",
    "bytes_of",
    "demoted",
    "failing_over",
    "redis_away",
    "redis_errors",
    "refusing_writes",
    "scan_keys",
    "store_error",
    "table_errors",
]

_FAILOVER_REPLIES = (
    "UNBLOCKED",
    "READONLY",
    "WAIT cannot be used with replica",
    "MASTERDOWN",
    "LOADING",
    "CLUSTERDOWN",
    "TRYAGAIN",
    "BUSY",
)
"""How a Redis error reply starts when its node is being demoted or promoted, or the cluster
has no master for a slot yet: ``UNBLOCKED ... (master -> replica?)`` to a ``WAIT`` (or any
blocked command) on a master made a replica, ``READONLY`` to a write on it, ``WAIT cannot be
used with replica instances`` to a ``WAIT`` sent to it (after a script that wrote nothing),
``MASTERDOWN`` from a replica whose master is away, ``LOADING`` from a node reading its
files, ``CLUSTERDOWN`` and ``TRYAGAIN`` while slots move; and ``BUSY`` from a node running a
script longer than its ``busy-reply-threshold`` (someone else's: ours are short), until the
script ends or is killed (the command was not run)."""

REDIS_ERRORS = (redis.RedisError, RedisClusterException)
"""What redis-py raises for a Redis or a Redis Cluster: its cluster client's own errors
(RedisClusterException, such as a cluster none of whose nodes it can reach) are not
RedisErrors."""

_CLUSTER_AWAY = (
    "Redis Cluster cannot be connected",
    "startup_nodes could not agree",
    "All slots are not covered",
)
"""How redis-py's cluster client says, when it maps the cluster again (after a node went
away), that no node it knows answered, or that the nodes disagree or leave slots uncovered
(mid-failover)."""

FAILOVER_ERRORS = (
    redis.ConnectionError,
    redis.TimeoutError,
    ClusterError,
    SlotNotCoveredError,
    redis.exceptions.AskError,
    redis.exceptions.TryAgainError,
    redis.exceptions.ReadOnlyError,
)
"""redis-py's errors for a node that went away or whose role or slots are changing."""


def failing_over(error: BaseException) -> bool:
    """Whether `error` is what a command meets while its node goes away or a failover or a
    resharding is under way (so it may succeed once the cluster settles): unavailable, never
    an unexpected error."""
    if isinstance(error, FAILOVER_ERRORS):
        return True
    if isinstance(error, RedisClusterException):
        return str(error).startswith(_CLUSTER_AWAY)
    return isinstance(error, redis.ResponseError) and str(error).startswith(_FAILOVER_REPLIES)


def refusing_writes(error: BaseException) -> bool:
    """Whether `error` is a Redis that answers and takes no write: at its ``maxmemory`` with
    the ``noeviction`` policy (``OOM``), or unable to persist to its disk (``MISCONF``). The
    command wrote nothing (a script is refused at its first write), and the same command
    succeeds once memory is freed or the disk takes writes again."""
    if isinstance(error, redis.exceptions.OutOfMemoryError):
        return True
    return isinstance(error, redis.ResponseError) and str(error).startswith(("OOM", "MISCONF"))


def redis_away(error: BaseException) -> bool:
    """Whether `error` means the store's Redis cannot serve now (unreachable, a failover
    under way, or refusing writes): a loop waits it out and tries again, never a process that
    exits, nor a table set aside."""
    return isinstance(error, StoreUnavailable) or failing_over(error) or refusing_writes(error)


def scan_keys(client: redis.Redis, pattern: bytes) -> Iterator[bytes]:
    """The keys matching `pattern`, by SCAN. On a Redis Cluster each master is scanned
    through its own connection, from the client's map of the masters as it is now: redis-py's
    cluster ``scan_iter`` keys its cursors by node name and fails with a KeyError when a
    failover changes a node's name mid-scan. A master gone away raises a connection error
    (the caller waits for the cluster), and a master scanned twice across a failover gives
    its keys twice (callers deduplicate)."""
    if not isinstance(client, RedisCluster):
        yield from client.scan_iter(match=pattern, count=1000)
        return
    for node in client.get_primaries():
        node_client = client.get_redis_connection(node)
        yield from node_client.scan_iter(match=pattern, count=1000)


def bytes_of(value: object) -> bytes:
    """``value`` as returned by a bytes client; anything else means a misconfigured client."""
    if not isinstance(value, bytes):
        raise StoreError(f"expected bytes from Redis, got {type(value).__name__}")
    return value


def demoted(error: Exception) -> bool:
    """An error an append and its ``WAIT`` meet when their master is demoted mid-call (a
    ``WAIT`` unblocked, a write refused as READONLY, the cluster down or redirecting): the
    append may have been made on the master, and not confirmed (unreachable Redis stays
    StoreUnavailable, as without replicas)."""
    unreachable = isinstance(error, redis.ConnectionError | redis.TimeoutError)
    return failing_over(error) and not unreachable


@contextlib.contextmanager
def redis_errors() -> Iterator[None]:
    """Turn redis-py errors into the store's: unreachable Redis -> StoreUnavailable."""
    try:
        yield
    except REDIS_ERRORS as error:
        raise store_error(error) from error


@contextlib.contextmanager
def table_errors(table_id: str, what: str) -> Iterator[None]:
    """`redis_errors` for commands on one table's keys: a key of the wrong type (someone
    wrote it outside the store) is that table's CorruptTable."""
    try:
        yield
    except REDIS_ERRORS as error:
        raise store_error(error, table_id, what) from error


def store_error(error: Exception, table_id: str | None = None, what: str = "") -> StoreError:
    """The store's error for a redis-py error (on `table_id`'s key `what`, when given): Redis
    unreachable or failing over is StoreUnavailable (503), never an unexpected error."""
    if isinstance(error, redis.ConnectionError | redis.TimeoutError):
        return StoreUnavailable(f"Redis is unreachable: {error}")
    if failing_over(error):
        return StoreUnavailable(f"Redis is failing over: {str(error)[:120]}")
    if refusing_writes(error):
        return StoreRefusesWrites(f"Redis refuses writes: {str(error)[:120]}")
    if table_id is not None and isinstance(error, redis.ResponseError):
        if "WRONGTYPE" in str(error):  # a key of the wrong type
            return CorruptTable(table_id, what, str(error)[:120])
    return StoreError(f"Redis refused the command: {error}")
