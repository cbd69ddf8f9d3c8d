"""The verdict on one hand history: each check's result, and the report that collects them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

VERIFIED = "verified"
FAILED = "failed"
NOT_VERIFIABLE = "not_verifiable"
INVALID = "invalid"


class Check(NamedTuple):
    """One check: its name (e.g. "commitment", "cards of seat 2"), whether it passed, and why."""

    name: str
    passed: bool
    detail: str


@dataclass
class VerifyReport:
    """The verdict on one hand history.

    ``status`` is "verified" (every check passed), "failed" (some check failed: the history
    does not match its seed), "not_verifiable" (nothing failed, but the deal cannot be checked
    from this history: a stacked sandbox deal, a deck carried over from an earlier hand, or a
    hand whose seed is not published yet) or "invalid" (not a hand history). ``ok`` is true only
    for "verified".
    """

    ok: bool
    checks: list[Check] = field(default_factory=list)
    status: str = VERIFIED
    hand_id: str | None = None

    @property
    def failed(self) -> list[Check]:
        """The checks that did not pass."""
        return [check for check in self.checks if not check.passed]

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data."""
        return {
            "ok": self.ok,
            "status": self.status,
            "hand_id": self.hand_id,
            "checks": [check._asdict() for check in self.checks],
        }

    def render(self) -> str:
        """The report as text for a terminal: a verdict line, then one line per check."""
        verdict = {
            VERIFIED: "VERIFIED",
            FAILED: "FAILED",
            NOT_VERIFIABLE: "NOT VERIFIABLE",
            INVALID: "NOT A HAND HISTORY",
        }[self.status]
        lines = [f"hand {self.hand_id or '?'}: {verdict}"]
        width = max((len(check.name) for check in self.checks), default=0)
        for check in self.checks:
            mark = "ok  " if check.passed else "FAIL"
            lines.append(f"  {mark}  {check.name.ljust(width)}  {check.detail}")
        return "\n".join(lines)


class CheckList:
    """Collects checks; "not verifiable" findings are kept apart from failures."""

    def __init__(self) -> None:
        self.items: list[Check] = []
        self.unverifiable = False
        self.failures = False

    def add(self, name: str, passed: bool, detail: str) -> bool:
        self.items.append(Check(name, passed, detail))
        self.failures |= not passed
        return passed

    def cannot_verify(self, name: str, detail: str) -> None:
        self.items.append(Check(name, False, f"not verifiable: {detail}"))
        self.unverifiable = True

    def report(self, hand_id: str | None) -> VerifyReport:
        status = FAILED if self.failures else NOT_VERIFIABLE if self.unverifiable else VERIFIED
        return VerifyReport(status == VERIFIED, self.items, status, hand_id)


def describe(cards: Sequence[str]) -> str:
    return " ".join(cards) if cards else "(none)"
