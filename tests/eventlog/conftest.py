"""The event stores under test: every contract test runs once per store."""

from __future__ import annotations

import pytest

from service.eventlog.memory import InMemoryEventStore
from service.eventlog.redis_store import RedisEventStore
from service.eventlog.store import EventStore


@pytest.fixture(params=["memory", "redis", "redis-plain", "redis-cluster", "redis-cluster-plain"])
def store(request: pytest.FixtureRequest) -> EventStore:
    """An empty event store of each kind (Redis: the session's server, flushed; "redis-plain"
    without the shortcut around redis-py, service/eventlog/redis_py_bypass.py;
    "redis-cluster" a real 3-master Redis Cluster, the hot commands sent to their slot's
    master by the shortcut; "redis-cluster-plain" all through redis-py's cluster client)."""
    if request.param == "memory":
        return InMemoryEventStore()
    if request.param.startswith("redis-cluster"):
        cluster = request.getfixturevalue("cluster_client")
        return RedisEventStore(
            cluster, prefix="test", bypass_redis_py=request.param == "redis-cluster"
        )
    client = request.getfixturevalue("redis_client")
    return RedisEventStore(client, prefix="test", bypass_redis_py=request.param == "redis")
