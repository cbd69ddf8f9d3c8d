"""What an audit can find wrong: the kinds of discrepancy (`KINDS`) and the first one found
(`Discrepancy`)."""

from __future__ import annotations

KINDS = {
    "missing": "a version the log should hold is not there (deleted, or the log was truncated)",
    "unexpected": "an entry that is not the next version (inserted, duplicated, out of order),"
    " or events after the table's version",
    "unreadable": "an event that cannot be read (not JSON, no data, an unknown type)",
    "chain": "the hash chain breaks (edited, dropped, inserted or reordered without recomputing"
    " the chain)",
    "rules": "the event is not what the rules decide from the events before it (a deal that is"
    " not its seed's or its commitment's, a settlement, bet, decision or ante the rules would"
    " not make)",
    "chips": "chips are not conserved after the event",
    "archive": "the event differs from the archive's copy of it",
    "ledger": "the stored ledger disagrees with the event",
    "wallet": "a wallet-funded movement without its casino-wallet transaction, or a"
    " transaction without its movement",
    "snapshot": "the stored snapshot is not the rebuilt table",
}
"""The kinds of discrepancy an audit names (the report's `first_discrepancy.kind`)."""


class Discrepancy(Exception):
    """The first thing found wrong, at an event version, and its kind (`KINDS`)."""

    def __init__(self, version: int, event_type: str, problem: str, kind: str = "rules") -> None:
        super().__init__(problem)
        self.version, self.event_type, self.problem = version, event_type, problem
        self.kind = kind

    def as_report(self) -> dict[str, int | str]:
        """The audit report's `first_discrepancy`."""
        return {
            "version": self.version,
            "event_type": self.event_type,
            "kind": self.kind,
            "problem": self.problem,
        }
