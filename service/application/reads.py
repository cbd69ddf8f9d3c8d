"""The use cases that read: a table, its log, a finished hand's history, and audits (queued
and read back). Who may read what is decided here, on the table's state."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from service.eventlog.codec import decode_event
from service.eventlog.store import ArchiveUnavailable, CorruptLog, StoredEvent
from service.rules import events as ev
from service.rules.history import hand_history
from service.rules.state import TableState
from service.rules.times import iso
from service.rules.views import (
    AUDITOR,
    OPERATOR,
    Viewer,
    event_view,
    may_see,
    table_status,
    table_view,
)
from service.tables import LogUnreadable, TableNotFound, TableQuarantined, Tables

from .access import (
    DEFAULT_TENANT,
    Caller,
    hide_quarantined,
    may_view,
    require,
    require_tenant_of,
    tenant_scope,
)
from .errors import AuditNotFound, HandNotFound, ReportNotFound
from .ports import Catcher, HandArchive, Jobs
from .values import NO_CONDITIONS, Conditions, HandHistory, Outcome, Subject, checked_table_id

FILTER_BUDGET = 500
"""The most tables one page of the table list filtered by status looks at."""
LIST_CHUNK = 100
"""How many of the list's tables such a page reads at a time (at least its `limit`)."""


def _table_page(tables: list[dict[str, Any]], next_after: str | None) -> Outcome:
    return Outcome("found", {"tables": tables, "next_after": next_after})


def render_events(
    state: TableState, viewer: Viewer, read: list[tuple[int, ev.Event]]
) -> list[dict[str, Any]]:
    """Events as `viewer` may see them, the table being at `state`: what `/events` returns
    and the live feed sends."""
    return [
        {"version": v, **event_view(e, state, viewer, v)}
        for v, e in read
        if may_see(e, viewer, v)  # (a player's protection events are theirs)
    ]


