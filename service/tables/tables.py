"""The application service: load a table, let the rules decide, append the events.

This is the one module that joins the rules, the event store and the clock and randomness the
rules must not touch. A command is `decide(state, now) -> events`; `Tables.execute` runs it
against the table's snapshot and appends the events, the new snapshot and the idempotency
record in one conditional, atomic step. When another command won the race for the version,
the command is decided again on the new state (bounded), unless the caller pinned a version
with If-Match.

Every append also stores the table's next due moment (`service.rules.clock.next_due`), and when
the command changed it, the due index is told right after (a separate step: the append touches
only the table's own keys; see `service.eventlog.due_index`).

Each process remembers the last state it stored or saw per table, decoded, brought up to date
with the events its sibling workers stored (`service.tables.state_cache`). A command takes that
state,
decides on it and appends conditionally on its version: when it is current that is the
command's only round trip; when the table moved on, the conflict reply carries the stored
snapshot and the events since, and the command is decided again on them. Decisions are never
taken on stale state: the append's version check sees to it.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

import orjson

from service.eventlog import decoding
from service.eventlog.codec import (
    GENESIS,
    decode_current,
    decode_following,
    encode_events,
    encode_snapshot,
    stored_hash,
    tenant_of_first,
)
from service.eventlog.due_index import DueIndex, QuarantineView
from service.eventlog.store import (
    CorruptLog,
    EventStore,
    Idempotency,
    IdempotencyMismatch,
    StoredEvent,
    VersionConflict,
)
from service.eventlog.table_list import TableList
from service.rules.clock import next_due
from service.rules.errors import GutsError
from service.rules.events import Event
from service.rules.state import TableState, evolve
from service.tables.state_cache import Known, StateCache

Decide = Callable[[TableState, datetime], list[Event]]
Guard = Callable[[TableState], None]
"""A check of who may act on the table, before anything else (an idempotent replay, a version
precondition) could tell the caller something about it."""
Respond = Callable[[TableState, list[Event]], tuple[int, Any]]
log = logging.getLogger("guts.tables")
_T = TypeVar("_T")


class TableNotFound(GutsError):
    """No table has this id."""


class TableExists(GutsError):
    """A table with this id already exists."""


class LogUnreadable(GutsError):
    """The table's stored log or snapshot fails verification: it cannot be loaded."""


class TableQuarantined(LogUnreadable):
    """Something stored about the table does not load or parse (its log, a field of it,
    `what`): the table is set aside, every read and command of it refused, until an operator
    repairs it."""

    def __init__(self, table_id: str, what: str, tenant: str | None = None) -> None:
        super().__init__(
            f"table {table_id!r} is quarantined: its stored {what} failed verification (it does "
            "not load or parse); it is set aside until an operator repairs it"
        )
        self.table_id = table_id
        self.what = what
        self.tenant = tenant
        """Whose table it is, when its first event still says (another tenant's callers must
        learn nothing of it: `service.application.access.hide_quarantined`)."""


class PreconditionFailed(GutsError):
    """The caller's If-Match version is not the table's version."""


class IdempotencyReused(GutsError):
    """The Idempotency-Key was used before with a different request."""


class Contention(GutsError):
    """The command lost the version race too many times in a row."""


def utc_now() -> datetime:
    """The wall clock, in UTC."""
    return datetime.now(UTC)


@dataclass
class Result:
    """What a command did: the new state and events, and the response (status, body)."""

    status: int
    body: Any
    state: TableState | None = None
    events: list[Event] = field(default_factory=list)
    replayed: bool = False


