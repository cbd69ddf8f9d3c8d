"""The tables' upkeep, for the dispatchers and operators rather than commands: the table
list's repair, a table's due indexed again, and a quarantined table's log read in full."""

from __future__ import annotations

from collections.abc import Sequence

from service.eventlog.codec import decode_current
from service.eventlog.due_index import DueIndex
from service.eventlog.store import CorruptLog, EventStore
from service.eventlog.table_list import TableList
from service.rules.errors import GutsError
from service.rules.state import TableState

from .reading import chained, readable


class Upkeep:
    """What `Tables` does besides commands (a part of it, kept apart for its size)."""

    store: EventStore
    index: DueIndex | None
    listing: TableList | None

    def load(self, table_id: str) -> TableState:
        raise NotImplementedError

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
            readable(table_id, lambda: decode_current(snapshot, loaded.tail))
        trimmed = getattr(self.store, "trimmed", lambda _: 0)(table_id)  # (Redis' part)
        stored = self.store.read(table_id, trimmed)
        readable(table_id, lambda: chained(stored, trimmed + 1 if trimmed else 0))
