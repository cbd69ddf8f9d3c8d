"""The tables' upkeep, for the dispatchers and operators rather than commands: the table
list's repair, a table's due indexed again, and a quarantined table's log read in full; and
the index and list kept up to date after a command (best effort: their repairs cover a
failure)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from service.eventlog.codec import decode_current
from service.eventlog.due_index import DueIndex
from service.eventlog.redis_errors import REDIS_ERRORS
from service.eventlog.store import CorruptLog, EventStore
from service.eventlog.table_list import TableList
from service.rules.errors import GutsError
from service.rules.state import TableState

from .reading import chained, readable

log = logging.getLogger("guts.tables")


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

    def _index(self, table_id: str, version: int, due: float | None) -> None:
        """Tell the due index the table's new due. Failing to never fails the command (its
        events are stored): the index's repair finds the table within seconds."""
        if self.index is None:
            return
        try:
            self.index.record(table_id, version, due)
        except REDIS_ERRORS as error:  # (a master away: by the hundred, no traceback)
            log.warning(
                "due not indexed for table %s: %s", table_id, error, extra={"table_id": table_id}
            )
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