@dataclass
class Tables:
    """Tables kept in an event store; see the module docstring."""

    store: EventStore
    now: Callable[[], datetime] = utc_now
    new_seed: Callable[[], bytes] = lambda: secrets.token_bytes(32)
    max_attempts: int = 50
    cache: StateCache = field(default_factory=StateCache)
    snapshot_every: int = 16
    """The store gets a new snapshot each time the version passes a multiple of this (and
    with the table's first events); a load applies the events since (fewer than this, plus a
    command's batch) to the snapshot."""
    index: DueIndex | None = None
    """Where the tables' due moments are indexed for the dispatchers (None: nowhere)."""
    listing: TableList | None = None
    """The list of tables, newest first, for `GET /v1/tables` (None: none kept)."""
    on_conflict: Callable[[], None] | None = None
    """Called each time a command's append loses the race (another command, here or on
    another node, moved the table on first; the command is then decided again): a metric."""
    held: QuarantineView | None = None
    """The quarantined tables, whose reads and commands are refused (the API's; None: none
    refused, as in the dispatchers, which retry quarantined tables)."""
    quarantine_retry_s: float = 300.0
    """How long a table found unreadable here is left alone by the dispatchers."""

    def _refuse_held(self, table_id: str) -> None:
        """TableQuarantined when the table is quarantined (as `held` last saw)."""
        if self.held is None:
            return
        entry = self.held.entry(table_id)
        if entry is not None:
            what = str(entry.get("what", "log"))
            raise TableQuarantined(table_id, what, self._tenant_if_known(table_id))

    def _set_aside(self, table_id: str, error: Exception) -> TableQuarantined:
        """Quarantine a table found unreadable (CorruptLog, LogUnreadable, CodecError):
        listed in /healthz, its reads and commands refused; the error to raise."""
        what = decoding.what_failed(error)
        if self.index is not None:
            try:
                self.index.quarantine_corrupt(error, table_id, self.quarantine_retry_s)
            except Exception:  # noqa: BLE001 - refused all the same; the dispatchers find it
                log.exception("table %s not quarantined", table_id, extra={"table_id": table_id})
        if self.held is not None:
            self.held.add(table_id, {"reason": str(error), "what": what})
        return TableQuarantined(table_id, what, self._tenant_if_known(table_id))

    def _tenant_if_known(self, table_id: str) -> str | None:
        """The table's tenant from its first event, or None when that does not say."""
        try:
            return self.tenant_of(table_id)
        except Exception:  # noqa: BLE001 - a log damaged from its first event: nobody knows
            return None

    def check_exists(self, table_id: str) -> None:
        """TableNotFound unless the table exists. Nothing is decoded or checked, so that an
        audit can start on a damaged log."""
        try:
            version = self.store.load(table_id).version
        except CorruptLog:  # it exists, and its audit will say what is wrong with it
            return
        if version == 0:
            raise TableNotFound(f"no table {table_id!r}")

    def tenant_of(self, table_id: str) -> str:
        """The tenant of a table, from its first event alone (so that a damaged log further
        on still says whose it is); TableNotFound when there is no such table."""
        first = self.store.read(table_id, 0, 1)
        if not first:
            raise TableNotFound(f"no table {table_id!r}")
        try:
            return tenant_of_first(first[0].data)
        except Exception as error:  # noqa: BLE001 - a log damaged from its first event
            raise LogUnreadable(f"the log of table {table_id!r} fails verification") from error

    def load(self, table_id: str) -> TableState:
        """The table's current state, from its snapshot and the events after it
        (TableQuarantined when it is quarantined, or found unreadable now)."""
        self._refuse_held(table_id)
        try:
            loaded = self.store.load(table_id)
            if loaded.version == 0 or loaded.snapshot is None:
                raise TableNotFound(f"no table {table_id!r}")
            snapshot = loaded.snapshot
            return _readable(table_id, lambda: decode_current(snapshot, loaded.tail))[0]
        except (CorruptLog, LogUnreadable) as error:
            raise self._set_aside(table_id, error) from error

    def events(
        self, table_id: str, after: int = 0, limit: int | None = None
    ) -> list[tuple[int, Event]]:
        """The table's events after version `after`, decoded, with their versions, each
        checked to chain from the one before (the first from the event at `after`, read
        with them): a log found broken quarantines the table (TableQuarantined)."""
        self._refuse_held(table_id)
        start = max(after - 1, 0)  # the event at `after` too: its hash is the first's head
        try:
            stored = self.store.read(
                table_id, start, None if limit is None else limit + after - start
            )
            return _readable(table_id, lambda: _chained(stored, after))
        except (CorruptLog, LogUnreadable) as error:
            raise self._set_aside(table_id, error) from error

    def execute(
        self,
        table_id: str,
        decide: Decide,
        respond: Respond,
        *,
        create: bool = False,
        if_match: int | None = None,
        idempotency_key: str | None = None,
        request_hash: str = "",
        guard: Guard | None = None,
    ) -> Result:
        """Decide and append a command; see the module docstring. `guard` (not for a
        create) is checked on the table first: a replay or a precondition answers only
        callers it lets through. A quarantined table, or one found unreadable now, is
        refused (TableQuarantined)."""
        if not create:
            self._refuse_held(table_id)
        try:
            return self._execute(
                table_id,
                decide,
                respond,
                create=create,
                if_match=if_match,
                idempotency_key=idempotency_key,
                request_hash=request_hash,
                guard=guard,
            )
        except (CorruptLog, LogUnreadable) as error:
            raise self._set_aside(table_id, error) from error

    def _execute(
        self,
        table_id: str,
        decide: Decide,
        respond: Respond,
        *,
        create: bool = False,
        if_match: int | None = None,
        idempotency_key: str | None = None,
        request_hash: str = "",
        guard: Guard | None = None,
    ) -> Result:
        replayable = idempotency_key is not None
        if idempotency_key is not None and guard is None:
            seen = self.store.find_idempotent(table_id, idempotency_key)
            if seen is not None:
                return self._replay(table_id, seen, request_hash)
            replayable = False
        # If-Match compares with the table's real version: no guessing from the cache then.
        known = None if (create or if_match is not None) else self.cache.take(table_id)
        for _ in range(self.max_attempts):
            cached = known is not None
            current = known if known is not None else Known.loaded(self.store.load(table_id))
            known = None
            if create and current.version:
                return self._created_before(table_id, idempotency_key, request_hash)
            if not create and (current.version == 0 or not current.readable):
                raise TableNotFound(f"no table {table_id!r}")
            state, head = _readable(table_id, current.working_state)
            if guard is not None:
                guard(state)
                if replayable and idempotency_key is not None:
                    replayable = False
                    seen = self.store.find_idempotent(table_id, idempotency_key)
                    if seen is not None:
                        return self._replay(table_id, seen, request_hash)
            before = next_due(state)
            if if_match is not None and if_match != state.version:
                raise PreconditionFailed(f"the table is at version {state.version}, not {if_match}")
            try:
                events = decide(state, self.now())
            except Exception:
                if cached:  # the cached snapshot may be behind: say no only on the real one
                    continue
                raise
            for event in events:
                evolve(state, event)
            status, body = respond(state, events)
            record = None
            if idempotency_key is not None:
                response = orjson.dumps({"status": status, "body": body})
                record = Idempotency(idempotency_key, request_hash, response)
            encoded, head = encode_events(events, head)
            every = self.snapshot_every
            snapshot = None
            if current.version == 0 or current.version // every != state.version // every:
                snapshot = encode_snapshot(state, head)
            due = next_due(state)
            epoch = None if due is None else due.epoch
            try:
                appended = self.store.append(
                    table_id, current.version, encoded, snapshot, record, epoch
                )
            except VersionConflict as conflict:
                if self.on_conflict is not None:
                    self.on_conflict()
                if if_match is not None:
                    raise PreconditionFailed(
                        f"the table moved on to version {conflict.actual}"
                    ) from conflict
                if create:
                    return self._created_before(table_id, idempotency_key, request_hash)
                if conflict.current is not None:
                    known = Known.loaded(conflict.current)
                    self.cache.put(table_id, known)
                continue
            except IdempotencyMismatch as exc:
                raise IdempotencyReused(
                    "this Idempotency-Key was used with a different request"
                ) from exc
            if appended.replayed is not None:
                return self._replay(table_id, appended.replayed, request_hash)
            if due != before or current.version == 0:
                self._index(table_id, appended.version, epoch)
            if current.version == 0:
                self._list({table_id: (state.created_at, state.tenant)})
            # The cache keeps `state` itself: Result.state is to read, before the table's next
            # command in this process takes it.
            self.cache.put(table_id, Known(appended.version, None, state, head), encoded)
            return Result(status, body, state, events)
        raise Contention("the table is too busy right now; try again")

    def _index(self, table_id: str, version: int, due: float | None) -> None:
        """Tell the due index the table's new due. Failing to never fails the command (its
        events are stored): the index's repair finds the table within seconds."""
        if self.index is None:
            return
        try:
            self.index.record(table_id, version, due)
        except Exception:  # noqa: BLE001 - the command is stored; the repair covers this
            log.exception("due not indexed for table %s", table_id, extra={"table_id": table_id})

    def _list(self, created_at: dict[str, tuple[str, str]]) -> None:
        """Add new tables to the table list; failing to never fails the command (the list's
        repair finds them)."""
        if self.listing is None:
            return
        try:
            self.listing.record(created_at)
        except Exception:  # noqa: BLE001 - the table is stored; the repair covers this
            log.exception("tables not listed: %s", ", ".join(created_at))

    def repair_list(self, tables: Sequence[str] | None = None) -> int:
        """List the stored tables (`tables`, when the caller has just listed them) the table
        list lacks (a crash between a create and its listing); how many. Tables that cannot
        be loaded wait until they can."""
        if self.listing is None:
            return 0
        listed = self.listing.ids()
        missing: dict[str, tuple[str, str]] = {}
        for table_id in self.store.table_ids() if tables is None else tables:
            if table_id not in listed:
                try:
                    state = self.load(table_id)
                except (GutsError, CorruptLog):  # (an unreadable one is quarantined by load)
                    continue
                missing[table_id] = (state.created_at, state.tenant)
        self.listing.record(missing)
        return len(missing)

    def reindex(self, table_id: str) -> None:
        """Index the table's stored due again (after a claim found nothing due)."""
        if self.index is not None:
            (found,) = self.store.dues([table_id])
            if isinstance(found, CorruptLog):
                raise found
            version, due = found
            self.index.record(table_id, version, due)

    def verify(self, table_id: str) -> None:
        """Read everything stored of the table that Redis holds, parsed and checked (its
        meta fields, its snapshot and log, the chain of every event Redis holds): CorruptLog
        or LogUnreadable if something does not load. For a quarantined table's retry."""
        (found,) = self.store.dues([table_id])
        if isinstance(found, CorruptLog):
            raise found
        loaded = self.store.load(table_id)
        if loaded.snapshot is not None:
            snapshot = loaded.snapshot
            _readable(table_id, lambda: decode_current(snapshot, loaded.tail))
        trimmed = getattr(self.store, "trimmed", lambda _: 0)(table_id)  # (Redis' part)
        stored = self.store.read(table_id, trimmed)
        _readable(table_id, lambda: _chained(stored, trimmed + 1 if trimmed else 0))

    def _created_before(
        self, table_id: str, idempotency_key: str | None, request_hash: str
    ) -> Result:
        """The table exists: the replay of its creation when this is that request again (a
        retry that raced the first one past the first look-up), else TableExists."""
        if idempotency_key is not None:
            seen = self.store.find_idempotent(table_id, idempotency_key)
            if seen is not None:
                return self._replay(table_id, seen, request_hash)
        raise TableExists(f"table {table_id!r} already exists")

    @staticmethod
    def _replay(table_id: str, seen: Idempotency, request_hash: str) -> Result:
        if seen.request_hash != request_hash:
            raise IdempotencyReused("this Idempotency-Key was used with a different request")
        status, body = decoding.replay(table_id, seen)
        return Result(status, body, replayed=True)


def _chained(stored: Sequence[StoredEvent], after: int) -> list[tuple[int, Event]]:
    """The events of `stored` after version `after`, decoded, each checked to chain from
    the one before; `stored` starts with the event at `after` when `after` > 0 (CodecError
    when a link is broken or an event does not decode)."""
    head = GENESIS
    decoded = []
    for event in stored:
        if event.version <= after:
            head = stored_hash(event.data)
            continue
        read, head = decode_following(event.data, head)
        decoded.append((event.version, read))
    return decoded


def _readable(table_id: str, decode: Callable[[], _T]) -> _T:
    """`decode()`, with any failure to read the stored log as `LogUnreadable` (a store's
    CorruptLog passes as it is)."""
    try:
        return decode()
    except (GutsError, CorruptLog):
        raise
    except Exception as error:  # noqa: BLE001 - a log that fails to decode, however it fails
        raise LogUnreadable(
            f"the log of table {table_id!r} failed verification and cannot be loaded "
            f"({type(error).__name__}); it is quarantined until an operator repairs it"
        ) from error
