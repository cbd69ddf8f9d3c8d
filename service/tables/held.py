"""Quarantine as the tables see it: a table held aside is refused before anything is read,
and one found unreadable is set aside (listed for the dispatchers, whose retries release it
once it reads again, and for `/healthz`)."""

from __future__ import annotations

import logging

from service.eventlog import decoding
from service.eventlog.due_index import DueIndex, QuarantineView

from .errors import TableQuarantined

log = logging.getLogger("guts.tables")


class Held:
    """What `Tables` does with quarantined tables (a part of it, kept apart for its size)."""

    index: DueIndex | None
    held: QuarantineView | None
    quarantine_retry_s: float

    def tenant_of(self, table_id: str) -> str:
        raise NotImplementedError

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
