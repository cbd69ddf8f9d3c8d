"""Where projections keep their positions: one hash per tenant (table id -> version applied
up to), read for many tables in one round trip (`service.projections.follower.Projection`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from service.eventlog import decoding
from service.eventlog.decoding import CorruptTable, parse_each
from service.eventlog.derived_keys import wrong_kind
from service.projections.projection import HeldProjection


def hash_positions(
    client: Any,
    key_of: Callable[[str], str],
    tables: Sequence[tuple[str, str]],
    projection: str,
) -> list[int | CorruptTable | HeldProjection]:
    """`Projection.positions` for a projection that keeps its positions in one hash per
    tenant (`key_of(tenant)`, table id -> version): one pipelined round trip, each table's
    position parsed on its own (its CorruptTable when it does not parse); a tenant whose
    hash is of another type is that projection's to hold (HeldProjection), for each of its
    tables: the key says nothing of any table's log."""
    pipe = client.pipeline(transaction=False)
    for tenant, table_id in tables:
        pipe.hget(key_of(tenant), table_id)
    replies = pipe.execute(raise_on_error=False)
    held = {
        n: HeldProjection(projection, tenant, key_of(tenant))
        for n, ((tenant, _), reply) in enumerate(zip(tables, replies, strict=True))
        if wrong_kind(reply)
    }
    found: list[int | CorruptTable | HeldProjection] = []
    found += parse_each(
        [table_id for _, table_id in tables],
        [None if n in held else reply for n, reply in enumerate(replies)],
        lambda table_id, raw: decoding.position(table_id, projection, raw),
        f"{projection} positions",
    )
    return [held.get(n, position) for n, position in enumerate(found)]
