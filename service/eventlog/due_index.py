"""The due index: which tables have something due, and when, for the dispatchers.

A table's own due moment is written with its events (the ``due`` field of its meta hash, see
``redis_store``): that is the truth. This index is how dispatchers find due tables without
reading every table, and is kept by idempotent steps of its own:

- after an append that changed the table's due, the application service *records* it
  (``lua/due_record.lua``): a record carries the table's version and is ignored when a later
  version was recorded already, so records that arrive out of order never move a due back;
  on one Redis (not a cluster) the append script records it itself, in the same round trip
  (``RedisEventStore.index_due_with``: the same step, ``lua/due_records.lua``, run by the
  script that writes the events);
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
    P:{%due}:quarantine  hash        table id -> JSON {"reason", "what", "at"}: tables that
                                     cannot be read (a log that does not load or verify, a
                                     stored value that does not parse: `decoding`), answered
                                     409 by the API and retried by the dispatchers only every
                                     ``retry_s``
    P:{%due}:wake        list        at most one token, pushed by a record that brings a due
                                     earlier than the index's earliest: it wakes a dispatcher
                                     waiting on it (`wait`), which otherwise sleeps until the
                                     earliest due it saw, or its longest poll

Every value read here is parsed per table (``service.eventlog.decoding``): one table's bad
record never fails a batch, and a member that names no table (not UTF-8) is dropped.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson
import redis

from .decoding import member_text, parse_each, recorded_version, what_failed
from .redis_errors import REDIS_ERRORS
from .replication import Replicated, plain
from .store import CorruptLog, EventStore, check_due

log = logging.getLogger("guts.quarantine")

_LUA = Path(__file__).parent / "lua"


class DueIndex:
    """The due index on Redis (see the module docstring)."""

    def __init__(
        self, client: redis.Redis, prefix: str = "guts", commands: Replicated | None = None
    ) -> None:
        """`commands`: how `record` is sent (an event store's `commands`, its shortcut around
        redis-py when on); None: redis-py's public API."""
        self.client = client
        self.commands = commands or plain(client)
        self.index_key = f"{prefix}:{{%due}}:index"
        self.versions_key = f"{prefix}:{{%due}}:versions"
        self.quarantine_key = f"{prefix}:{{%due}}:quarantine"
        self.wake_key = f"{prefix}:{{%due}}:wake"
        self.record_keys = [self.index_key, self.versions_key, self.wake_key]
        """The keys a record writes (the append's too, where it records: `RedisEventStore.
        index_due_with`)."""
        records = (_LUA / "due_records.lua").read_text()
        self._record = client.register_script(records + (_LUA / "due_record.lua").read_text())
        self._claim = client.register_script((_LUA / "due_claim.lua").read_text())

    def record(self, table_id: str, version: int, due: float | None) -> bool:
        """Index the table's due as of `version` (None: nothing due); False when a later
        version was recorded already."""
        args = _record_args(table_id, version, due)
        return bool(self.commands.run(self._record, self.record_keys, args)[0])

    def record_many(self, records: Sequence[tuple[str, int, float | None]]) -> int:
        """`record` each (table id, version, due), in one script call (so on a Redis Cluster
        too: the index's keys share one slot); how many took."""
        if not records:
            return 0
        args = [arg for record in records for arg in _record_args(*record)]
        return int(self._record(keys=self.record_keys, args=args))

    def claim(self, now: float, lease_s: float, limit: int) -> list[str]:
        """The ids of up to `limit` tables due at `now`, each leased for `lease_s`."""
        return self.claim_and_peek(now, lease_s, limit)[0]

    def claim_and_peek(
        self, now: float, lease_s: float, limit: int
    ) -> tuple[list[str], float | None]:
        """`claim`, and the earliest due moment left in the index after it (None: none), in
        the same round trip (a dispatcher's look at the index, then how long it may sleep)."""
        args: list[str | int] = [f"{now:.3f}", f"{now + lease_s:.3f}", limit]
        head, *claimed = self._claim(keys=[self.index_key], args=args)
        ids = []
        for member in claimed:
            table_id = member_text(member)
            if table_id is None:  # no table's id: drop it, or it is claimed for ever
                log.error("dropped a due index member that names no table: %r", member[:40])
                self.client.zrem(self.index_key, member)
            else:
                ids.append(table_id)
        return ids, float(head) if head else None

    SHORTEST_WAIT_S = 0.01
    """The shortest `wait` (Redis counts a blocking wait in ms, and 0 means for ever)."""

    TIMER_S = 0.1
    """How late Redis may end a blocking wait: it looks at blocked clients' timeouts at each
    tick of its timer, 10 a second by default (``hz 10``), so a ``BLPOP`` for 30 ms returns
    after about 100 ms."""
    STEP_S = 0.01
    """How often the last `TIMER_S` of a `precise` wait looks at the wake list."""

    def wait(self, timeout_s: float, *, precise: bool = False) -> bool:
        """Wait until a record brings a due earlier than the index's earliest (or one into an
        empty index), at most `timeout_s` (at least `SHORTEST_WAIT_S`); whether one did. One
        waiting dispatcher wakes per token. A `precise` wait (one that ends at a due) blocks
        (``BLPOP``) only until `TIMER_S` before its end, and looks at the list every `STEP_S`
        after that (``LPOP``, not blocking), so that it ends within a few ms of `timeout_s`,
        whatever Redis's timer."""
        timeout = max(self.SHORTEST_WAIT_S, timeout_s)
        if not precise:
            return self.client.blpop([self.wake_key], timeout=timeout) is not None
        end = time.monotonic() + timeout
        blocking = timeout - self.TIMER_S
        if blocking >= self.SHORTEST_WAIT_S:
            if self.client.blpop([self.wake_key], timeout=blocking) is not None:
                return True
        while self.client.lpop(self.wake_key) is None:
            left = end - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(self.STEP_S, left))
        return True

    def due_at(self, table_id: str) -> float | None:
        """The table's due moment as indexed (None: not indexed)."""
        score = self.client.zscore(self.index_key, table_id)
        return None if score is None else float(score)

    def key_types(self) -> dict[str, str]:
        """The index's keys and the type of each (`service.eventlog.derived_keys`)."""
        return {
            self.index_key: "zset",
            self.versions_key: "hash",
            self.quarantine_key: "hash",
            self.wake_key: "list",
        }

    def quarantine(
        self, table_id: str, reason: str, retry_s: float, what: str = "log", *, renew: bool = True
    ) -> bool:
        """Set a table that cannot be read aside: listed with `reason` and `what` (the key or
        field that does not load or parse), answered 409 by the API, tried again by the
        dispatchers only after `retry_s` (an operator may repair it meanwhile). Without
        `renew` (a process that found it while reading, not a dispatcher's retry), a table
        quarantined already is left as it is, its retry not put off. Whether it was set."""
        entry = orjson.dumps(
            {"reason": reason[:300], "what": what[:120], "at": round(time.time(), 3)}
        )
        if not renew and not self.client.hsetnx(self.quarantine_key, table_id, entry):
            return False
        with self.client.pipeline(transaction=True) as pipe:
            if renew:
                pipe.hset(self.quarantine_key, table_id, entry)
            pipe.zadd(self.index_key, {table_id: time.time() + retry_s})
            pipe.execute()
        return True

    def quarantine_corrupt(
        self, error: Exception, table_id: str, retry_s: float, *, renew: bool = False
    ) -> None:
        """`quarantine` the table `error` is about, with a log line naming it and what (the
        `what` of the error or of what it was raised from; "log" when none says)."""
        what = what_failed(error)
        if self.quarantine(table_id, str(error), retry_s, what, renew=renew):
            log.error(
                "table %s quarantined: %s does not load (%s)",
                table_id,
                what,
                error,
                extra={"table_id": table_id, "what": what, "error": type(error).__name__},
            )

    def release(self, table_id: str) -> bool:
        """Take a table out of quarantine (it loads again); whether it was in."""
        return bool(self.client.hdel(self.quarantine_key, table_id))

    def quarantined(self) -> dict[str, dict[str, Any]]:
        """The quarantined tables, by id, with why, what and since when (an entry that does
        not parse is listed with a reason saying so)."""
        entries = self.client.hgetall(self.quarantine_key)
        held = {}
        for key, value in entries.items():
            table_id = member_text(key)
            if table_id is None:
                continue
            try:
                entry = orjson.loads(value)
                if not isinstance(entry, dict):
                    raise TypeError
                held[table_id] = {
                    "reason": str(entry.get("reason", "")),
                    "what": str(entry.get("what", "log")),
                    "at": float(entry.get("at", 0.0)),
                }
            except (orjson.JSONDecodeError, TypeError, ValueError):
                held[table_id] = {
                    "reason": "its quarantine entry does not parse",
                    "what": "quarantine entry",
                    "at": 0.0,
                }
        return held

    def held(self, table_ids: Sequence[str]) -> set[str]:
        """Which of `table_ids` are quarantined (one HMGET)."""
        if not table_ids:
            return set()
        found = self.client.hmget(self.quarantine_key, list(table_ids))
        return {t for t, entry in zip(table_ids, found, strict=True) if entry is not None}

    def repair(
        self,
        store: EventStore,
        page: int = 500,
        skip: Collection[str] | None = None,
        tables: Sequence[str] | None = None,
        on_corrupt: Callable[[str, CorruptLog], None] | None = None,
    ) -> int:
        """Record every table whose stored due the index lacks, or has later than stored
        from an older version (a lost record; a claim's lease keeps its version, and is left
        alone). Quarantined tables (`skip`, when the caller has just read them) are left
        alone too; `tables` are the store's tables when the caller has just listed them. A
        table whose stored due or index record does not parse is passed to `on_corrupt` (and
        the others are repaired all the same); an index record that does not parse is
        recorded again (the index is derived from the stored dues). Returns how many were
        recorded."""
        quarantined = set(self.quarantined()) if skip is None else skip
        stored_tables = store.table_ids() if tables is None else tables
        fixed = 0
        for ids in _pages([t for t in stored_tables if t not in quarantined], page):
            scores = self.client.zmscore(self.index_key, ids)
            recorded = parse_each(
                ids,
                self.client.hmget(self.versions_key, ids),
                recorded_version,
                "due index version",
            )
            lost = []
            for table_id, stored, score, seen in zip(
                ids, store.dues(ids), scores, recorded, strict=True
            ):
                if isinstance(stored, CorruptLog):
                    if on_corrupt is not None:
                        on_corrupt(table_id, stored)
                    continue
                if isinstance(seen, CorruptLog):  # the index's own record: recorded again
                    log.warning("due index record of table %s re-recorded: %s", table_id, seen)
                    seen, score = -1, None
                version, due = stored
                if (
                    version
                    and due is not None
                    and (
                        score is None
                        or not math.isfinite(score)
                        or (seen < version and score > due + 0.001)
                    )
                ):
                    lost.append((table_id, version, due))
            fixed += self.record_many(lost)
        return fixed


