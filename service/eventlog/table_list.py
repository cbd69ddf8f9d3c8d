"""The list of tables, newest first, for `GET /v1/tables`.

A table's log is the truth; this list is how a caller pages through the tables without a SCAN
of the keyspace. Like the due index it is written by a separate, idempotent step after the
append that created the table (never by the append, which touches only the table's keys), and
a record lost to a crash between the two is put back by ``repair`` (dispatchers run it with
the due index's).

One key (``P`` is the prefix; the hash tag ``{%tables}`` is one no table id encodes to)::

    P:{%tables}:created  sorted set, every score 0, members "<created_at> <table_id>"

so the members sort by creation time (ISO 8601 UTC, one format) and then by id, and a page is
one ``ZRANGE ... BYLEX REV`` from the member a cursor names. (Issue 14's tenants get one such
key each.)
"""

from __future__ import annotations

import base64
import binascii
from typing import cast

import redis


class BadCursor(ValueError):
    """A cursor this list did not hand out."""


class TableList:
    """The tables of one key prefix, by creation time."""

    def __init__(self, client: redis.Redis, prefix: str = "guts") -> None:
        self.client = client
        self.key = f"{prefix}:{{%tables}}:created"

    def record(self, created_at: dict[str, str]) -> None:
        """List tables (table id -> its `created_at`); listing one twice changes nothing."""
        if created_at:
            self.client.zadd(self.key, {f"{at} {table}": 0 for table, at in created_at.items()})

    def page(self, after: str | None, limit: int) -> tuple[list[str], str | None]:
        """Up to `limit` table ids, newest first, after the cursor `after` (None: from the
        newest), and the cursor of the next page (None: this was the last)."""
        start = b"+" if after is None else b"(" + _member(after)
        members = cast(  # ZRANGE key start - BYLEX REV LIMIT 0 limit+1
            list[bytes],
            self.client.zrange(
                self.key, start, b"-", desc=True, bylex=True, offset=0, num=limit + 1
            ),
        )
        more = len(members) > limit
        members = members[:limit]
        ids = [m.decode().rpartition(" ")[2] for m in members]
        cursor = base64.urlsafe_b64encode(members[-1]).decode().rstrip("=") if more else None
        return ids, cursor

    def ids(self) -> set[str]:
        """Every listed table id."""
        members = cast(list[bytes], self.client.zrange(self.key, 0, -1))
        return {m.decode().rpartition(" ")[2] for m in members}


def _member(cursor: str) -> bytes:
    try:
        member = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    except (binascii.Error, ValueError):
        raise BadCursor("after is not a cursor this list handed out") from None
    if b" " not in member:
        raise BadCursor("after is not a cursor this list handed out")
    return member
