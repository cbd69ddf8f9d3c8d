"""The event store protocol, its values and its errors.

A table's log is a sequence of opaque, already-encoded events (bytes). Its *version* is
the number of events in the log, so the event at 1-based position ``n`` has version
``n``. Beside the log the store keeps a snapshot of the table (opaque bytes, replaced by
the appends that carry one, at least the one that creates the table) and idempotency records
(the first response to a request, replayed when the same idempotency key comes again). A load
returns the snapshot and the events stored after it (its *tail*), so the caller can rebuild
the current state without replaying the log.

The store never decodes events or snapshots and never imports the rules: it checks
versions, appends, and remembers. Every store implementation runs the one contract
suite in ``tests/eventlog/test_store_contract.py``.

Beside the snapshot the store keeps the table's *due* moment: when something falls due on the
table without a player acting (a deadline, an automatic resolve), in seconds since the epoch,
as the caller computed it from the state the append leaves. It is written in the same atomic
step as the events, so it is always the due of the stored version; the global index that
finds due tables (``service.eventlog.due_index``) is kept by a separate step.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = [
    "Quota",
    "AppendResult",
    "ArchiveUnavailable",
    "Chain",
    "CorruptLog",
    "Due",
    "EventStore",
    "IdempotencyMismatch",
    "Idempotency",
    "NotReplicated",
    "Loaded",
    "OverLimit",
    "StoreError",
    "StoredEvent",
    "StoreUnavailable",
    "VersionConflict",
    "check_append_args",
    "check_due",
    "check_read_args",
]


@dataclass(frozen=True)
class StoredEvent:
    """One event of a table's log: its 1-based position and its encoded bytes."""

    version: int
    data: bytes


@dataclass(frozen=True)
class Idempotency:
    """A request's idempotency record.

    ``key`` is the client's Idempotency-Key, ``request_hash`` a digest of the request (the
    caller computes it), ``response`` the encoded answer to the first request (what the
    command did and the facts: ``decoding.replay``), told again to a retry.
    """

    key: str
    request_hash: str
    response: bytes


@dataclass(frozen=True)
class Chain:
    """Where an append sits in the log's hash chain: `after`, the hash of the last event of
    the state the caller decided on (the event at its expected version), and `head`, the hash
    of the last event it appends. The store keeps the head beside the version and refuses an
    append whose `after` is not the stored head, as it refuses a stale version: a process's
    cached state that holds an event the log lost (a Redis failover drops an unreplicated
    suffix, and another command then writes a different event at that version) reloads
    instead of appending on top of an event it never saw."""

    after: str
    head: str


@dataclass(frozen=True)
class Loaded:
    """A table's current version, its latest snapshot and the events stored after that
    snapshot (the snapshot is the table at ``version - len(tail)``); ``0``, ``None`` and
    ``()`` if the table does not exist."""

    version: int
    snapshot: bytes | None
    tail: tuple[bytes, ...] = ()


@dataclass
class Quota:
    """A request counted against one of a table's counters (a rate limit on a credential
    that acts at that table): at most `limit` admitted in any `window_ms`. It is counted
    once: by the append it writes its events with (``EventStore.append``), or, when it
    writes none, by ``EventStore.count_request``; `counted` says whether that has happened (over the
    limit or not). `counter` names the counter (never a credential: a digest of one)."""

    counter: str
    limit: int
    window_ms: int
    counted: bool = False


@dataclass(frozen=True)
class AppendResult:
    """The outcome of an append.

    ``version`` is the table's version after the call. ``replayed`` is set (and nothing was
    written) when the idempotency key had been seen before with the same request hash.
    ``due_indexed``: the table's due was recorded in the due index with the events (asked by
    ``index_due``, and the store can: one Redis); else the caller records it.
    """

    version: int
    replayed: Idempotency | None = None
    due_indexed: bool = False


class StoreError(Exception):
    """Root of the event store's errors."""


