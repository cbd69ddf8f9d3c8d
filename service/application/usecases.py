"""The game's use cases, by name. Each one checks who is calling, loads the table, lets the
rules decide and appends what they decided (through `Tables.execute`), and returns a plain
`Outcome`: no HTTP in here. Who may act for a seat is decided here, on the table's state;
the edge only says who the caller is (`Caller`) and what the request asks (`Conditions`).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from service.rules import commands
from service.rules import events as ev
from service.rules.clock import Due, NothingDue, act_when_due, next_due
from service.rules.ruleset import resolve_ruleset
from service.rules.state import TableState
from service.rules.views import OPERATOR, Viewer, event_view
from service.tables import Decide, Respond, TableQuarantined

from .access import (
    DEFAULT_TENANT,
    Caller,
    Forbidden,
    hide_quarantined,
    require,
    require_operator_or_player_of,
    require_player_of,
    require_tenant,
)
from .hooks import WebhookUses
from .money import MoneyUses
from .ports import Catcher, LedgerBook, WebhookRegistry
from .reads import TableReads
from .values import NO_CONDITIONS, Conditions, IssueToken, Outcome, checked_table_id


def _seat_body(state: TableState, seat: int) -> dict[str, Any]:
    holder = state.seats[seat]
    return {
        "seat": seat,
        "player_id": holder.player_id,
        "stack": holder.stack,
        "status": holder.status,
        "version": state.version,
    }


def _hand_body(state: TableState) -> dict[str, Any]:
    hand = state.hand
    number = hand.number if hand else state.hands_dealt
    return {"hand": number, "phase": hand.phase if hand else None, "version": state.version}


SeatCommand = Callable[[TableState, int, datetime], list[ev.Event]]


@dataclass
class TableService(TableReads, MoneyUses, WebhookUses):
    """Every use case of the tables kept by `tables` (the reading ones are `TableReads`', the
    ledger's and limits' `MoneyUses`'). `issue_token` makes a seated player's token (None:
    nobody can be seated through this one, as in the dispatcher); `sandbox` allows stacked
    decks; `ledger` keeps the ledger and the players' limits (None: no limits apply), which
    `follower` catches up (None: the dispatchers' follower alone does)."""

    issue_token: IssueToken | None = None
    sandbox: bool = False
    ledger: LedgerBook | None = None
    follower: Catcher | None = None
    webhooks: WebhookRegistry | None = None

    def _execute(
        self,
        caller: Caller,
        table_id: str,
        decide: Decide,
        respond: Respond,
        conditions: Conditions,
        *,
        create: bool = False,
    ) -> Outcome:
        """Run a command for `caller`: another tenant's table is not found for them, before
        anything else is looked at (an idempotent replay, If-Match)."""

        def guard(state: TableState) -> None:
            require_tenant(caller, state)

        try:
            result = self.tables.execute(
                table_id,
                decide,
                respond,
                create=create,
                if_match=None if create else conditions.if_match,
                idempotency_key=conditions.idempotency_key,
                request_hash=conditions.request_hash,
                guard=None if create else guard,
            )
        except TableQuarantined as error:
            hide_quarantined(caller, error)
        body = result.body
        version = body.get("version") if isinstance(body, dict) else None
        # What a 201 made (a table, a seat, a hand in play) is read in the table's view.
        location = f"/v1/tables/{table_id}" if result.status == 201 else None
        return Outcome(result.status, body, version, result.replayed, location)

    # --- tables ---------------------------------------------------------------------------

    def create_table(
        self,
        caller: Caller,
        preset: str,
        overrides: Mapping[str, Any],
        *,
        table_id: str | None = None,
        conditions: Conditions = NO_CONDITIONS,
    ) -> Outcome:
        """A new table with the preset's rules and `overrides`. Without `table_id`, a fresh
        one; with an idempotency key, one derived from the sender and the key, so a retry
        lands on the same table (and is answered again) instead of creating another."""
        require(caller, OPERATOR)
        rules = resolve_ruleset(preset, overrides)
        new_id = checked_table_id(table_id) if table_id else self._new_table_id(conditions)
        first_seed = self.tables.new_seed()

        def decide(state: TableState, now: datetime) -> list[ev.Event]:
            return commands.create_table(
                new_id, rules, now, first_seed, caller.tenant or DEFAULT_TENANT
            )

        def respond(state: TableState, events: list[ev.Event]) -> tuple[int, Any]:
            return 201, {"table_id": new_id, "rules": rules.to_dict(), "version": state.version}

        return self._execute(caller, new_id, decide, respond, conditions, create=True)

    @staticmethod
    def _new_table_id(conditions: Conditions) -> str:
        if conditions.idempotency_key is None:
            return secrets.token_urlsafe(12)
        scoped = f"{conditions.sender}\0{conditions.idempotency_key}"
        return f"t{hashlib.sha256(scoped.encode()).hexdigest()[:20]}"

    # --- players --------------------------------------------------------------------------

    def seat(
        self,
        caller: Caller,
        table_id: str,
        player_id: str,
        buy_in: int,
        seat: int | None = None,
        *,
        conditions: Conditions = NO_CONDITIONS,
    ) -> Outcome:
        """Seat `player_id` with `buy_in` chips (at `seat`, or the first free one); the answer
        carries the player's token."""
        require(caller, OPERATOR)
        issue_token = self.issue_token
        if issue_token is None:
            raise Forbidden("players cannot be seated here (no tokens can be issued)")

        def decide(state: TableState, now: datetime) -> list[ev.Event]:
            excluded = self.excluded_until(state, player_id)
            return commands.seat_player(state, player_id, buy_in, now, seat, excluded)

        def respond(state: TableState, events: list[ev.Event]) -> tuple[int, Any]:
            (seated,) = events
            assert isinstance(seated, ev.PlayerSeated)
            holder = state.seats[seated.seat]
            return 201, {
                "seat": seated.seat,
                "player_id": seated.player_id,
                "token": issue_token(state.table_id, seated.seat, holder.joined),
                "stack": holder.stack,
                "status": holder.status,
                "version": state.version,
            }

        return self._execute(caller, checked_table_id(table_id), decide, respond, conditions)

    def top_up(
        self,
        caller: Caller,
        table_id: str,
        seat: int,
        amount: int,
        *,
        conditions: Conditions = NO_CONDITIONS,
    ) -> Outcome:
        """Add `amount` chips to the stack at `seat`."""
        require(caller, OPERATOR)

        def decide(state: TableState, now: datetime) -> list[ev.Event]:
            return commands.top_up(state, seat, amount, now)

        def respond(state: TableState, events: list[ev.Event]) -> tuple[int, Any]:
            return 200, _seat_body(state, seat)

        return self._execute(caller, checked_table_id(table_id), decide, respond, conditions)

    def sit_out(
        self, caller: Caller, table_id: str, seat: int, *, conditions: Conditions = NO_CONDITIONS
    ) -> Outcome:
        """The player at `seat` sits out from the next hand (the operator or that player)."""
        return self._seat_command(caller, table_id, seat, commands.sit_out, conditions)

    def sit_in(
        self, caller: Caller, table_id: str, seat: int, *, conditions: Conditions = NO_CONDITIONS
    ) -> Outcome:
        """The player at `seat` comes back for the next hand (the operator or that player)."""
        return self._seat_command(caller, table_id, seat, commands.sit_in, conditions)

    def _seat_command(
        self,
        caller: Caller,
        table_id: str,
        seat: int,
        command: SeatCommand,
        conditions: Conditions,
    ) -> Outcome:
        def decide(state: TableState, now: datetime) -> list[ev.Event]:
            require_operator_or_player_of(caller, state, seat)
            return command(state, seat, now)

        def respond(state: TableState, events: list[ev.Event]) -> tuple[int, Any]:
            return 200, _seat_body(state, seat)

        return self._execute(caller, checked_table_id(table_id), decide, respond, conditions)

    def leave(
        self, caller: Caller, table_id: str, seat: int, *, conditions: Conditions = NO_CONDITIONS
    ) -> Outcome:
        """The player at `seat` leaves and cashes out (the operator or that player)."""

        def decide(state: TableState, now: datetime) -> list[ev.Event]:
            require_operator_or_player_of(caller, state, seat)
            return commands.leave(state, seat, now)

        def respond(state: TableState, events: list[ev.Event]) -> tuple[int, Any]:
            (left,) = events
            assert isinstance(left, ev.PlayerLeft)
            return 200, {"seat": seat, "cash_out": left.cash_out, "version": state.version}

        return self._execute(caller, checked_table_id(table_id), decide, respond, conditions)

    def set_client_seed(
        self,
        caller: Caller,
        table_id: str,
        seat: int,
        client_seed: str,
        *,
        conditions: Conditions = NO_CONDITIONS,
    ) -> Outcome:
        """The player at `seat` chooses their client seed for the next deal. Only that
        player: an operator's choice would not be the player's entropy."""

        def decide(state: TableState, now: datetime) -> list[ev.Event]:
            return commands.set_client_seed(
                state, require_player_of(caller, state, seat), client_seed, now
            )

        def respond(state: TableState, events: list[ev.Event]) -> tuple[int, Any]:
            (chosen,) = events
            assert isinstance(chosen, ev.ClientSeedSet)
            return 200, {
                "seat": chosen.seat,
                "client_seed": chosen.client_seed,
                "hand": chosen.hand,
                "version": state.version,
            }

        return self._execute(caller, checked_table_id(table_id), decide, respond, conditions)

    # --- hands ----------------------------------------------------------------------------

    def deal(
        self,
        caller: Caller,
        table_id: str,
        *,
        client_seed: str = "",
        stacked_deck: Mapping[str, Sequence[str]] | None = None,
        conditions: Conditions = NO_CONDITIONS,
    ) -> Outcome:
        """Deal the next hand; `stacked_deck` (sandbox only) fixes cards."""
        require(caller, OPERATOR)
        if stacked_deck is not None and not self.sandbox:
            raise Forbidden(
                "stacked_deck is accepted only when the server runs with GUTS_SANDBOX=1"
            )
        seed, next_seed = self.tables.new_seed(), self.tables.new_seed()
        stacked = None if stacked_deck is None else {k: list(v) for k, v in stacked_deck.items()}

        def decide(state: TableState, now: datetime) -> list[ev.Event]:
            allowances = self.allowances(state, [s.player_id for s in state.seated()])
            return commands.deal(state, seed, now, client_seed, stacked, next_seed, allowances)

        def respond(state: TableState, events: list[ev.Event]) -> tuple[int, Any]:
            (dealt,) = events
            assert isinstance(dealt, ev.HandDealt)
            return 201, {
                "hand": dealt.hand,
                "game": dealt.game,
                "deadline": dealt.deadline,
                "order": list(dealt.order),
                "commitment": dealt.commitment,
                "next_commitment": dealt.next_commitment,
                "version": state.version,
            }

        return self._execute(caller, checked_table_id(table_id), decide, respond, conditions)

    def declare(
        self,
        caller: Caller,
        table_id: str,
        decision: str,
        *,
        conditions: Conditions = NO_CONDITIONS,
    ) -> Outcome:
        """The calling player declares `decision` for the hand in play."""

        def decide(state: TableState, now: datetime) -> list[ev.Event]:
            seat = require_player_of(caller, state)
            allowance = None
            if decision != "out":  # out is always allowed: no limit to look up
                player = state.seats[seat].player_id
                allowance = self.allowances(state, [player]).get(player)
            return commands.declare(state, seat, decision, now, allowance)

        def respond(state: TableState, events: list[ev.Event]) -> tuple[int, Any]:
            first = events[0]
            assert isinstance(first, ev.DecisionMade)
            return 200, {**_hand_body(state), "seat": first.seat, "decision": first.decision}

        return self._execute(caller, checked_table_id(table_id), decide, respond, conditions)

    def pass_card(
        self, caller: Caller, table_id: str, card: str, *, conditions: Conditions = NO_CONDITIONS
    ) -> Outcome:
        """The calling player passes `card` on."""

        def decide(state: TableState, now: datetime) -> list[ev.Event]:
            return commands.pass_card(state, require_player_of(caller, state), card, now)

        def respond(state: TableState, events: list[ev.Event]) -> tuple[int, Any]:
            first = events[0]
            assert isinstance(first, ev.CardPassed)
            return 200, {**_hand_body(state), "seat": first.seat, "card": first.card}

        return self._execute(caller, checked_table_id(table_id), decide, respond, conditions)

    def draw(
        self,
        caller: Caller,
        table_id: str,
        discard: Sequence[str],
        *,
        conditions: Conditions = NO_CONDITIONS,
    ) -> Outcome:
        """The calling player discards `discard` and draws as many."""
        discarded = list(discard)

        def decide(state: TableState, now: datetime) -> list[ev.Event]:
            return commands.draw(state, require_player_of(caller, state), discarded, now)

        def respond(state: TableState, events: list[ev.Event]) -> tuple[int, Any]:
            (drawn,) = events
            assert isinstance(drawn, ev.CardsDrawn)
            return 200, {
                **_hand_body(state),
                "seat": drawn.seat,
                "discarded": list(drawn.discarded),
                "drawn": list(drawn.drawn),
                "cards": list(state.hand.cards[drawn.seat]) if state.hand else [],
            }

        return self._execute(caller, checked_table_id(table_id), decide, respond, conditions)

    def bet(
        self, caller: Caller, table_id: str, action: str, *, conditions: Conditions = NO_CONDITIONS
    ) -> Outcome:
        """The calling player acts in the betting round: check, bet, call, raise or fold."""

        def decide(state: TableState, now: datetime) -> list[ev.Event]:
            return commands.bet(state, require_player_of(caller, state), action, now)

        def respond(state: TableState, events: list[ev.Event]) -> tuple[int, Any]:
            (made,) = events
            assert isinstance(made, ev.BetMade)
            return 200, {
                **_hand_body(state),
                "seat": made.seat,
                "action": made.action,
                "amount": made.amount,
                "bet_to": made.bet_to,
                "pot": state.pot,
                "betting_turn": state.hand.bet_turn if state.hand else None,
            }

        return self._execute(caller, checked_table_id(table_id), decide, respond, conditions)

    def close(
        self, caller: Caller, table_id: str, *, conditions: Conditions = NO_CONDITIONS
    ) -> Outcome:
        """The operator closes the hand's declarations once their deadline has passed."""
        require(caller, OPERATOR)

        def decide(state: TableState, now: datetime) -> list[ev.Event]:
            return commands.close_at_deadline(state, now)

        def respond(state: TableState, events: list[ev.Event]) -> tuple[int, Any]:
            return 200, _hand_body(state)

        return self._execute(caller, checked_table_id(table_id), decide, respond, conditions)

    def resolve(
        self, caller: Caller, table_id: str, *, conditions: Conditions = NO_CONDITIONS
    ) -> Outcome:
        """Showdown and settlement of the hand in play; the answer is the outcome."""
        require(caller, OPERATOR)

        def decide(state: TableState, now: datetime) -> list[ev.Event]:
            return commands.resolve(state, now)

        def respond(state: TableState, events: list[ev.Event]) -> tuple[int, Any]:
            (resolved,) = events
            outcome = event_view(resolved, state, Viewer(OPERATOR))["data"]
            return 200, {**outcome, "version": state.version}

        return self._execute(caller, checked_table_id(table_id), decide, respond, conditions)

    def void(
        self, caller: Caller, table_id: str, reason: str, *, conditions: Conditions = NO_CONDITIONS
    ) -> Outcome:
        """The operator calls the hand in play off, for `reason`."""
        require(caller, OPERATOR)

        def decide(state: TableState, now: datetime) -> list[ev.Event]:
            return commands.void_hand(state, reason, now)

        def respond(state: TableState, events: list[ev.Event]) -> tuple[int, Any]:
            (voided,) = events
            assert isinstance(voided, ev.HandVoided)
            return 200, {"hand": voided.hand, "phase": None, "version": state.version}

        return self._execute(caller, checked_table_id(table_id), decide, respond, conditions)

    def end_table(
        self, caller: Caller, table_id: str, *, conditions: Conditions = NO_CONDITIONS
    ) -> Outcome:
        """The operator ends the table between hands: the pots go back to the players of the
        current game, everyone is cashed out, and no command is taken after
        (`service.rules.ending`)."""
        require(caller, OPERATOR)

        def decide(state: TableState, now: datetime) -> list[ev.Event]:
            return commands.end_table(state, now)

        def respond(state: TableState, events: list[ev.Event]) -> tuple[int, Any]:
            (ended,) = events
            assert isinstance(ended, ev.TableEnded)
            return 200, {
                "table_id": state.table_id,
                "status": "ended",
                "refunds": {str(s): a for s, a in ended.refunds.items()},
                "cash_outs": {str(s): a for s, a in ended.cash_outs.items()},
                "version": state.version,
            }

        return self._execute(caller, checked_table_id(table_id), decide, respond, conditions)

    # --- the clock --------------------------------------------------------------------------

    def close_due(self, table_id: str) -> Due | None:
        """What the clock does (the dispatcher calls it): act on the table for whatever fell
        due, as the rules say (`service.rules.clock`: a deadline, an automatic resolve, the
        end of a cover grace). Returns what was done, or None when nothing was due (a player
        or another dispatcher got there first, or the index was early); the table's stored
        due is then indexed again."""
        acted: list[Due] = []

        def decide(state: TableState, now: datetime) -> list[ev.Event]:
            due = next_due(state)
            events = act_when_due(state, now)
            acted[:] = [due] if due is not None else []
            return events

        def respond(state: TableState, events: list[ev.Event]) -> tuple[int, Any]:
            return 200, {"version": state.version}

        try:
            self.tables.execute(table_id, decide, respond)
        except NothingDue:
            self.tables.reindex(table_id)
            return None
        return acted[0] if acted else None
