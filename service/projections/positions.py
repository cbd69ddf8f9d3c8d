"""Where projections keep their positions: one hash per tenant (table id -> version applied
up to), read for many tables in one round trip (`service.projections.follower.Projection`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from service.eventlog import decoding
from service.eventlog.decoding import CorruptTable, parse_each


def hash_positions(
    client: Any,
    key_of: Callable[[str], str],
    tables: Sequence[tuple[str, str]],
    projection: str,
) -> list[int | CorruptTable]:
    """`Projection.positions` for a projection that keeps its positions in one hash per
    tenant (`key_of(tenant)`, table id -> version): one pipelined round trip, each table's
    position parsed on its own (its CorruptTable when it does not parse)."""
    pipe = client.pipeline(transaction=False)
    for tenant, table_id in tables:
        pipe.hget(key_of(tenant), table_id)
    return parse_each(
        [table_id for _, table_id in tables],
        pipe.execute(raise_on_error=False),
        lambda table_id, raw: decoding.position(table_id, projection, raw),
        f"{projection} positions",
    )
