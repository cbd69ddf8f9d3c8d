"""The event stores under test: every contract test runs once per store."""

from __future__ import annotations

import pytest

from service.eventlog.memory import InMemoryEventStore
from service.eventlog.redis_store import RedisEventStore
from service.eventlog.store import EventStore


@pytest.fixture(params=["memory", "redis"])
def store(request: pytest.FixtureRequest) -> EventStore:
    """An empty event store of each kind (Redis: the session's server, flushed)."""
    if request.param == "memory":
        return InMemoryEventStore()
    return RedisEventStore(request.getfixturevalue("redis_client"), prefix="test")
