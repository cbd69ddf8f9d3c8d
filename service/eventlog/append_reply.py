"""What the append script (``lua/append.lua``) answered, as the store's result or error."""

from __future__ import annotations

from typing import Any

from service.eventlog.decoding import CorruptTable
from service.eventlog.redis_errors import bytes_of
from service.eventlog.store import (
    AppendResult,
    Idempotency,
    IdempotencyMismatch,
    Loaded,
    OverLimit,
    Quota,
    StoreError,
    VersionConflict,
)


def append_outcome(
    table_id: str,
    reply: Any,
    expected_version: int,
    idempotency: Idempotency | None,
    quota: Quota | None,
    due_indexed: bool = False,
) -> AppendResult:
    """The result of an append whose script answered `reply` (written, or replayed), else
    the error it means (a conflict, a reused key, a full counter, a corrupt table)."""
    status = reply[0] if isinstance(reply, list) and reply else None
    if status == b"ok":
        if quota is not None:
            quota.counted = True
        indexed = due_indexed and len(reply) == 2  # (else the index refused: 'unindexed')
        return AppendResult(version=int(reply[1]), due_indexed=indexed)
    if status == b"limited":
        assert quota is not None
        quota.counted = True
        raise OverLimit(table_id, quota.counter, int(reply[1]))
    if status == b"replayed":
        assert idempotency is not None
        record = Idempotency(idempotency.key, idempotency.request_hash, bytes_of(reply[2]))
        return AppendResult(version=int(reply[1]), replayed=record)
    if status == b"conflict":
        actual, since = int(reply[1]), int(reply[3])
        tail = tuple(bytes_of(data) for data in reply[4:])
        if actual and len(tail) != actual - since:
            raise CorruptTable(table_id, "stream", f"the events after {since} are not all there")
        current = Loaded(actual, bytes_of(reply[2]) if actual else None, tail)
        raise VersionConflict(expected_version, actual, table_id=table_id, current=current)
    if status == b"mismatch":
        assert idempotency is not None
        raise IdempotencyMismatch(
            idempotency.key,
            bytes_of(reply[1]).decode(errors="replace"),
            idempotency.request_hash,
            table_id=table_id,
        )
    if status == b"corrupt":
        top = bytes_of(reply[1]).decode(errors="replace") or "nothing"
        raise CorruptTable(table_id, "stream", f"it ends at {top}, not at its stored version")
    if status == b"unreadable":  # a meta field or idempotency record the script refused
        raise CorruptTable(table_id, bytes_of(reply[1]).decode(errors="replace"))
    raise StoreError(f"unexpected reply from the append script: {reply!r}"[:200])