class BadCursor(StoreError, ValueError):
    """A paging cursor (`after`) that the list or ledger being paged did not hand out (422
    naming `after`)."""


class VersionConflict(StoreError):
    """The table is not at the version the caller expected: decide again on `current` (the
    table's version and snapshot when the conflict was found, so no reload is needed)."""

    def __init__(
        self, expected: int, actual: int, table_id: str = "", current: Loaded | None = None
    ) -> None:
        super().__init__(expected, actual, table_id, current)  # all args: the error pickles
        self.expected = expected
        self.actual = actual
        self.table_id = table_id
        self.current = current

    def __str__(self) -> str:
        return f"table {self.table_id!r} is at version {self.actual}, not {self.expected}"


class IdempotencyMismatch(StoreError):
    """An idempotency key was reused for a different request (another request hash)."""

    def __init__(self, key: str, stored_hash: str, request_hash: str, table_id: str = "") -> None:
        super().__init__(key, stored_hash, request_hash, table_id)
        self.key = key
        self.stored_hash = stored_hash
        self.request_hash = request_hash
        self.table_id = table_id

    def __str__(self) -> str:
        return (
            f"idempotency key {self.key!r} of table {self.table_id!r} was used for another request"
        )


class StoreUnavailable(StoreError):
    """The store's backend cannot be reached.

    After an ``append`` this means the outcome is unknown: retry it with the same
    ``expected_version`` and idempotency key, and get either a replay or a conflict.
    """


class OverLimit(StoreError):
    """An `Quota` over its limit: nothing was written; one more is admitted in
    `retry_after_ms`."""

    def __init__(self, table_id: str, counter: str, retry_after_ms: int) -> None:
        super().__init__(table_id, counter, retry_after_ms)
        self.table_id, self.counter, self.retry_after_ms = table_id, counter, retry_after_ms


class CorruptRecord(StoreError):
    """A record kept beside the logs (a player's limits; a tenant's protection profile, wallet
    settings or webhook; a wallet transaction; an audit's record) that cannot be read: what
    needs it is refused (a 409 naming the repair) until an operator writes it again; nothing
    else waits on it. `player_id` names the player whose limits it is (None: another)."""

    def __init__(self, detail: str, player_id: str | None = None) -> None:
        super().__init__(detail)
        self.detail, self.player_id = detail, player_id


class NotReplicated(StoreError):
    """A write (an append, or the idempotency record a retry found) that the store's Redis
    did not confirm on as many replicas as asked within the time allowed (``WAIT``): it is on
    the master, and may be lost if the master fails now. Its outcome is unknown: retried with
    the same idempotency key, the command answers what really happened (a replay once the
    record is confirmed; decided afresh if the append was lost)."""

    def __init__(self, table_id: str, version: int, acked: int | None, wanted: int) -> None:
        super().__init__(table_id, version, acked, wanted)
        self.table_id = table_id
        self.version = version
        self.acked = acked
        self.wanted = wanted

    def __str__(self) -> str:
        acked = "an unknown number of" if self.acked is None else str(self.acked)
        return (
            f"table {self.table_id!r} at version {self.version}: {acked} replicas confirmed "
            f"the write, {self.wanted} wanted"
        )


class StoreRefusesWrites(StoreUnavailable):
    """The store's Redis answers and refuses every write: at its memory limit (``OOM``, with the
    ``noeviction`` policy) or unable to persist (``MISCONF``). Nothing was written."""


class ArchiveUnavailable(StoreUnavailable):
    """The archive (PostgreSQL) cannot be reached, or this process was given none."""


class CorruptLog(StoreError):
    """The stored log disagrees with the stored version (written outside the store?).

    Nothing is appended to such a table until someone has looked at it.
    """


Due = tuple[int, float | None]
"""A table's version and due moment (``(0, None)``: no such table)."""


