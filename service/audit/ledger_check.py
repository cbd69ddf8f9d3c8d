"""The audit's reconciliation of a table's stored ledger with its log (`service.audit.rebuild`).

Event by event, the entries stored for that version must be exactly those the rules' ledger
derives from the event (a changed, missing or extra entry is named, with its tx_id), and the
stored entries' running sums must be the replayed state's stacks. Only the versions the
ledger has followed up to (its position) are compared: a ledger behind its log is late, not
wrong; the report says how far it got.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Protocol

from service.rules import events as ev
from service.rules import ledger
from service.rules.state import LEFT, TableState


class StoredLedger(Protocol):
    """Where the audit reads a table's stored entries (`service.projections.ledger.LedgerStore`)."""

    def table_entries(self, tenant: str, table_id: str) -> tuple[int, list[dict[str, Any]]]:
        """The table's position and its stored entries, oldest first."""
        ...


class LedgerMismatch(Exception):
    """The stored ledger does not agree with the log at this version."""

    def __init__(self, version: int, event_type: str, problem: str) -> None:
        super().__init__(problem)
        self.version, self.event_type, self.problem = version, event_type, problem


class LedgerCheck:
    """The reconciliation of one table (see the module doc)."""

    def __init__(self, position: int, stored: list[dict[str, Any]]) -> None:
        self.position = position
        self.count = len(stored)
        self.by_version: dict[int, list[dict[str, Any]]] = {}
        for entry in stored:
            self.by_version.setdefault(int(entry.get("version", 0)), []).append(entry)
        self.book = ledger.Book()
        self.sums: dict[str, int] = {}

    def check(self, state: TableState, version: int, event: ev.Event) -> None:
        """Compare the entries stored for `version` with those `event` derives, and the
        running sums with `state` (the state after the event)."""
        self.book, derived = ledger.step(self.book, version, event)
        if version > self.position:
            return
        stored = self.by_version.pop(version, [])
        expected = {e.tx_id: asdict(e) for e in derived}
        found = {str(e.get("tx_id")): e for e in stored}
        problems = []
        for tx_id, entry in expected.items():
            if tx_id not in found:
                problems.append(f"entry {tx_id} is missing")
            elif found[tx_id] != entry:
                fields = sorted(k for k in entry if found[tx_id].get(k) != entry[k])
                problems.append(f"entry {tx_id} differs in {', '.join(fields)}")
        problems += [f"entry {tx_id} is extra" for tx_id in found if tx_id not in expected]
        if len(stored) > len(found):
            problems.append("an entry is stored twice")
        if problems:
            raise LedgerMismatch(version, event.TYPE, f"the ledger: {'; '.join(problems)}")
        for entry in stored:
            if entry.get("player_id") is not None:
                player = str(entry["player_id"])
                self.sums[player] = self.sums.get(player, 0) + int(entry["amount"])
        for seat in state.seats.values():
            if seat.status != LEFT and self.sums.get(seat.player_id, 0) != seat.stack:
                raise LedgerMismatch(
                    version,
                    event.TYPE,
                    f"the ledger: the entries of {seat.player_id!r} sum to "
                    f"{self.sums.get(seat.player_id, 0)}, their stack is {seat.stack}",
                )

    def check_end(self, version: int) -> None:
        """No entries may be stored for versions the log does not have."""
        later = sorted(v for v in self.by_version if v > 0)
        if later or 0 in self.by_version:
            at = later[0] if later else 0
            ids = ", ".join(str(e.get("tx_id")) for e in self.by_version[at])
            raise LedgerMismatch(at, "ledger", f"the ledger: entry {ids} is extra")

    def summary(self) -> dict[str, int]:
        """How far the stored ledger has followed the log, and how many entries it has."""
        return {"position": self.position, "entries": self.count}
