"""Player protection's use cases at the tables: away and back, the answer to a reality
check, and applying a limits change at every table of the tenant where the player sits (a
time-out or exclusion that started ends the session, a lowered limit tightens it; docs/api.md,
"Player protection"): through an outbox entry written with the limits, applied by the writer
and, if it died first, by a dispatcher's sweep. The rules decide (service.rules.protection);
the limits themselves are the money use cases'."""

from __future__ import annotations

from functools import partial
from typing import Any

from service.rules import events as ev
from service.rules.decide import (
    ActWhenDue,
    AnswerRealityCheck,
    ComeBack,
    Command,
    EndSession,
    GoAway,
    TightenSession,
)
from service.rules.errors import InvalidCommand, RuleViolation
from service.rules.protection import SessionLimits, cool_downs_due
from service.rules.state import TableState
from service.rules.times import parse_iso
from service.rules.views import OPERATOR
from service.tables import Answer, TableNotFound, TableQuarantined, Tables

from .access import Caller, require_operator_or_player_of
from .ports import LedgerBook
from .values import NO_CONDITIONS, Conditions, Outcome, checked_table_id


def protection_changed(state: TableState, events: list[ev.Event]) -> Answer:
    """A seat's protection changed (away, back, a reality check answered): the seat as it is
    (`status` "left" when the answer cashed them out)."""
    seat = getattr(events[0], "seat")  # noqa: B009 - every protection command names its seat
    holder = state.seats[seat]
    return Answer(
        "changed",
        {
            "seat": seat,
            "player_id": holder.player_id,
            "status": holder.status,
            "stack": holder.stack,
            "away": holder.away,
            "reality_check_pending": holder.check_pending,
            "ending": holder.leaving or None,
            "version": state.version,
        },
    )


class ProtectionUses:
    """The protection use cases at the tables (mixed into `TableService`)."""

    tables: Tables
    ledger: LedgerBook | None

    def _for_seat(
        self,
        caller: Caller,
        table_id: str,
        make: Any,
        seat: int,
        conditions: Conditions,
    ) -> Outcome:
        """`make(by)` for the player at `seat`: that player's, or the operator's."""

        def command(state: TableState) -> Command:
            require_operator_or_player_of(caller, state, seat)
            by: Command = make("operator" if caller.role == OPERATOR else "player")
            return by

        return self._command(  # type: ignore[attr-defined, no-any-return]
            caller, checked_table_id(table_id), command, protection_changed, conditions
        )

    def go_away(
        self, caller: Caller, table_id: str, seat: int, *, conditions: Conditions = NO_CONDITIONS
    ) -> Outcome:
        """The player at `seat` is away (dealt out until back); before declaring in the hand
        in play, they forfeit it."""
        return self._for_seat(caller, table_id, partial(GoAway, seat), seat, conditions)

    def come_back(
        self, caller: Caller, table_id: str, seat: int, *, conditions: Conditions = NO_CONDITIONS
    ) -> Outcome:
        """The away player at `seat` is back, dealt in from the next hand."""
        return self._for_seat(caller, table_id, partial(ComeBack, seat), seat, conditions)

    def answer_reality_check(
        self,
        caller: Caller,
        table_id: str,
        seat: int,
        carry_on: bool,
        *,
        conditions: Conditions = NO_CONDITIONS,
    ) -> Outcome:
        """The answer to the reality check pending at `seat`: continue, or stop (cashed out
        at the next moment the player may leave)."""
        answer = "continue" if carry_on else "stop"
        make = partial(AnswerRealityCheck, seat, answer)
        return self._for_seat(caller, table_id, make, seat, conditions)

    def when_due(self, state: TableState) -> Command:
        """The clock's command (`close_due`), with the cool-down of each session limit it may
        end recorded first, so no ended session goes without it: a crash after recording it
        leaves the limit due, and the next dispatcher records the same end again. (The moment
        is read after the one the rules decide at: whatever they end is recorded.)"""
        if self.ledger is not None:
            for player_id, until in cool_downs_due(state, self.tables.now()).items():
                self.ledger.cool_down(state.tenant, player_id, until)
        return ActWhenDue()

    def apply_protection(self, tenant: str, player_id: str, entry: dict[str, Any]) -> int:
        """Apply a limits change's outbox `entry` (`outbox_entry`) at each of `tenant`'s tables
        where `player_id` sits, then drop it (unless a newer one replaced it); returns at how
        many tables it changed something. Each table's command is decided once: the rules end
        a session or tighten it once (a second is refused), and it carries the entry's id as
        its idempotency key, so a retry after a crash is answered again, not applied twice. A
        failure that may have applied (an unknown outcome, a store away) leaves the entry for
        a dispatcher's sweep (`apply_due_protection`)."""
        listing = self.tables.listing
        if listing is None or self.ledger is None:
            return 0
        command: Command = TightenSession(
            player_id,
            SessionLimits(entry["reality_check_minutes"], entry["session_limit_minutes"]),
        )
        if entry["reason"] is not None:
            command = EndSession(player_id, entry["reason"], entry["until"])
        key = f"protection:{player_id}:{entry['id']}"
        changed, after = 0, None
        while True:
            ids, after = listing.page(after, 200, tenant)
            changed += sum(self._apply_at(table_id, player_id, command, key) for table_id in ids)
            if after is None:
                break
        self.ledger.applied(tenant, player_id, entry)
        return changed

    def apply_due_protection(self, grace_s: float) -> int:
        """Apply every tenant's outbox entries older than `grace_s` (their writer had that long
        to apply them itself): a dispatcher's sweep. How many entries."""
        if self.ledger is None:
            return 0
        now = self.tables.now()
        due = [
            (tenant, player_id, entry)
            for tenant, player_id, entry in self.ledger.outbox()
            if (now - parse_iso(entry["at"])).total_seconds() >= grace_s
        ]
        for tenant, player_id, entry in due:
            self.apply_protection(tenant, player_id, entry)
        return len(due)

    def _apply_at(self, table_id: str, player_id: str, command: Command, key: str) -> int:
        try:
            state = self.tables.load(table_id)
            if not any(s.player_id == player_id for s in state.seated()):
                return 0
            self.tables.execute(table_id, command, idempotency_key=key)
        except (RuleViolation, InvalidCommand, TableQuarantined, TableNotFound):
            return 0  # not seated there any more, already applied, or the table is set aside
        return 1
