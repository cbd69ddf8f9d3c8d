"""The deadline dispatcher: acts on tables when something falls due on them.

Modelled on Sidekiq's scheduled poller: every dispatcher process looks at the due index (see
``service.eventlog.due_index``), claims the tables due now with one atomic step (a short lease,
so any dispatcher may die and none is special), and acts on each through the application
service's ``close_due`` use case, which asks the rules what is due (``service.rules.clock``).
Acting is a version-checked append, so two dispatchers, or a dispatcher and a player, never
both act on one deadline. Between two looks it waits on the index's wake list until the
earliest due it saw, at most `poll_s`: a record that brings an earlier due (a hand whose
declarations completed under ``auto_resolve`` is due at once) wakes one waiting dispatcher.

A claimed table is first checked against its stored due (one pipelined read for the whole
batch), so a backlog of stale entries (hands that moved on, tables gone) costs a read each and
never delays a live deadline behind work. A table that cannot be loaded is quarantined: logged
with its id, counted, listed in ``/healthz``, and tried again only every ``quarantine_retry_s``;
the other tables go on. A lost connection to Redis is waited out (redis-py reconnects), with a
log line, and the dispatcher goes on where it was.

Each dispatcher beats a heartbeat in Redis from its loop (at most every `beat_s`), and counts
how late it acted on each due table (now - due) in a histogram kept there too; the API reads
both (``/readyz``, ``/metrics``: ``service.eventlog.vitals``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import redis

from service.application import TableService
from service.archive.archive import Archive
from service.audit.jobs import QueuedJobs
from service.config import Settings
from service.eventlog.derived_keys import drop_wrong_types, wrong_kind
from service.eventlog.due_index import DueIndex
from service.eventlog.redis_errors import redis_away
from service.eventlog.store import CorruptLog
from service.eventlog.table_list import TableList
from service.eventlog.vitals import Vitals
from service.infrastructure import due_index, event_store, ledger_of, queue_client
from service.pacing import REDIS_AWAY, Backoff
from service.projections.ledger import LedgerStore
from service.tables import OutcomeUnknown, Tables

log = logging.getLogger("guts.dispatcher")
_GONE = 1 << 62
"""The version an index record of a table that does not exist carries (later than any)."""


@dataclass(frozen=True)
class DispatchTimes:
    """How a dispatcher paces itself (seconds)."""

    poll_s: float = 0.25
    """Longest wait between two looks at the index: how late a due can be acted on when the
    wake that told of it went to a dispatcher that then died (the others' next look finds it),
    and how long a stop waits for the wait under way. Shorter than the client's socket
    timeout (``GUTS_REDIS_TIMEOUT_S``): the wait is a blocking command."""
    lease_s: float = 0.5
    """How long a claimed table is left to its claimant before another may take it: what a
    deadline can be late when its claimant dies between the claim and the act. Acting on a
    table that another dispatcher also took is safe (a version-checked append), only work
    spent twice."""
    batch: int = 25
    """Tables claimed in one step (acted on well within `lease_s`: a few ms each)."""
    repair_s: float = 5.0
    """Period of the repair that re-indexes dues a crash kept from the index."""
    quarantine_retry_s: float = 300.0
    """How long a table that cannot be loaded is left alone before it is tried again."""
    backoff: Backoff = REDIS_AWAY
    """Waits while Redis cannot be reached (`service.pacing.REDIS_AWAY`)."""
    beat_s: float = 1.0
    """Period of the heartbeat (``/readyz`` wants one within the last 5 s)."""


class Dispatcher:
    """One dispatcher: `run` until `stop` is set; `tick` is one pass (see the module doc)."""

    def __init__(
        self,
        usecases: TableService,
        index: DueIndex,
        times: DispatchTimes = DispatchTimes(),
        clock: Callable[[], float] = time.time,
        vitals: Vitals | None = None,
    ) -> None:
        self.usecases = usecases
        self.vitals = vitals
        self.id = f"{socket.gethostname()}:{os.getpid()}:{random.getrandbits(32):08x}"
        self.tables = usecases.tables
        self.index = index
        self.times = times
        self.clock = clock
        self._held: set[str] = set()  # quarantined tables, as of the last repair
        self._head: float | None = None  # the index's earliest due, as of the last tick

    def tick(self) -> int:
        """Claim what is due now and settle it; how many tables were claimed."""
        now = self.clock()
        claimed, self._head = self.index.claim_and_peek(now, self.times.lease_s, self.times.batch)
        if not claimed:
            return 0
        corrections: list[tuple[str, int, float | None]] = []
        due_now = []
        held = self.index.held(claimed)  # quarantined: retried (their retry fell due)
        for table_id, found in zip(claimed, self.tables.store.dues(claimed), strict=True):
            if isinstance(found, CorruptLog):  # one table's bad fields: it alone waits
                self._quarantine(table_id, found)
                continue
            if table_id in held and not self._retry(table_id):
                continue
            version, due = found
            if version == 0:  # no such table (any more)
                corrections.append((table_id, _GONE, None))
            elif due is None or due > now:  # stale or early: index the stored due instead
                corrections.append((table_id, version, due))
            else:
                due_now.append((table_id, due))
        self.index.record_many(corrections)  # one round trip for the whole batch
        lateness = []
        for table_id, due in due_now:
            lateness.append(max(0.0, now - due))
            self._act(table_id)
        if self.vitals is not None:
            self.vitals.observe_lateness(lateness)  # one round trip for the batch
        return len(claimed)

    def _quarantine(self, table_id: str, error: Exception) -> None:
        """Set `table_id` aside: logged with what does not load, listed, retried later."""
        self._held.add(table_id)
        self.index.quarantine_corrupt(error, table_id, self.times.quarantine_retry_s, renew=True)

    def _retry(self, table_id: str) -> bool:
        """Read a quarantined table whose retry fell due in full: released when it all loads
        (an operator repaired it), else back into quarantine; whether it was released."""
        try:
            self.tables.verify(table_id)
        except Exception as error:  # noqa: BLE001 - still unreadable, however it fails
            if redis_away(error):
                raise  # not the table's fault: the run loop waits for Redis
            self._quarantine(table_id, error)
            return False
        self._held.discard(table_id)
        if self.index.release(table_id):
            log.warning("table %s released from quarantine", table_id, extra={"table_id": table_id})
        return True

    def _act(self, table_id: str) -> None:
        try:
            self.usecases.close_due(table_id)
        except OutcomeUnknown:  # written, not confirmed replicated: the claim's lease runs
            log.warning("acted on table %s, not confirmed replicated", table_id)
            return  # out and the table comes due again (then acted on, or found settled)
        except Exception as error:  # noqa: BLE001 - one table's failure never stops the others
            if redis_away(error):
                raise  # not the table's fault: the run loop waits for Redis
            self._quarantine(table_id, error)
            return
        if table_id in self._held and self.index.release(table_id):
            self._held.discard(table_id)
            log.warning("table %s released from quarantine", table_id, extra={"table_id": table_id})

    def sleep_s(self) -> float:
        """How long to wait before the next tick: until the earliest due as of the last tick's
        look at the index, at most `poll_s`."""
        head = self._head
        if head is None:
            return self.times.poll_s
        return min(self.times.poll_s, max(0.0, head - self.clock()))

    def wait(self, stop: threading.Event) -> None:
        """Wait `sleep_s`, on the index's wake list (woken by a record of an earlier due),
        precisely when it ends at a due (`DueIndex.wait`); a moment shorter than the index's
        shortest wait on `stop` (no round trip)."""
        wait = self.sleep_s()
        if stop.is_set() or wait <= 0:
            return
        if wait < self.index.SHORTEST_WAIT_S:
            stop.wait(wait)
        else:
            self.index.wait(wait, precise=wait < self.times.poll_s)

    def repair(self) -> int:
        """Index dues that a crash kept out of the index; how many."""
        self._held = set(self.index.quarantined())
        stored = self.tables.store.table_ids()  # one SCAN for both repairs
        fixed = self.index.repair(
            self.tables.store, skip=self._held, tables=stored, on_corrupt=self._quarantine
        )
        if fixed:
            log.warning("repaired the due index of %d tables", fixed, extra={"tables": fixed})
        listed = self.tables.repair_list(stored)
        if listed:
            log.warning("listed %d tables the table list lacked", listed, extra={"tables": listed})
        return fixed

    def _drop_wrong_types(self) -> bool:
        """Drop the shared derived keys that hold another type than the service writes
        (`service.eventlog.derived_keys`); whether one was."""
        kinds = self.index.key_types()
        if self.tables.listing is not None:
            kinds.update(self.tables.listing.key_types())
        return bool(drop_wrong_types(self.index.client, kinds))

    def run(self, stop: threading.Event, beat: Callable[[], None] = lambda: None) -> None:
        """Dispatch until `stop` is set, surviving Redis going away and coming back; `beat`
        at every look at the index and before every wait (the supervisor's heartbeat)."""
        failures = 0  # Redis failures in a row
        next_repair = 0.0  # at once: dues a crash kept from the index come first
        next_beat = 0.0
        while not stop.is_set():
            beat()
            try:
                if self.vitals is not None and time.monotonic() >= next_beat:
                    self.vitals.beat(self.id)
                    next_beat = time.monotonic() + self.times.beat_s
                if time.monotonic() >= next_repair:
                    self.repair()
                    next_repair = time.monotonic() + self.times.repair_s * random.uniform(0.8, 1.2)
                while self.tick() and not stop.is_set():
                    pass
                failures = 0
                beat()
                self.wait(stop)
                continue
            except Exception as error:
                if wrong_kind(error) and self._drop_wrong_types():
                    next_repair = 0.0  # (what was dropped is built again at once)
                    continue
                if not redis_away(error):  # (a failover: CLUSTERDOWN, TRYAGAIN, READONLY...)
                    raise
                failures += 1
                wait = self.times.backoff.delay(failures)
                log.warning(
                    "Redis cannot serve (%s); trying again in %.1f s",
                    type(error).__name__,
                    wait,
                    extra={"retry_s": wait, "error": type(error).__name__},
                )
            stop.wait(wait)
        if self.vitals is not None:
            with contextlib.suppress(redis.RedisError):
                self.vitals.stopped(self.id)


def build_dispatcher(
    settings: Settings, client: redis.Redis, archive: Archive | None = None
) -> Dispatcher:
    """A dispatcher on `client` for the tables under `settings.key_prefix`."""
    usecases, index = _usecases(settings, client, archive)
    times = DispatchTimes(poll_s=min(DispatchTimes.poll_s, settings.redis_timeout_s / 2))
    return Dispatcher(usecases, index, times, vitals=Vitals(client, prefix=settings.key_prefix))


def protection_service(
    settings: Settings, client: redis.Redis, archive: Archive | None = None
) -> TableService:
    """The use cases the protection duty needs: the tables (as the clock's) and the limits."""
    return _usecases(settings, client, archive, ledger_of(settings, client, archive))[0]


def _usecases(
    settings: Settings,
    client: redis.Redis,
    archive: Archive | None,
    ledger: LedgerStore | None = None,
) -> tuple[TableService, DueIndex]:
    store = event_store(settings, client, archive)
    index = due_index(settings, client, store)
    listing = TableList(client, prefix=settings.key_prefix)
    tables = Tables(store, index=index, listing=listing)
    jobs = QueuedJobs(client, queue_client(settings, client), settings.key_prefix)
    return TableService(tables, jobs, ledger=ledger), index
