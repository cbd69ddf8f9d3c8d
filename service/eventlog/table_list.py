"""The list of tables, newest first, for `GET /v1/tables`.

A table's log is the truth; this list is how a caller pages through the tables without a SCAN
of the keyspace. Like the due index it is written by a separate, idempotent step after the
append that created the table (never by the append, which touches only the table's keys), and
a record lost to a crash between the two is put back by ``repair`` (dispatchers run it with
the due index's).

Keys (``P`` is the prefix; the hash tag ``{%tables}`` is one no table id encodes to, so both
are written in one transaction, in one Redis Cluster slot)::

    P:{%tables}:created           sorted set, every score 0, members "<created_at> <table_id>":
                                  every table (a regulator's list)
    P:{%tables}:created:<tenant>  the same, the tenant's tables only
    P:{%tables}:tenants           set, the tenants that have a list

A table is listed when it is in its tenant's list (lists written before tenants existed had
only the first key: their repair adds the second).

so the members sort by creation time (ISO 8601 UTC, one format) and then by id, and a page is
one ``ZRANGE ... BYLEX REV`` from the member a cursor names.
"""

from __future__ import annotations

import base64
import binascii
from typing import cast

import redis

from .decoding import member_text
from .derived_keys import wrong_kind
from .redis_errors import redis_errors, scan_keys
from .store import BadCursor, CorruptRecord


class TableList:
    """The tables of one key prefix, by creation time."""

    def __init__(self, client: redis.Redis, prefix: str = "guts") -> None:
        self.client = client
        self.key = f"{prefix}:{{%tables}}:created"
        self.tenants_key = f"{prefix}:{{%tables}}:tenants"

    def tenant_key(self, tenant: str) -> str:
        """The key of `tenant`'s list."""
        return f"{self.key}:{tenant}"

    def key_types(self) -> dict[str, str]:
        """The list's keys, each tenant's found by SCAN, and the type of each
        (`service.eventlog.derived_keys`)."""
        kinds = {self.key: "zset", self.tenants_key: "set"}
        for key in scan_keys(self.client, f"{self.key}:*".encode()):
            kinds[member_text(key) or key.decode(errors="replace")] = "zset"
        return kinds

    def record(self, tables: dict[str, tuple[str, str]]) -> None:
        """List tables (table id -> its `created_at` and tenant) in the list of all and in
        their tenant's, in one step; listing one twice changes nothing."""
        if not tables:
            return
        pipe = self.client.pipeline(transaction=True)
        pipe.zadd(self.key, {f"{at} {table}": 0 for table, (at, _) in tables.items()})
        for table, (at, tenant) in tables.items():
            pipe.zadd(self.tenant_key(tenant), {f"{at} {table}": 0})
        pipe.sadd(self.tenants_key, *{tenant for _, tenant in tables.values()})
        pipe.execute()

    def page(
        self, after: str | None, limit: int, tenant: str | None = None
    ) -> tuple[list[str], str | None]:
        """Up to `limit` table ids, newest first, after the cursor `after` (None: from the
        newest), and the cursor of the next page (None: this was the last): every table's,
        or `tenant`'s."""
        found = self.entries(after, limit + 1, tenant)
        ids = [table for table, _ in found[:limit] if table is not None]
        return ids, found[limit - 1][1] if len(found) > limit else None

    def entries(
        self, after: str | None, limit: int, tenant: str | None = None
    ) -> list[tuple[str | None, str]]:
        """The next `limit` members of the list, newest first, after the cursor `after` (None:
        from the newest): each one's table id (None: a member no list wrote, to skip) and the
        cursor that resumes after it, so that a reader may stop anywhere and say where to go
        on."""
        start = b"+" if after is None else b"(" + _member(after)
        key = self.key if tenant is None else self.tenant_key(tenant)
        with redis_errors():  # (Redis away: the store unavailable, a 503)
            try:  # ZRANGE key start - BYLEX REV LIMIT 0 limit
                found = self.client.zrange(
                    key, start, b"-", desc=True, bylex=True, offset=0, num=limit
                )
            except redis.ResponseError as error:
                if not wrong_kind(error):
                    raise
                raise CorruptRecord(  # (service.eventlog.derived_keys)
                    f"the table list ({key}) holds a value written outside the service; the "
                    "dispatchers drop it and list the tables again within seconds: retry"
                ) from None
        return [
            (_table_of(member), base64.urlsafe_b64encode(member).decode().rstrip("="))
            for member in cast(list[bytes], found)
        ]

    def ids(self) -> set[str]:
        """Every listed table id (listed in its tenant's list; a list or member no list
        wrote is skipped)."""
        tenants = cast(set[bytes], self.client.smembers(self.tenants_key))
        pipe = self.client.pipeline(transaction=False)
        for tenant in filter(None, map(member_text, tenants)):
            pipe.zrange(self.tenant_key(tenant), 0, -1)
        lists = cast(list[list[bytes] | Exception], pipe.execute(raise_on_error=False))
        found = {_table_of(m) for members in lists if isinstance(members, list) for m in members}
        return {table for table in found if table is not None}


def _table_of(member: bytes) -> str | None:
    """The table id a list member ``<created_at> <table_id>`` names (None: a member no list
    wrote, not UTF-8 or without its time: skipped)."""
    text = member_text(member)
    if text is None or " " not in text:
        return None
    return text.rpartition(" ")[2]


def _member(cursor: str) -> bytes:
    try:
        member = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    except (binascii.Error, ValueError):
        raise BadCursor("after is not a cursor this list handed out") from None
    if b" " not in member:
        raise BadCursor("after is not a cursor this list handed out")
    return member
