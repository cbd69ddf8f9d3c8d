"""Rewriting a table's stored log as someone with Redis access could (for audits, quarantine
and benchmarks of a corrupt table)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from service.eventlog.codec import chain_hash

Records = list[dict[str, Any]]


def rewrite_log(
    client: Any,
    table: str,
    change: Callable[[Records], Records],
    rechain: bool,
    prefix: str = "guts",
) -> None:
    """Read the table's stream, `change` its records, write them back (with the hash chain
    recomputed from the start when `rechain`)."""
    key = f"{prefix}:{{{table}}}:events"
    records = change([orjson.loads(fields[b"data"]) for _, fields in client.xrange(key)])
    if rechain:
        head = "0" * 64
        for record in records:
            head = record["hash"] = chain_hash(head, record)
    client.delete(key)
    for version, record in enumerate(records, start=1):
        client.xadd(key, {"data": orjson.dumps(record)}, id=f"{version}-0")


def unloadable(client: Any, table: str) -> None:
    """Make the table's log fail to load: its last event becomes one of no type the rules
    know, with the chain recomputed so that only decoding it finds out."""

    def change(records: Records) -> Records:
        records[-1]["type"] = "hand_exploded"
        return records

    rewrite_log(client, table, change, rechain=True)


def rewrite_entries(
    client: Any,
    table: str,
    change: Callable[[list[tuple[str, dict[str, Any]]]], list[tuple[str, dict[str, Any]]]],
    prefix: str = "guts",
) -> None:
    """Rewrite the table's stream with ids of the attacker's choosing: `change` gets and
    returns its (stream id, record) pairs (ids ascending, as a stream keeps them); nothing is
    renumbered or rechained."""
    key = f"{prefix}:{{{table}}}:events"
    entries = [(i.decode(), orjson.loads(f[b"data"])) for i, f in client.xrange(key)]
    entries = change(entries)
    client.delete(key)
    for entry_id, record in entries:
        client.xadd(key, {"data": orjson.dumps(record)}, id=entry_id)
