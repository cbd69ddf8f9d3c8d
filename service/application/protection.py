"""Player protection's use cases at the tables: away and back, the answer to a reality
check, and ending a player's sessions at every table of the tenant when a time-out or an
exclusion starts (docs/api.md, "Player protection"). The rules decide (service.rules.protection);
the limits themselves are the money use cases'."""

from __future__ import annotations

from functools import partial
from typing import Any

from service.rules import events as ev
from service.rules.decide import AnswerRealityCheck, ComeBack, Command, EndSession, GoAway
from service.rules.errors import GutsError
from service.rules.state import TableState
from service.rules.views import OPERATOR
from service.tables import Answer, TableQuarantined, Tables

from .access import Caller, require_operator_or_player_of
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

    def end_sessions(self, tenant: str, player_id: str, reason: str, until: str) -> int:
        """End `player_id`'s session at each of `tenant`'s tables where they sit (a time-out
        or exclusion that started: `reason`, until `until`); returns at how many tables. Each
        table's command is decided once: the rules end a session once (a second is refused),
        and it carries an idempotency key made of the break, so a retry is answered again."""
        listing = self.tables.listing
        if listing is None:
            return 0
        ended, after = 0, None
        key = f"protection:{player_id}:{reason}:{until}"
        while True:
            ids, after = listing.page(after, 200, tenant)
            for table_id in ids:
                ended += self._end_session_at(table_id, player_id, reason, until, key)
            if after is None:
                return ended

    def _end_session_at(
        self, table_id: str, player_id: str, reason: str, until: str, key: str
    ) -> int:
        try:
            state = self.tables.load(table_id)
            if not any(s.player_id == player_id for s in state.seated()):
                return 0
            self.tables.execute(table_id, EndSession(player_id, reason, until), idempotency_key=key)
        except (GutsError, TableQuarantined):
            return 0  # not seated there any more, already ending, or the table is set aside
        return 1
