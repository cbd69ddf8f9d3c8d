"""The due index: which tables have something due, and when, for the dispatchers.

A table's own due moment is written with its events (the ``due`` field of its meta hash, see
``redis_store``): that is the truth. This index is how dispatchers find due tables without
reading every table, and is kept by separate, idempotent steps, never by the append:

- after an append that changed the table's due, the application service *records* it
  (``lua/due_record.lua``): a record carries the table's version and is ignored when a later
  version was recorded already, so records that arrive out of order never move a due back;
- a dispatcher *claims* the tables due now (``lua/due_claim.lua``): each moves to the end of
  a short lease, so no other dispatcher takes it meanwhile, and it comes due again if its
  claimant dies; acting on the table records its next due (a new version), and a claim that
  finds nothing due records the table's stored due (the same version);
- a record lost to a crash between an append and its record is found by ``repair``, which
  compares every table's stored due with the index (dispatchers run it at start and then
  every few seconds).

Keys (``P`` is the prefix; the hash tag ``{%due}`` is one no table id encodes to, so the
index keys share one Redis Cluster slot and never a table's)::

    P:{%due}:index       sorted set  table id -> due moment (epoch seconds)
    P:{%due}:versions    hash        table id -> version of its last record
    P:{%due}:quarantine  hash        table id -> JSON {"reason", "at"}: tables that cannot be
                                     loaded, retried only every ``retry_s``
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson
import redis

from .store import EventStore, check_due

_LUA = Path(__file__).parent / "lua"


class DueIndex:
    """The due index on Redis (see the module docstring)."""

    def __init__(self, client: redis.Redis, prefix: str = "guts") -> None:
        self.client = client
        self.index_key = f"{prefix}:{{%due}}:index"
        self.versions_key = f"{prefix}:{{%due}}:versions"
        self.quarantine_key = f"{prefix}:{{%due}}:quarantine"
        self._record_keys = [self.index_key, self.versions_key]
        self._record = client.register_script((_LUA / "due_record.lua").read_text())
        self._claim = client.register_script((_LUA / "due_claim.lua").read_text())

    def record(self, table_id: str, version: int, due: float | None) -> bool:
        """Index the table's due as of `version` (None: nothing due); False when a later
        version was recorded already."""
        return bool(self._record(keys=self._record_keys, args=_record_args(table_id, version, due)))

    def record_many(self, records: Sequence[tuple[str, int, float | None]]) -> int:
        """`record` each (table id, version, due), in one round trip; how many took."""
        if not records:
            return 0
        with self.client.pipeline(transaction=False) as pipe:
            for table_id, version, due in records:
                args = _record_args(table_id, version, due)
                self._record(keys=self._record_keys, args=args, client=pipe)
            return sum(bool(taken) for taken in pipe.execute())

    def claim(self, now: float, lease_s: float, limit: int) -> list[str]:
        """The ids of up to `limit` tables due at `now`, each leased for `lease_s`."""
        args: list[str | int] = [f"{now:.3f}", f"{now + lease_s:.3f}", limit]
        claimed = self._claim(keys=[self.index_key], args=args)
        return [_text(table_id) for table_id in claimed]

    def next_at(self) -> float | None:
        """The earliest due moment in the index, if any."""
        head = self.client.zrange(self.index_key, 0, 0, withscores=True)
        return float(head[0][1]) if head else None

    def due_at(self, table_id: str) -> float | None:
        """The table's due moment as indexed (None: not indexed)."""
        score = self.client.zscore(self.index_key, table_id)
        return None if score is None else float(score)

    def quarantine(self, table_id: str, reason: str, retry_s: float) -> None:
        """Set a table that cannot be loaded aside: listed with `reason`, tried again only
        after `retry_s` (an operator may repair its log meanwhile)."""
        entry = orjson.dumps({"reason": reason[:300], "at": round(time.time(), 3)})
        with self.client.pipeline(transaction=True) as pipe:
            pipe.hset(self.quarantine_key, table_id, entry)
            pipe.zadd(self.index_key, {table_id: time.time() + retry_s})
            pipe.execute()

    def release(self, table_id: str) -> bool:
        """Take a table out of quarantine (it loads again); whether it was in."""
        return bool(self.client.hdel(self.quarantine_key, table_id))

    def quarantined(self) -> dict[str, dict[str, Any]]:
        """The quarantined tables, by id, with why and since when."""
        entries = self.client.hgetall(self.quarantine_key)
        return {_text(k): orjson.loads(v) for k, v in entries.items()}

    def repair(
        self,
        store: EventStore,
        page: int = 500,
        skip: Collection[str] | None = None,
        tables: Sequence[str] | None = None,
    ) -> int:
        """Record every table whose stored due the index lacks, or has later than stored
        from an older version (a lost record; a claim's lease keeps its version, and is left
        alone). Quarantined tables (`skip`, when the caller has just read them) are left
        alone too; `tables` are the store's tables when the caller has just listed them.
        Returns how many were recorded."""
        quarantined = set(self.quarantined()) if skip is None else skip
        stored_tables = store.table_ids() if tables is None else tables
        fixed = 0
        for ids in _pages([t for t in stored_tables if t not in quarantined], page):
            scores = self.client.zmscore(self.index_key, ids)
            recorded = self.client.hmget(self.versions_key, ids)
            stored = store.dues(ids)
            lost = [
                (table_id, version, due)
                for table_id, (version, due), score, seen in zip(
                    ids, stored, scores, recorded, strict=True
                )
                if version
                and due is not None
                and (score is None or (int(seen or -1) < version and score > due + 0.001))
            ]
            fixed += self.record_many(lost)
        return fixed


def _record_args(table_id: str, version: int, due: float | None) -> list[str | int]:
    check_due(due)
    return [table_id, version, "" if due is None else f"{due:.3f}"]


def _pages(items: Sequence[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