class QuarantineView:
    """The quarantined tables as one process sees them (for the API: every read and command
    of one answers 409), read again from the index at most every `ttl_s` (one HGETALL of a
    hash that is usually empty), so a table the dispatchers set aside is refused within that
    long, and one released is served again as soon. One request reads it; the others go on
    with what was read last meanwhile, rather than each waiting for that read: when the
    index's master is away (a failover) it takes until a replica has taken over, and every
    table's requests would wait with it."""

    def __init__(self, index: DueIndex, ttl_s: float = 0.5) -> None:
        self.index = index
        self.ttl_s = ttl_s
        self._held: dict[str, dict[str, Any]] = {}
        self._added: dict[str, tuple[dict[str, Any], float]] = {}  # by `add`, and when
        self._fresh_until = 0.0
        self._lock = threading.Lock()

    def entry(self, table_id: str) -> dict[str, Any] | None:
        """Why the table is quarantined, or None when it is not (as of `ttl_s` ago, or of the
        last read while one is under way)."""
        if time.monotonic() >= self._fresh_until and self._lock.acquire(blocking=False):
            try:
                if time.monotonic() >= self._fresh_until:
                    self._read()
            finally:
                self._lock.release()
        held = self._held.get(table_id)
        if held is None and table_id in self._added:
            return self._added[table_id][0]
        return held

    def _read(self) -> None:
        started = time.monotonic()
        try:
            self._held = self.index.quarantined()
            # (what `add` told of before this read began, the read holds)
            self._added = {t: a for t, a in self._added.items() if a[1] >= started}
        except REDIS_ERRORS:
            pass  # Redis away: what this process saw last (its loads fail anyway)
        self._fresh_until = time.monotonic() + self.ttl_s

    def add(self, table_id: str, entry: dict[str, Any]) -> None:
        """Remember at once a table this process has just quarantined."""
        self._added = {**self._added, table_id: (entry, time.monotonic())}


def _record_args(table_id: str, version: int, due: float | None) -> list[str | int]:
    check_due(due)
    return [table_id, version, "" if due is None else f"{due:.3f}"]


def _pages(items: Sequence[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
