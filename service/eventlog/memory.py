"""An in-memory event store with the same semantics as the Redis one.

For unit tests and single-process tools. Thread-safe: one lock guards every operation,
so each call is atomic like a Lua script on Redis. Nothing is persisted.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from service.eventlog.store import (
    AppendResult,
    Chain,
    Idempotency,
    IdempotencyMismatch,
    Loaded,
    OverLimit,
    Quota,
    StoredEvent,
    VersionConflict,
    check_append_args,
    check_read_args,
)

__all__ = ["InMemoryEventStore"]


@dataclass
class _Table:
    events: list[bytes] = field(default_factory=list)
    snapshot: bytes | None = None
    snapshot_version: int = 0
    due: float | None = None
    head: str | None = None  # the hash of the last event, when the last append gave it
    # idempotency key -> (record, expiry on the store's clock)
    idempotency: dict[str, tuple[Idempotency, float]] = field(default_factory=dict)


class InMemoryEventStore:
    """:class:`~service.eventlog.store.EventStore` kept in a dict.

    ``clock`` (seconds, monotonic) decides when idempotency records expire; tests pass a
    fake one to check expiry without sleeping.
    """

    def __init__(
        self,
        idempotency_ttl_s: int = 86_400,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if idempotency_ttl_s <= 0:
            raise ValueError("idempotency_ttl_s must be positive")
        self.idempotency_ttl_s = idempotency_ttl_s
        self._clock = clock
        self._lock = threading.Lock()
        self._tables: dict[str, _Table] = {}
        self._counters: dict[tuple[str, str], deque[float]] = {}

    def load(self, table_id: str) -> Loaded:
        """The table's version and snapshot (0 and None if unknown)."""
        with self._lock:
            table = self._tables.get(table_id)
            return _loaded(table)

    def append(
        self,
        table_id: str,
        expected_version: int,
        events: Sequence[bytes],
        snapshot: bytes | None,
        idempotency: Idempotency | None = None,
        due: float | None = None,
        chain: Chain | None = None,
        quota: Quota | None = None,
        index_due: bool = False,
    ) -> AppendResult:
        """See :meth:`EventStore.append` (no due index here: `index_due` is ignored)."""
        check_append_args(expected_version, events, snapshot, due)
        with self._lock:
            table = self._tables.get(table_id)
            actual = len(table.events) if table is not None else 0
            if idempotency is not None and table is not None:
                stored = self._live_record(table, idempotency.key)
                if stored is not None:
                    if stored.request_hash != idempotency.request_hash:
                        raise IdempotencyMismatch(
                            idempotency.key,
                            stored.request_hash,
                            idempotency.request_hash,
                            table_id=table_id,
                        )
                    return AppendResult(version=actual, replayed=stored)
            forked = (
                chain is not None
                and table is not None
                and table.head is not None
                and table.head != chain.after
            )
            if actual != expected_version or forked:
                current = _loaded(table)
                raise VersionConflict(expected_version, actual, table_id=table_id, current=current)
            if quota is not None:
                self._count(table_id, quota)
            if table is None:
                table = self._tables[table_id] = _Table()
            table.events.extend(bytes(event) for event in events)
            if snapshot is not None:
                table.snapshot = bytes(snapshot)
                table.snapshot_version = len(table.events)
            if idempotency is not None:
                expiry = self._clock() + self.idempotency_ttl_s
                table.idempotency[idempotency.key] = (idempotency, expiry)
            table.due = due
            table.head = None if chain is None else chain.head
            return AppendResult(version=len(table.events))

    def count_request(self, table_id: str, quota: Quota) -> None:
        """See :meth:`EventStore.count_request`."""
        with self._lock:
            self._count(table_id, quota)

    def _count(self, table_id: str, quota: Quota) -> None:
        """The moving window of `quota`'s counter (under the lock): admitted and counted,
        or OverLimit."""
        quota.counted = True
        now = self._clock()
        times = self._counters.setdefault((table_id, quota.counter), deque())
        window_s = quota.window_ms / 1000
        while times and now - times[0] >= window_s:
            times.popleft()
        if len(times) >= quota.limit:
            wait_ms = max(1, math.ceil((window_s - (now - times[0])) * 1000))
            raise OverLimit(table_id, quota.counter, wait_ms)
        times.append(now)

    def read(self, table_id: str, after: int = 0, limit: int | None = None) -> list[StoredEvent]:
        """Events with version > ``after``, oldest first, at most ``limit``."""
        check_read_args(after, limit)
        with self._lock:
            table = self._tables.get(table_id)
            if table is None:
                return []
            stop = len(table.events) if limit is None else min(len(table.events), after + limit)
            return [
                StoredEvent(version=index + 1, data=table.events[index])
                for index in range(after, stop)
            ]

    def find_idempotent(self, table_id: str, key: str) -> Idempotency | None:
        """The live idempotency record for ``key``, if any."""
        with self._lock:
            table = self._tables.get(table_id)
            return self._live_record(table, key) if table is not None else None

    def table_ids(self) -> list[str]:
        """Every table created so far, sorted."""
        with self._lock:
            return sorted(self._tables)

    def dues(self, table_ids: Sequence[str]) -> list[tuple[int, float | None]]:
        """Each table's version and due moment ((0, None) if unknown)."""
        with self._lock:
            found = [self._tables.get(table_id) for table_id in table_ids]
            return [(0, None) if t is None else (len(t.events), t.due) for t in found]

    def _live_record(self, table: _Table, key: str) -> Idempotency | None:
        """The record for ``key`` unless it has expired (expired ones are dropped)."""
        entry = table.idempotency.get(key)
        if entry is None:
            return None
        record, expiry = entry
        if self._clock() >= expiry:
            del table.idempotency[key]
            return None
        return record


def _loaded(table: _Table | None) -> Loaded:
    if table is None:
        return Loaded(version=0, snapshot=None)
    tail = tuple(table.events[table.snapshot_version :])
    return Loaded(version=len(table.events), snapshot=table.snapshot, tail=tail)
