"""What the Redis event store makes of redis-py's errors and replies (`redis_store`), and
its scan of a Redis or a Redis Cluster."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import redis
from redis.cluster import RedisCluster

from service.eventlog.decoding import CorruptTable
from service.eventlog.store import StoreError, StoreUnavailable

__all__ = ["bytes_of", "redis_errors", "scan_keys", "store_error", "table_errors"]


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


@contextlib.contextmanager
def redis_errors() -> Iterator[None]:
    """Turn redis-py errors into the store's: unreachable Redis -> StoreUnavailable."""
    try:
        yield
    except redis.RedisError as error:
        raise store_error(error) from error


@contextlib.contextmanager
def table_errors(table_id: str, what: str) -> Iterator[None]:
    """`redis_errors` for commands on one table's keys: a key of the wrong type (someone
    wrote it outside the store) is that table's CorruptTable."""
    try:
        yield
    except redis.RedisError as error:
        raise store_error(error, table_id, what) from error


def store_error(error: redis.RedisError, table_id: str | None = None, what: str = "") -> StoreError:
    """The store's error for a redis-py error (on `table_id`'s key `what`, when given)."""
    if isinstance(error, redis.ConnectionError | redis.TimeoutError):
        return StoreUnavailable(f"Redis is unreachable: {error}")
    if table_id is not None and isinstance(error, redis.ResponseError):
        if "WRONGTYPE" in str(error):  # a key of the wrong type
            return CorruptTable(table_id, what, str(error)[:120])
    return StoreError(f"Redis refused the command: {error}")
