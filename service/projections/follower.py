"""Projections: read models and outboxes derived from the tables' logs, kept up to date by a
follower.

The log is the single source of truth. A *projection* (the ledger, the webhooks' deliveries)
is derived from it event by event, and remembers for each table the version it has applied up
to (its *position*). Applying is the projection's own atomic step: it writes what the events
derive AND moves the position in one step, and only if the position is still the one it read;
so applying the same events twice (two followers, a retry after a crash between read and write)
changes nothing the second time, and a crash at any point loses nothing: the events are still
in the log, after the position, and the next catch-up applies them. This is the outbox pattern
with the log itself as the outbox (the append never writes outside its table's keys, STYLE.md
item 16).

The follower brings every projection up to the log at once on each append's notice (the store
publishes ``<version> <table id>`` on ``<prefix>:appended``), so a projection lags by
milliseconds, and by a sweep every `sweep_s` seconds over every table (versions against
positions in one round trip per batch), which catches what a missed notice left behind.
Dispatcher processes run it (`workers.dispatcher`); any number may run at once. A caller that
needs a table's projection current (the ledger's page of one table) may `catch_up` it itself.

One table never stops the others: what is read of each table (its version, its tenant, each
projection's position and book of it, its events) is parsed per table
(``service.eventlog.decoding``), and a table whose stored values do not parse, or whose log
does not decode, is quarantined (`index`: listed in /healthz, refused by the API, left alone
by the sweeps until the dispatchers' retry finds it repaired). Nor does one projection stop
the others: one that fails on a table (a webhook stored unreadable) is logged and tried again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import redis

from service.eventlog.codec import (
    GENESIS,
    CodecError,
    check_chain,
    stored_hash,
    tenant_of_first,
)
from service.eventlog.decoding import CorruptTable
from service.eventlog.due_index import DueIndex
from service.eventlog.redis_errors import redis_away
from service.eventlog.store import CorruptLog, EventStore, StoredEvent
from service.pacing import REDIS_AWAY, Backoff
from service.projections.broken_tenants import BrokenTenants
from service.projections.projection import Followed, HeldProjection, Projection

log = logging.getLogger("guts.follow")
_UNREADABLE = (CorruptLog, CodecError)
"""What a projection passes on of its failures on a table, with its stores going away or
refusing writes (`redis_away`: waited out, with a warning); the others are its own."""


class Follower:
    """Keeps `projections` up to `store`'s logs (see the module doc)."""

    def __init__(
        self,
        store: EventStore,
        projections: Sequence[Projection],
        *,
        batch: int = 500,
        sweep_s: float = 5.0,
        settle_s: float = 0.0,
        backoff: Backoff = REDIS_AWAY,
        index: DueIndex | None = None,
        quarantine_retry_s: float = 300.0,
        chained: bool = True,
        on_sweep: Callable[[int, int], None] | None = None,
        confirm: Callable[[str, StoredEvent], bool] | None = None,
    ) -> None:
        self.store = store
        self.confirm = confirm
        """Whether replicas hold a table's log up to an event read (None: not asked): a
        batch is applied only once they do (`service.eventlog.replication.replicated_log`)."""
        self.chained = chained
        """Whether the events read are checked against the hash chain before they are
        applied (False for projections that check it themselves: the archive)."""
        self.index = index
        """Where tables found unreadable are quarantined, and quarantined ones are looked up
        (None: they are only logged)."""
        self.quarantine_retry_s = quarantine_retry_s
        self.projections = list(projections)
        self.batch = batch
        self.sweep_s = sweep_s
        self.settle_s = settle_s
        """With notices coming faster than this, each table is caught up at most once per
        `settle_s` (the archive: bigger batches, seconds of lag); 0: on each notice."""
        self._pending: dict[str, int] = {}
        self.backoff = backoff
        self.on_sweep = on_sweep
        """Told, at each sweep, how far its projections were behind the logs when it began:
        (events, tables) (the archiver reports its lag so: ``service.eventlog.vitals``)."""
        self._tenants: dict[str, str] = {}  # table id -> tenant (a table never changes tenant)
        self._held: dict[str, BrokenTenants] = {}  # projection -> its tenants held

    def tenant(self, table_id: str) -> str | None:
        """The tenant of `table_id` (from its first event), or None when it does not exist."""
        known = self._tenants.get(table_id)
        if known is None:
            first = self.store.read(table_id, 0, 1)
            if not first:
                return None
            try:
                known = tenant_of_first(first[0].data)
            except CodecError as error:
                raise CorruptTable(table_id, "stream entry 1", str(error)[:80]) from error
            self._tenants[table_id] = known
        return known

    def catch_up(self, table_id: str, upto: int | None = None) -> int:
        """Bring every projection of `table_id` up to its log (to at least `upto`, when
        given, which saves a look at the log when already there); how many events were
        applied, over all projections."""
        tenant = self.tenant(table_id)
        if tenant is None:
            return 0
        behind: list[tuple[Projection, int]] = []
        for projection in self.projections:
            (position,) = projection.positions([(tenant, table_id)])
            if isinstance(position, HeldProjection):
                self._hold(position)
                continue
            if isinstance(position, CorruptLog):
                raise position
            if upto is None or position < upto:
                behind.append((projection, position))
        if not behind:
            return 0
        # One read (and one confirmation) from the position furthest behind, for them all:
        # each projection starts on its part of it (the events after its own position).
        lowest = min(position for _, position in behind)
        shared = self._confirmed(table_id, lowest)
        if not shared:
            return 0  # (nothing after the lowest: the others are at the log's end too)
        applied = 0
        for projection, position in behind:
            first = [event for event in shared if event.version > position]
            try:
                applied += self._advance(projection, tenant, table_id, position, upto, first)
            except Exception as error:  # noqa: BLE001 - one projection holds up no other
                if redis_away(error) or isinstance(error, _UNREADABLE):
                    raise
                if isinstance(error, HeldProjection):
                    self._hold(error)
                    continue
                log.error("table %s could not be projected by %s (%s)", table_id, projection.name,
                          type(error).__name__, extra={"table_id": table_id})  # fmt: skip
        return applied

    def _confirmed(self, table_id: str, position: int) -> list[StoredEvent]:
        """The next batch of events after `position` (`_read`), or none while the replicas do
        not hold its last (not replicated yet: the next notice or sweep looks again)."""
        stored = self._read(table_id, position)
        if stored and self.confirm and not self.confirm(table_id, stored[-1]):
            return []
        return stored

    def _advance(
        self,
        projection: Projection,
        tenant: str,
        table_id: str,
        position: int,
        upto: int | None,
        first: list[StoredEvent],
    ) -> int:
        """Apply `table_id`'s events after `position` to `projection` (up to `upto`, when
        given), starting with `first` (confirmed, read already; none: read them)."""
        applied = 0
        while upto is None or position < upto:
            stored = first or self._confirmed(table_id, position)
            first = []
            if not stored:
                break
            if projection.apply(Followed(table_id, tenant, position, stored=tuple(stored))):
                applied += len(stored)
                position = stored[-1].version
            else:  # another follower moved it: go on from where that one got to
                (moved,) = projection.positions([(tenant, table_id)])
                if isinstance(moved, CorruptLog | HeldProjection):
                    raise moved
                if moved == position:
                    raise RuntimeError(f"{projection.name} refused {table_id} at {position}")
                position = moved
        return applied

    def _read(self, table_id: str, position: int) -> list[StoredEvent]:
        """The next batch of events after `position`, checked to chain from the event at
        `position` (read with them) when `chained` (CodecError if not)."""
        if not self.chained:
            return self.store.read(table_id, position, self.batch)
        start = max(position - 1, 0)
        stored = self.store.read(table_id, start, self.batch + position - start)
        head = stored_hash(stored[0].data) if position and stored else GENESIS
        following = [event for event in stored if event.version > position]
        check_chain([event.data for event in following], head)
        return following

    def sweep(self) -> int:
        """Catch every table up whose log is ahead of a projection; how many events were
        applied. Quarantined tables are left alone; one found unreadable is quarantined."""
        held = set(self.index.quarantined()) if self.index is not None else set()
        table_ids = [t for t in self.store.table_ids() if t not in held]
        applied = 0
        behind_events = behind_tables = 0
        for start in range(0, len(table_ids), self.batch):
            chunk = table_ids[start : start + self.batch]
            live: list[tuple[str, int]] = []
            keys: list[tuple[str, str]] = []
            for table_id, found in zip(chunk, self.store.dues(chunk), strict=True):
                if isinstance(found, CorruptLog):
                    self._unreadable(table_id, found)
                    continue
                tenant = self._safely(table_id, self.tenant, table_id) if found[0] else None
                if tenant is not None:
                    live.append((table_id, found[0]))
                    keys.append((tenant, table_id))
            behind: dict[str, int] = {}
            caught_up: list[tuple[Projection, str, int]] = []
            for projection in self.projections:
                for (table_id, version), position in zip(
                    live, projection.positions(keys), strict=True
                ):
                    if isinstance(position, HeldProjection):
                        self._hold(position)  # (the tenant's tables, not their logs)
                    elif isinstance(position, CorruptLog):
                        self._unreadable(table_id, position)
                        behind.pop(table_id, None)
                        held.add(table_id)
                    elif table_id in held:
                        continue
                    elif position > version:  # the log lost events this projection holds
                        self._unreadable(table_id, _forked(table_id, projection, position, version))
                        behind.pop(table_id, None)
                        held.add(table_id)
                    elif position < version:
                        behind[table_id] = version
                        behind_events += version - position
                        behind_tables += 1
                    else:
                        caught_up.append((projection, table_id, position))
            for table_id, version in behind.items():
                applied += self.safely_catch_up(table_id, version)
            for projection, table_id, position in caught_up:
                if table_id not in held:
                    self._safely(table_id, projection.tidy, table_id, position)
        if self.on_sweep is not None:
            self.on_sweep(behind_events, behind_tables)
        return applied

    def _hold(self, held: HeldProjection) -> None:
        """A projection held for a tenant (its positions unreadable): named at most once a
        minute (each table of the tenant meets it at each sweep)."""
        named = self._held.setdefault(held.projection, BrokenTenants(held.projection, log))
        named.name(held.tenant, held)

    def _unreadable(self, table_id: str, error: Exception) -> None:
        """Quarantine a table whose stored values do not parse (or only log it, without an
        index); the others go on."""
        if self.index is not None:
            self.index.quarantine_corrupt(error, table_id, self.quarantine_retry_s)
        else:
            log.error(
                "table %s could not be projected (%s)",
                table_id,
                type(error).__name__,
                extra={"table_id": table_id, "error": type(error).__name__},
            )

    def safely_catch_up(self, table_id: str, upto: int | None = None) -> int:
        """`catch_up`, where a table whose log cannot be projected is logged and left for
        the next sweep (one table's log never stops the others); Redis errors pass."""
        return self._safely(table_id, self.catch_up, table_id, upto) or 0

    def _safely(self, table_id: str, call: Callable[..., Any], *args: Any) -> Any:
        """`call(*args)` for `table_id`, where a table whose stored values or log do not parse
        is quarantined, and one that cannot be projected otherwise is logged and left for the
        next sweep; errors reaching a store pass."""
        try:
            return call(*args)
        except _UNREADABLE as error:
            self._unreadable(table_id, error)
            return None
        except Exception as error:  # noqa: BLE001 - see the docstring
            if redis_away(error):
                raise
            log.error(
                "table %s could not be projected (%s)",
                table_id,
                type(error).__name__,
                extra={"table_id": table_id, "error": type(error).__name__},
            )
            return None

    def run(self, client: redis.Redis, channel: str, stop: threading.Event) -> None:
        """Follow until `stop` is set: notices on `channel` as they come, a sweep every
        `sweep_s` (the first at once), surviving Redis going away and coming back."""
        failures = 0
        while not stop.is_set():
            pubsub = client.pubsub(ignore_subscribe_messages=True)  # type: ignore[no-untyped-call]
            try:
                pubsub.subscribe(channel)
                self.sweep()  # what was appended while nobody listened
                next_sweep = time.monotonic() + self.sweep_s
                settled = time.monotonic() + self.settle_s
                failures = 0
                while not stop.is_set():
                    wait = min(1.0, self.sweep_s)
                    if self._pending:  # (no later than the settling is due)
                        wait = max(0.0, min(wait, settled - time.monotonic()))
                    message = pubsub.get_message(timeout=wait)
                    if message is not None:
                        self._notice(message["data"])
                    if self._pending and time.monotonic() >= settled:
                        self._settle()
                        settled = time.monotonic() + self.settle_s
                    if time.monotonic() >= next_sweep:
                        self.sweep()
                        next_sweep = time.monotonic() + self.sweep_s
            except Exception as error:  # noqa: BLE001 - a follower's thread must not die
                failures += 1
                wait = self.backoff.delay(failures)
                unreachable = redis_away(error)
                log.log(
                    logging.WARNING if unreachable else logging.ERROR,
                    "the follower %s (%s); going on in %.1f s",
                    "cannot use its stores" if unreachable else "failed",
                    type(error).__name__,
                    wait,
                    exc_info=not unreachable,
                    extra={"retry_s": wait, "error": type(error).__name__},
                )
                stop.wait(wait)
            finally:
                pubsub.close()

    def _notice(self, data: bytes | str) -> None:
        text = data.decode() if isinstance(data, bytes) else data
        version, _, table_id = text.partition(" ")
        if version.isdigit() and table_id:
            self._pending[table_id] = max(int(version), self._pending.get(table_id, 0))
            if self.settle_s <= 0:
                self._settle()

    def _settle(self) -> None:
        """Catch up the tables noticed since the last time (a Redis failure keeps the rest)."""
        while self._pending:
            table_id, version = next(iter(self._pending.items()))
            self.safely_catch_up(table_id, version)
            del self._pending[table_id]


def _forked(table_id: str, projection: Projection, position: int, version: int) -> CorruptTable:
    """What a projection ahead of its table's log says: a Redis failover lost a suffix of the
    log that the projection (the archive, the ledger, the webhooks) had applied; the table is
    quarantined rather than played on into a history that diverges from what was derived."""
    return CorruptTable(
        table_id,
        "log",
        f"{projection.name} holds it up to version {position}, the log only up to {version}: "
        "a failover lost events already derived",
    )
