"""The Redis clients a process uses, built one way for all: the *store's* Redis (tables,
indexes, projections, tokens, audit records, the live feed's notices), which may be a Redis
Cluster (``GUTS_REDIS_CLUSTER=1``: ``REDIS_URL`` names one of its nodes), and the *queues'*
Redis (RQ's jobs), which must be a plain Redis because RQ cannot run on a cluster
(``GUTS_QUEUE_REDIS_URL``; by default the store's)."""

from __future__ import annotations

from typing import cast

import redis
from redis.cluster import RedisCluster

from service.config import Settings

CONNECTIONS = 32
"""Connections a process opens to Redis at most (per node of a cluster)."""


def store_client(
    settings: Settings, *, connections: int = CONNECTIONS, wait_s: float = 10.0
) -> redis.Redis:
    """A client of the store's Redis (a cluster client with ``GUTS_REDIS_CLUSTER``); at most
    `connections` connections (per node), a caller waiting up to `wait_s` for a free one."""
    url = _required(settings.redis_url)
    if settings.redis_cluster:
        return cast(redis.Redis, RedisCluster.from_url(url, max_connections=connections))
    pool = redis.BlockingConnectionPool.from_url(url, max_connections=connections, timeout=wait_s)
    return redis.Redis(connection_pool=pool)


def queue_url(settings: Settings) -> str:
    """Where RQ's queues are: ``GUTS_QUEUE_REDIS_URL``, else the store's Redis (`Settings`
    refuses a cluster without the former)."""
    return settings.queue_redis_url or _required(settings.redis_url)


def queue_client(settings: Settings, store: redis.Redis) -> redis.Redis:
    """A client of the queues' Redis: its own with ``GUTS_QUEUE_REDIS_URL``, else `store`
    (the store's client, shared)."""
    return redis.Redis.from_url(settings.queue_redis_url) if settings.queue_redis_url else store


def _required(url: str | None) -> str:
    if not url:
        raise ValueError("REDIS_URL is not set")
    return url
