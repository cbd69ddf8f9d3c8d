"""The event stores under test: every contract test runs once per store."""

from __future__ import annotations

import pytest

from service.eventlog.memory import InMemoryEventStore
from service.eventlog.redis_store import RedisEventStore
from service.eventlog.store import EventStore


@pytest.fixture(params=["memory", "redis", "redis-plain"])
def store(request: pytest.FixtureRequest) -> EventStore:
    """An empty event store of each kind (Redis: the session's server, flushed; "redis-plain"
    without the shortcut around redis-py, service/eventlog/redis_py_bypass.py)."""
    if request.param == "memory":
        return InMemoryEventStore()
    client = request.getfixturevalue("redis_client")
    return RedisEventStore(client, prefix="test", bypass_redis_py=request.param == "redis")
