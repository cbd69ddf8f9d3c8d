"""Event logs of tables: the store protocol and its in-memory and Redis implementations."""

from service.eventlog.memory import InMemoryEventStore
from service.eventlog.redis_store import RedisEventStore
from service.eventlog.store import (
    AppendResult,
    CorruptLog,
    EventStore,
    Idempotency,
    IdempotencyMismatch,
    Loaded,
    StoredEvent,
    StoreError,
    StoreUnavailable,
    VersionConflict,
)

__all__ = [
    "AppendResult",
    "CorruptLog",
    "EventStore",
    "Idempotency",
    "IdempotencyMismatch",
    "InMemoryEventStore",
    "Loaded",
    "RedisEventStore",
    "StoreError",
    "StoreUnavailable",
    "StoredEvent",
    "VersionConflict",
]
