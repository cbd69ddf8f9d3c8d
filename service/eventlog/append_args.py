"""What the append script (``lua/append.lua``) is sent: its keys and arguments.

Redis (7.0) spends on each argument of a script about a fifth of what a small command costs
it, so an append sends only what it needs: seven fixed arguments, then the snapshot, the
idempotency record and the quota only when there is one (the seventh says which: ``s``,
``i``, ``q``; ``d`` for the due index's record, which takes keys and no argument), then the
events.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from service.eventlog.store import Chain, Idempotency, Quota

__all__ = ["append_call"]

Args = list[bytes | str | int]


class TableKeys(Protocol):
    """The store's keys of a table, and what every append sends (`RedisEventStore`)."""

    notices: str
    idempotency_ttl_s: int
    due_keys: list[bytes] | None

    def events_key(self, table_id: str) -> bytes: ...

    def meta_key(self, table_id: str) -> bytes: ...

    def idempotency_key(self, table_id: str, key: str) -> bytes: ...

    def counter_key(self, table_id: str, counter: str) -> bytes: ...


def append_call(
    store: TableKeys,
    table_id: str,
    expected_version: int,
    events: Sequence[bytes],
    snapshot: bytes | None,
    idempotency: Idempotency | None,
    due: float | None,
    chain: Chain | None,
    quota: Quota | None,
    index_due: bool = False,
) -> tuple[list[bytes], Args]:
    """The keys and arguments of the append script for these (`EventStore.append`'s; with
    `index_due`, the due index's keys, `store.due_keys`, too)."""
    keys = [store.events_key(table_id), store.meta_key(table_id)]
    args: Args = [
        expected_version,
        b"" if due is None else f"{due:.3f}",
        store.notices,
        table_id,
        "" if chain is None else chain.after,
        "" if chain is None else chain.head,
        b"",
    ]
    if snapshot is not None or idempotency is not None or quota is not None or index_due:
        args[6] = _optional(store, table_id, keys, args, snapshot, idempotency, quota, index_due)
    args += events
    return keys, args


def _optional(
    store: TableKeys,
    table_id: str,
    keys: list[bytes],
    args: Args,
    snapshot: bytes | None,
    idempotency: Idempotency | None,
    quota: Quota | None,
    index_due: bool,
) -> bytes:
    """Add the optional keys and arguments there are to `keys` and `args`, in the script's
    order; the flags that say which are there."""
    flags = b""
    if snapshot is not None:
        flags += b"s"
        args.append(snapshot)
    if idempotency is not None:
        flags += b"i"
        keys.append(store.idempotency_key(table_id, idempotency.key))
        args += [store.idempotency_ttl_s, idempotency.request_hash, idempotency.response]
    if index_due and store.due_keys is not None:  # (their keys before the quota's: the
        flags += b"d"  # script finds the quota's counter last)
        keys += store.due_keys
    if quota is not None:
        flags += b"q"
        keys.append(store.counter_key(table_id, quota.counter))
        args += [quota.limit, quota.window_ms]
    return flags
