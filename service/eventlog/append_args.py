"""What the append script (``lua/append.lua``) is sent: its keys and arguments.

Redis (7.0) spends on each argument of a script about a fifth of what a small command costs
it, so an append sends only what it needs: seven fixed arguments, then the snapshot, the
idempotency record and the quota only when there is one (the seventh says which: ``s``,
``i``, ``q``), then the events.
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
) -> tuple[list[bytes], Args]:
    """The keys and arguments of the append script for these (`EventStore.append`'s)."""
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
    if snapshot is not None or idempotency is not None or quota is not None:
        args[6] = _optional(store, table_id, keys, args, snapshot, idempotency, quota)
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
    if quota is not None:
        flags += b"q"
        keys.append(store.counter_key(table_id, quota.counter))
        args += [quota.limit, quota.window_ms]
    return flags