@dataclass
class TableReads:
    """The reading use cases of the tables kept by `tables`; audits and reports are `jobs`."""

    tables: Tables
    jobs: Jobs
    archive: HandArchive | None = None
    archiver: Catcher | None = None
    """Catches a table's archive up before a page of its hands (None: the dispatchers' does)."""

    def _load(self, caller: Caller, table_id: str) -> TableState:
        """The table's state for `caller`: a quarantined table is refused (TableQuarantined)
        to those who may know it, and not found for another tenant's callers."""
        try:
            return self.tables.load(checked_table_id(table_id))
        except TableQuarantined as error:
            hide_quarantined(caller, error)

    def table(self, caller: Caller, table_id: str) -> Outcome:
        """The table as the caller may see it."""
        state = self._load(caller, table_id)
        return Outcome("found", table_view(state, may_view(caller, state)), state.version)

    def table_list(
        self, caller: Caller, after: str | None, limit: int, status: str | None = None
    ) -> Outcome:
        """A page of the caller's tenant's tables, newest first (operators and auditors; a
        regulator's page has every tenant's), only those of `status` when it is given.

        With `status` a page looks at no more than FILTER_BUDGET tables (each loaded to read
        its status), so it may hold fewer than `limit` tables, none even, and still name the
        next: the reader pages on until `next_after` is null."""
        require(caller, OPERATOR, AUDITOR)
        listing = self.tables.listing
        if listing is None:
            return _table_page([], None)
        tenant = tenant_scope(caller)
        budget = limit if status is None else max(limit, FILTER_BUDGET)
        chunk = min(budget, max(limit, LIST_CHUNK))
        rows: list[dict[str, Any]] = []
        cursor, looked = after, 0
        while True:
            found = listing.entries(cursor, chunk + 1, tenant)
            for at, (table_id, resume) in enumerate(found[:chunk]):
                looked += 1
                row = self._summary(table_id) if table_id is not None else None
                if row is not None and status in (None, row["status"]):
                    rows.append(row)
                if len(rows) == limit or looked == budget:
                    return _table_page(rows, resume if at + 1 < len(found) else None)
            if len(found) <= chunk:
                return _table_page(rows, None)
            cursor = found[chunk - 1][1]

    def _summary(self, table_id: str) -> dict[str, Any] | None:
        """A table as the list shows it (None: listed, but gone or quarantined)."""
        try:
            state = self.tables.load(table_id)
        except (TableNotFound, LogUnreadable):
            return None
        return {
            "table_id": state.table_id,
            "tenant": state.tenant,
            "status": table_status(state),
            "version": state.version,
            "rules": state.rules.to_dict(),
            "created_at": state.created_at,
        }

    def check_viewer(self, caller: Caller, table_id: str) -> None:
        """TableNotFound or Forbidden unless the caller may read the table and its events."""
        may_view(caller, self._load(caller, table_id))

    # --- the log --------------------------------------------------------------------------

    def events(self, caller: Caller, table_id: str, after: int, limit: int) -> Outcome:
        """The events after version `after` (at most `limit`), as the caller may see them,
        up to the version of the state their access was checked on (and the events are
        rendered with): what was appended since is the next read's, checked again (a player
        who left in between is refused it)."""
        state = self._load(caller, table_id)
        viewer = may_view(caller, state)
        limit = min(limit, state.version - after)
        read = self.tables.events(table_id, after, limit) if limit > 0 else []
        items = render_events(state, viewer, read)
        next_after = read[-1][0] if read else after
        body = {"events": items, "version": state.version, "next_after": next_after}
        return Outcome("found", body, state.version)

    def hand_history(self, caller: Caller, table_id: str, hand: int) -> HandHistory:
        """The record of finished hand `hand`, as the caller may see it."""
        state = self._load(caller, table_id)
        viewer = may_view(caller, state)
        if hand < 1 or hand > state.hands_dealt:
            raise HandNotFound(f"table {table_id} has no hand {hand}")
        if state.hand is not None and state.hand.number == hand:
            raise HandNotFound(f"hand {hand} is still in play; its history is kept once it is over")
        record = hand_history(state, hand, self._hand_events(table_id, hand), viewer)
        return HandHistory(record, state.version, state.rules)

    def hands(
        self,
        caller: Caller,
        *,
        player_id: str | None = None,
        table_id: str | None = None,
        start: datetime | None = None,
        end: datetime | None = None,
        after: str | None = None,
        limit: int = 20,
    ) -> Outcome:
        """A page of the finished hands of the caller's tenant (a regulator: every tenant's),
        newest first, each as `hand_history` has it; filtered by player, table and end time.
        Hands are listed once archived (the archive follows the logs within a second); a
        page of one table first catches that table's archive up, so it is current."""
        require(caller, OPERATOR, AUDITOR)
        if self.archive is None:
            raise ArchiveUnavailable("this service keeps no archive (GUTS_DATABASE_URL)")
        states: dict[str, TableState] = {}
        if table_id is not None:
            state = self._load(caller, table_id)
            may_view(caller, state)
            states[table_id] = state
            if self.archiver is not None:
                self.archiver.safely_catch_up(table_id)
        tenant = tenant_scope(caller)
        rows, cursor = self.archive.hands(
            tenant=tenant,
            player_id=player_id,
            table_id=table_id,
            start=start,
            end=end,
            after=after,
            limit=limit,
        )
        stored = self.archive.hand_events([(row.table_id, row.hand) for row in rows])
        bodies = []
        for row in rows:
            if row.table_id not in states:
                try:
                    states[row.table_id] = self.tables.load(row.table_id)
                except LogUnreadable:
                    continue  # a quarantined table's hands wait for its repair
            state = states[row.table_id]
            found = _of_hand(stored.get((row.table_id, row.hand), []), row.hand)
            bodies.append(hand_history(state, row.hand, found, may_view(caller, state)))
        return Outcome("found", {"hands": bodies, "next_after": cursor})

    def _hand_events(self, table_id: str, hand: int) -> list[tuple[int, ev.Event]]:
        """The events of one finished hand: from its deal to its resolution or void.

        Where the archive has the hand, one read of its versions; otherwise (no archive, or
        not archived yet) a scan of the log in pages.
        """
        if self.archive is not None:
            archived = self.archive.hand_events([(table_id, hand)]).get((table_id, hand))
            if archived:
                return _of_hand(archived, hand)
        found: list[tuple[int, ev.Event]] = []
        after = 0
        while True:
            page = self.tables.events(table_id, after, 1000)
            if not page:
                return found
            for version, event in page:
                if getattr(event, "hand", None) == hand:
                    found.append((version, event))
                    if isinstance(event, ev.HandResolved | ev.HandVoided):
                        return found
            after = page[-1][0]

    # --- collusion reports ------------------------------------------------------------------

    def start_collusion_report(
        self,
        caller: Caller,
        *,
        start: datetime | None,
        end: datetime | None,
        min_hands: int,
    ) -> Outcome:
        """Queue a collusion report over the archived hands of the caller's tenant (a
        regulator's: every tenant's) that ended in [start, end) (operators and auditors)."""
        require(caller, OPERATOR, AUDITOR)
        if self.archive is None:
            raise ArchiveUnavailable("this service keeps no archive (GUTS_DATABASE_URL)")
        report_id = secrets.token_hex(12)
        record = {
            "report_id": report_id,
            "kind": "collusion",
            "tenant": tenant_scope(caller),
            "from": iso(start) if start else None,
            "to": iso(end) if end else None,
            "min_hands": min_hands,
        }
        self.jobs.start_report(report_id, record)
        body = {"report_id": report_id, "status": "queued"}
        return Outcome("started", body, subject=Subject("report", report_id))

    def report(self, caller: Caller, report_id: str) -> Outcome:
        """A report's status, and its result once finished (its tenant's operators and
        auditors, and regulators)."""
        require(caller, OPERATOR, AUDITOR)
        known = None
        if report_id.isalnum():
            known = self.jobs.report_record(report_id)
        if known is None or tenant_scope(caller) not in (None, known["tenant"]):
            raise ReportNotFound(f"no report {report_id!r}"[:80])
        if known["status"] in ("queued", "running") and self.jobs.report_failed(report_id):
            known = {**known, "status": "failed"}
        return Outcome("found", {"result": None, **known})

    # --- audits ---------------------------------------------------------------------------

    def start_audit(
        self, caller: Caller, table_id: str, *, conditions: Conditions = NO_CONDITIONS
    ) -> Outcome:
        """Queue a rebuild of the table from its log (operators and auditors). With an
        idempotency key, the same key for the same table and request is the same audit,
        queued once."""
        require(caller, OPERATOR, AUDITOR)
        self.tables.check_exists(checked_table_id(table_id))  # (a damaged log is audited)
        require_tenant_of(caller, table_id, self._tenant_of(table_id))
        key = conditions.idempotency_key
        if key is None:
            audit_id = secrets.token_hex(12)
        else:
            scoped = f"{table_id}\0{conditions.request_hash}\0{key}"
            audit_id = hashlib.sha256(scoped.encode()).hexdigest()[:24]
        known = self.jobs.audit_record(audit_id)
        if known is None:
            self.jobs.start_audit(audit_id, table_id)
        status = known["status"] if known else "queued"
        body = {"audit_id": audit_id, "table_id": table_id, "status": status}
        return Outcome("started", body, subject=Subject("audit", audit_id))

    def audit(self, caller: Caller, audit_id: str) -> Outcome:
        """An audit's status, and its report once it is finished."""
        require(caller, OPERATOR, AUDITOR)
        known = None
        if audit_id.isalnum():
            known = self.jobs.audit_record(audit_id)
        if known is None or not self._may_read_audit(caller, known):
            raise AuditNotFound(f"no audit {audit_id!r}"[:80])
        if known["status"] in ("queued", "running") and self.jobs.audit_failed(audit_id):
            known = {**known, "status": "failed"}
        return Outcome("found", {"audit_id": audit_id, "result": None, **known})

    def _may_read_audit(self, caller: Caller, known: dict[str, Any]) -> bool:
        """Whether the caller may read an audit: of one of their tenant's tables (an audit
        of another tenant's table is not found, as the table is not)."""
        table_id = str(known.get("table_id", ""))
        try:
            require_tenant_of(caller, table_id, self._tenant_of(table_id))
        except TableNotFound:
            return False
        return True

    def _tenant_of(self, table_id: str) -> str:
        """The table's tenant; a log damaged from its first event is the default tenant's
        (the tenant every table had before tenants existed)."""
        try:
            return self.tables.tenant_of(table_id)
        except (LogUnreadable, CorruptLog):
            return DEFAULT_TENANT


def _of_hand(stored: Sequence[StoredEvent], hand: int) -> list[tuple[int, ev.Event]]:
    """The events of hand `hand` among `stored` (a hand's span of the log), decoded."""
    decoded = ((s.version, decode_event(s.data)) for s in stored)
    return [(version, event) for version, event in decoded if getattr(event, "hand", None) == hand]
