"""The application service: load a table, let the rules decide, append the events.

This is the one module that joins the rules, the event store and the clock and randomness the
rules must not touch. `Tables.execute` runs a game command (`service.rules.decide`) in three
named steps: load the table (`_load`: the cached state, or the store's), decide on it
(`_decide`: the application's look-ups make the command, `decide(state, now, command)` says
the events, and the caller's `Tell` says what to answer), and commit (`_commit`: once the
caller's `Gate`, if any, lets it pass, the events, the new snapshot and the idempotency record
appended in one conditional, atomic step, then the due index and the table list told). When
another command won the race for the version, the command is decided again on the new state
(bounded), unless the caller pinned a version with If-Match.

Every append also stores the table's next due moment (`service.rules.clock.next_due`); when the
command changed it, the due index is told, by the append itself on one Redis, else right after
(on a cluster the append touches only the table's own keys; see `service.eventlog.due_index`).

Each process remembers the last state it stored or saw per table, decoded, brought up to date
with the events its sibling workers stored (`service.tables.state_cache`). A command takes that
state, decides on it and appends conditionally on its version: when it is current that is the
command's only round trip (its sender's rate limit, a `Quota`, is counted in it too); when the
table moved on, the conflict reply carries the stored snapshot and the events since, and the
command is decided again on them. Decisions are never taken on stale state: the append's
version check sees to it.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

import orjson

from service.eventlog.codec import (
    decode_current,
    encode_events,
    encode_snapshot,
    tenant_of_first,
)
from service.eventlog.due_index import DueIndex, QuarantineView
from service.eventlog.store import (
    Chain,
    CorruptLog,
    EventStore,
    Idempotency,
    IdempotencyMismatch,
    NotReplicated,
    Quota,
    VersionConflict,
)
from service.eventlog.table_list import TableList
from service.rules.clock import next_due
from service.rules.decide import Command, decide
from service.rules.errors import GutsError
from service.rules.events import Event
from service.rules.state import TableState, evolve
from service.tables.state_cache import Known, StateCache

from .errors import (
    Contention,
    IdempotencyReused,
    LogUnreadable,
    OutcomeUnknown,
    PreconditionFailed,
    TableExists,
    TableNotFound,
)
from .held import Held
from .reading import chained, readable, replayed
from .steps import (
    Answer,
    Attempt,
    Decided,
    Gate,
    Guard,
    Loaded,
    Prepare,
    Result,
    Submission,
    Tell,
    tell_version,
    utc_now,
)
from .upkeep import Upkeep

log = logging.getLogger("guts.tables")

T = TypeVar("T")


@dataclass
class Tables(Upkeep, Held):
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
            return readable(table_id, lambda: decode_current(snapshot, loaded.tail))[0]
        except (CorruptLog, LogUnreadable) as error:
            raise self._set_aside(table_id, error) from error

    def look(self, table_id: str, see: Callable[[TableState], T]) -> T:
        """What `see` makes of the table, before a command on it: of the state this process
        keeps of it (no round trip) when it keeps one, else of the stored state. The kept state
        may be behind the store, so a refusal (`see` raising a GutsError) is believed only of
        the stored state, which `see` is then shown. `see` must not change the state."""
        self._refuse_held(table_id)
        known = self.cache.take(table_id)
        if known is not None:
            try:
                if known.state is not None:
                    return see(known.state)
            except GutsError:
                pass  # (perhaps only behind: see the stored state)
            finally:
                self.cache.put(table_id, known)
        return see(self.load(table_id))

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
            return readable(table_id, lambda: chained(stored, after))
        except (CorruptLog, LogUnreadable) as error:
            raise self._set_aside(table_id, error) from error

    def execute(
        self,
        table_id: str,
        command: Command | Prepare,
        tell: Tell = tell_version,
        *,
        create: bool = False,
        if_match: int | None = None,
        idempotency_key: str | None = None,
        request_hash: str = "",
        guard: Guard | None = None,
        quota: Quota | None = None,
        fresh_key: bool = False,
        gate: Gate | None = None,
    ) -> Result:
        """Decide and append `command` (a game command, or the application's `Prepare` of one
        on the loaded state), answered as `tell` says; see the module docstring. `guard` (not
        for a create) is checked on the table first: a replay or a precondition answers only
        callers it lets through (`fresh_key`: the idempotency key was made for this request,
        so no answer is looked up under it first). A quarantined table, or one found unreadable
        now, is refused (TableQuarantined). A `quota` not counted yet is counted by the append
        (OverLimit, nothing written, when its counter is full); one that appends nothing is
        left for the caller to count (`count_request`). A `gate` is passed before the append."""
        if not create:
            self._refuse_held(table_id)
        if quota is not None and quota.counted:
            quota = None
        submitted = Submission(
            table_id,
            command,
            tell,
            create,
            if_match,
            idempotency_key,
            request_hash,
            guard,
            quota,
            fresh_key,
            gate,
        )
        try:
            return self._run(submitted)
        except (CorruptLog, LogUnreadable) as error:
            raise self._set_aside(table_id, error) from error
        except NotReplicated as error:  # (the cache keeps nothing of it: see _commit)
            raise OutcomeUnknown(
                "the command was written but not confirmed on the replicas in time; "
                "repeat it with the same Idempotency-Key to learn its outcome"
            ) from error

    def _run(self, sub: Submission) -> Result:
        """Attempt the command until an attempt lands, or answers without appending."""
        if sub.idempotency_key is not None and sub.guard is None:
            seen = self.store.find_idempotent(sub.table_id, sub.idempotency_key)
            if seen is not None:
                return replayed(sub.table_id, seen, sub.request_hash)
        # If-Match compares with the table's real version: no guessing from the cache then.
        fresh = sub.create or sub.if_match is not None
        attempt = Attempt(None if fresh else self.cache.take(sub.table_id))
        for number in range(self.max_attempts):
            done = self._attempt(sub, attempt.known, first=number == 0)
            if isinstance(done, Result):
                return done
            attempt = done  # the next one
        raise Contention("the table is too busy right now; try again")

    def _attempt(self, sub: Submission, known: Known | None, *, first: bool) -> Result | Attempt:
        """One attempt: load, decide, commit; its result, or the next attempt. `known` is what
        this process knows of the table (None: load it from the store)."""
        loaded = self._load(sub, known, first=first)
        if isinstance(loaded, Result):
            return loaded
        try:
            decided = self._decide(sub, loaded)
        except Exception:
            if known is not None:  # what this process knew may be behind: say no only on
                return Attempt()  # the stored state
            if sub.idempotency_key is not None:  # the same request, sent twice at once, may
                seen = self.store.find_idempotent(sub.table_id, sub.idempotency_key)  # have
                if seen is not None:  # landed since the first look: its answer, not a "no"
                    return replayed(sub.table_id, seen, sub.request_hash)
            raise
        return self._commit(sub, decided)

    def _load(self, sub: Submission, known: Known | None, *, first: bool) -> Loaded | Result:
        """The table (`known`, else as stored) and its working state, once the caller may act
        on it: the guard first, then (on the first attempt) the answer kept for an earlier
        identical request, then If-Match. A create finds the table absent, or answers as it
        answered the request that made it."""
        current = known if known is not None else Known.loaded(self.store.load(sub.table_id))
        if sub.create and current.version:
            return self._created_before(sub)
        if not sub.create and (current.version == 0 or not current.readable):
            raise TableNotFound(f"no table {sub.table_id!r}")
        state, head = readable(sub.table_id, current.working_state)
        if sub.guard is not None:
            sub.guard(state)
            if first and sub.idempotency_key is not None and not sub.fresh_key:
                seen = self.store.find_idempotent(sub.table_id, sub.idempotency_key)
                if seen is not None:
                    return replayed(sub.table_id, seen, sub.request_hash)
        if sub.if_match is not None and sub.if_match != state.version:
            raise PreconditionFailed(f"the table is at version {state.version}, not {sub.if_match}")
        return Loaded(current.version, state, head)

    def _decide(self, sub: Submission, loaded: Loaded) -> Decided:
        """The rules' decision of the command at the clock's now: its events, applied to the
        loaded state, and its answer."""
        state = loaded.state
        due_before = next_due(state)
        now = self.now()
        command = sub.command if isinstance(sub.command, Command) else sub.command(state)
        events = decide(state, now, command)
        for event in events:
            evolve(state, event)
        return Decided(loaded, events, sub.tell(state, events), due_before)

    def _commit(self, sub: Submission, decided: Decided) -> Result | Attempt:
        """Append the decision, on condition that the table is still at the loaded version;
        then tell the due index (when the due moved) and the table list (a new table), and
        keep the new state for the table's next command here."""
        table_id, before = sub.table_id, decided.loaded.version
        state = decided.loaded.state
        encoded, head = encode_events(decided.events, decided.loaded.head)
        snapshot = self._snapshot(before, state, head)
        due = next_due(state)
        epoch = None if due is None else due.epoch
        record = self._record(sub, decided.answer)
        moved = due != decided.due_before or before == 0  # (the index is told)
        if sub.gate is not None:
            sub.gate()
        try:
            chain = Chain(decided.loaded.head, head)
            appended = self.store.append(
                table_id,
                before,
                encoded,
                snapshot,
                record,
                epoch,
                chain,
                sub.quota,
                index_due=moved and self.index is not None,
            )
        except VersionConflict as conflict:
            return self._lost_race(sub, conflict)
        except IdempotencyMismatch as exc:
            raise IdempotencyReused(
                "this Idempotency-Key was used with a different request"
            ) from exc
        except NotReplicated as unconfirmed:  # on the master only: it may be lost, and so
            self._index(table_id, unconfirmed.version, epoch)  # is not cached; its due is
            raise  # indexed (if it survives, it must fire; if not, the entry is stale)
        if appended.replayed is not None:
            return replayed(table_id, appended.replayed, sub.request_hash)
        if moved and not appended.due_indexed:
            self._index(table_id, appended.version, epoch)
        if before == 0:
            self._list({table_id: (state.created_at, state.tenant)})
        # The cache keeps `state` itself: Result.state is to read, before the table's next
        # command in this process takes it.
        self.cache.put(table_id, Known(appended.version, None, state, head), encoded)
        return Result(decided.answer, state, decided.events)

    def _snapshot(self, version_before: int, state: TableState, head: str) -> bytes | None:
        """The new snapshot to store with the append: with the table's first events, and each
        time the version passes a multiple of `snapshot_every` (else None)."""
        every = self.snapshot_every
        if version_before == 0 or version_before // every != state.version // every:
            return encode_snapshot(state, head)
        return None

    @staticmethod
    def _record(sub: Submission, answer: Answer) -> Idempotency | None:
        """The idempotency record to store with the append: the answer, under the request's
        key (None: no key)."""
        if sub.idempotency_key is None:
            return None
        kept = orjson.dumps({"effect": answer.effect, "facts": answer.facts})
        return Idempotency(sub.idempotency_key, sub.request_hash, kept)

    def _lost_race(self, sub: Submission, conflict: VersionConflict) -> Result | Attempt:
        """Another command moved the table on first: decide again on what the refusal brought
        back (or a fresh load), unless the caller pinned the version (If-Match) or this is a
        create (the table exists now)."""
        if self.on_conflict is not None:
            self.on_conflict()
        if sub.if_match is not None:
            raise PreconditionFailed(
                f"the table moved on to version {conflict.actual}"
            ) from conflict
        if sub.create:
            return self._created_before(sub)
        if conflict.current is None:
            return Attempt()
        known = Known.loaded(conflict.current)
        self.cache.put(sub.table_id, known)
        return Attempt(known)

    def _created_before(self, sub: Submission) -> Result:
        """The table exists: the replay of its creation when this is that request again (a
        retry that raced the first one past the first look-up), else TableExists."""
        if sub.idempotency_key is not None:
            seen = self.store.find_idempotent(sub.table_id, sub.idempotency_key)
            if seen is not None:
                return replayed(sub.table_id, seen, sub.request_hash)
        raise TableExists(f"table {sub.table_id!r} already exists")