@runtime_checkable
class EventStore(Protocol):
    """Append-only, per-table event logs with optimistic concurrency and idempotency."""

    def load(self, table_id: str) -> Loaded:
        """The table's version, snapshot and tail (one round trip when the tail is empty)."""
        ...

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
        """Atomically append ``events`` and, when ``snapshot`` is given, replace the snapshot
        (None keeps it: the events join its tail), and set the table's due moment to ``due``
        (None: nothing is due), if the table is at ``expected_version`` (0 creates the table,
        and needs a snapshot).

        With ``idempotency``: a known key with the same request hash returns the current
        version and the stored record and writes nothing; a known key with another hash
        raises :class:`IdempotencyMismatch`. Otherwise the record is stored with the events.
        A stale ``expected_version`` raises :class:`VersionConflict` and writes nothing.

        With ``chain``, the table's stored head must be ``chain.after`` too (else a
        :class:`VersionConflict` at the same version, writing nothing), and becomes
        ``chain.head``; a table with no stored head (written without one) is not checked.
        Without ``chain`` the stored head is forgotten.

        With ``quota``, the events are written only if its counter admits one more
        (counted with them: a conflict or a replay counts nothing), else :class:`OverLimit`
        and nothing written; it is marked counted either way.

        With ``index_due``, a store that keeps the due index beside the table (one Redis)
        records the new due there in the same step, as `DueIndex.record` would
        (``AppendResult.due_indexed``); others ignore it.
        """
        ...

    def count_request(self, table_id: str, quota: Quota) -> None:
        """Count `quota` (a request that writes nothing) on the table's counter, and mark
        it counted; :class:`OverLimit` when the counter is full."""
        ...

    def read(self, table_id: str, after: int = 0, limit: int | None = None) -> list[StoredEvent]:
        """Events with version > ``after``, oldest first, at most ``limit`` of them."""
        ...

    def find_idempotent(self, table_id: str, key: str) -> Idempotency | None:
        """The live idempotency record for ``key``, if any."""
        ...

    def table_ids(self) -> list[str]:
        """Every table ever created, sorted."""
        ...

    def dues(self, table_ids: Sequence[str]) -> Sequence[Due | CorruptLog]:
        """Each table's version and due moment, in one round trip (``(0, None)`` for a
        table that does not exist), or, for a table whose stored fields do not parse, its
        error (a `decoding.CorruptTable`): one table's never fails the others'."""
        ...


def check_append_args(
    expected_version: int,
    events: Sequence[bytes],
    snapshot: bytes | None,
    due: float | None = None,
) -> None:
    """Reject malformed append arguments before any I/O (shared by every store)."""
    if isinstance(expected_version, bool) or not isinstance(expected_version, int):
        raise TypeError(f"expected_version must be an int, not {expected_version!r}")
    if expected_version < 0:
        raise ValueError(f"expected_version must be >= 0, not {expected_version}")
    if not events:
        raise ValueError("append needs at least one event")
    for event in events:
        if not isinstance(event, bytes):
            raise TypeError(f"events must be bytes, not {type(event).__name__}")
    if snapshot is None and expected_version == 0:
        raise ValueError("creating a table needs a snapshot")
    if snapshot is not None and not isinstance(snapshot, bytes):
        raise TypeError(f"snapshot must be bytes, not {type(snapshot).__name__}")
    check_due(due)


def check_due(due: float | None) -> None:
    """Reject a due moment that is not a finite number of seconds (or None)."""
    if due is None:
        return
    if isinstance(due, bool) or not isinstance(due, int | float) or not math.isfinite(due):
        raise TypeError(f"due must be finite seconds since the epoch or None, not {due!r}")


def check_read_args(after: int, limit: int | None) -> None:
    """Reject malformed read arguments before any I/O (shared by every store)."""
    if after < 0:
        raise ValueError(f"after must be >= 0, not {after}")
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0 or None, not {limit}")
