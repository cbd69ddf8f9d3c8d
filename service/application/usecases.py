"""The game's use cases, by name. Each one checks who is calling, makes the game command
(`service.rules.decide`) from the request and, where it needs them, from the loaded table (who
sits where, a player's exclusion or loss limits), and lets `Tables.execute` load the table,
have the rules decide and append what they decided. It returns an `Outcome` in the game's
words: what it did (made, changed), the facts (`facts`), the version and the events; no HTTP
in here (`service.api.http` alone maps outcomes to responses). Who may act for a seat is
decided here, on the table's state; the edge only says who the caller is (`Caller`) and what
the request asks (`Conditions`).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from service.rules.clock import NothingDue
from service.rules.decide import (
    Bet,
    CloseAtDeadline,
    Command,
    CreateTable,
    Deal,
    Declare,
    Draw,
    EndTable,
    Leave,
    PassCard,
    Resolve,
    SeatPlayer,
    SetClientSeed,
    SitIn,
    SitOut,
    TopUp,
    VoidHand,
)
from service.rules.limits import Allowance
from service.rules.ruleset import resolve_ruleset
from service.rules.state import TableState
from service.rules.views import OPERATOR
from service.tables import Gate, Prepare, Result, TableQuarantined, Tell

from . import facts
from .access import (
    DEFAULT_TENANT,
    Caller,
    hide_quarantined,
    require,
    require_operator_or_player_of,
    require_player_of,
    require_tenant,
)
from .errors import Forbidden
from .hooks import WebhookUses
from .money import MoneyUses
from .ports import Catcher, LedgerBook, WalletBook, WebhookRegistry
from .protection import ProtectionUses
from .reads import TableReads
from .values import (
    NO_CONDITIONS,
    Conditions,
    IssueToken,
    Outcome,
    Quota,
    Subject,
    checked_table_id,
)
from .wallet import WalletUses


def _outcome(table_id: str, result: Result) -> Outcome:
    """A command's outcome: its answer, the version its facts report, and the table."""
    answer = result.answer
    told = answer.facts
    version = told.get("version") if isinstance(told, dict) else None
    subject = Subject("table", table_id)
    return Outcome(answer.effect, told, version, result.replayed, subject, tuple(result.events))


@dataclass
class TableService(TableReads, MoneyUses, WebhookUses, WalletUses, ProtectionUses):
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
    wallet: WalletBook | None = None

    def _command(
        self,
        caller: Caller,
        table_id: str,
        command: Command | Prepare,
        tell: Tell,
        conditions: Conditions,
        *,
        create: bool = False,
        fresh_key: bool = False,
        gate: Gate | None = None,
    ) -> Outcome:
        """Run a game command for `caller`: another tenant's table is not found for them,
        before anything else is looked at (an idempotent replay, If-Match). `fresh_key` (the
        key was made for this request) and `gate` (what the append waits for): see `execute`."""
        try:
            result = self.tables.execute(
                table_id,
                command,
                tell,
                create=create,
                if_match=None if create else conditions.if_match,
                idempotency_key=conditions.idempotency_key,
                request_hash=conditions.request_hash,
                guard=None if create else partial(require_tenant, caller),
                quota=conditions.quota,
                fresh_key=fresh_key,
                gate=gate,
            )
        except TableQuarantined as error:
            hide_quarantined(caller, error)
        return _outcome(table_id, result)

    def count_request(self, table_id: str, quota: Quota) -> None:
        """Count a command that wrote nothing (refused, replayed, or not a game command)
        against its sender's limit at the table (OverLimit when that is full)."""
        self.tables.store.count_request(table_id, quota)

    def _at_seat(
        self,
        caller: Caller,
        table_id: str,
        command: SitOut | SitIn | Leave,
        tell: Tell,
        conditions: Conditions,
    ) -> Outcome:
        """A command for the player at the command's seat: the operator's, or that player's."""

        def checked(state: TableState) -> Command:
            require_operator_or_player_of(caller, state, command.seat)
            return command

        return self._command(caller, checked_table_id(table_id), checked, tell, conditions)

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
        tenant = caller.tenant or DEFAULT_TENANT
        command = CreateTable(new_id, rules, self.tables.new_seed(), tenant)
        return self._command(caller, new_id, command, facts.table_made, conditions, create=True)

    @staticmethod
    def _new_table_id(conditions: Conditions) -> str:
        if conditions.idempotency_key is None:
            # never one that begins with "-", which a command line would read as an option
            while (fresh := secrets.token_urlsafe(12)).startswith("-"):
                pass
            return fresh
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
        """Seat `player_id` with `buy_in` chips (at `seat`, or the first free one), unless they
        are excluded or on a time-out; their session runs under their limits (reality checks,
        a session limit); the facts carry the player's token."""
        require(caller, OPERATOR)
        if self.issue_token is None:
            raise Forbidden("players cannot be seated here (no tokens can be issued)")

        def command(state: TableState) -> Command:
            if self.ledger is None:
                return SeatPlayer(player_id, buy_in, seat)
            blocked, limits = self.seating_limits(state, player_id)
            return SeatPlayer(player_id, buy_in, seat, blocked, limits=limits)

        tell = facts.seated(self.issue_token)
        return self._command(caller, checked_table_id(table_id), command, tell, conditions)

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
        command = TopUp(seat, amount)
        return self._command(
            caller, checked_table_id(table_id), command, facts.seat_changed, conditions
        )

    def sit_out(
        self, caller: Caller, table_id: str, seat: int, *, conditions: Conditions = NO_CONDITIONS
    ) -> Outcome:
        """The player at `seat` sits out from the next hand (the operator or that player)."""
        return self._at_seat(caller, table_id, SitOut(seat), facts.seat_changed, conditions)

    def sit_in(
        self, caller: Caller, table_id: str, seat: int, *, conditions: Conditions = NO_CONDITIONS
    ) -> Outcome:
        """The player at `seat` comes back for the next hand (the operator or that player)."""
        return self._at_seat(caller, table_id, SitIn(seat), facts.seat_changed, conditions)

    def leave(
        self, caller: Caller, table_id: str, seat: int, *, conditions: Conditions = NO_CONDITIONS
    ) -> Outcome:
        """The player at `seat` leaves and cashes out (the operator or that player)."""
        return self._at_seat(caller, table_id, Leave(seat), facts.left, conditions)

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

        def command(state: TableState) -> Command:
            return SetClientSeed(require_player_of(caller, state, seat), client_seed)

        tell = facts.client_seed_set
        return self._command(caller, checked_table_id(table_id), command, tell, conditions)

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
        """Deal the next hand, within the seated players' loss limits; `stacked_deck`
        (sandbox only) fixes cards."""
        require(caller, OPERATOR)
        if stacked_deck is not None and not self.sandbox:
            raise Forbidden(
                "stacked_deck is accepted only when the server runs with GUTS_SANDBOX=1"
            )
        seed, next_seed = self.tables.new_seed(), self.tables.new_seed()
        stacked = None if stacked_deck is None else {k: list(v) for k, v in stacked_deck.items()}

        def command(state: TableState) -> Command:
            allowances = self.allowances(state, [s.player_id for s in state.seated()])
            return Deal(seed, client_seed, stacked, next_seed, allowances)

        return self._command(caller, checked_table_id(table_id), command, facts.dealt, conditions)

    def declare(
        self,
        caller: Caller,
        table_id: str,
        decision: str,
        *,
        conditions: Conditions = NO_CONDITIONS,
    ) -> Outcome:
        """The calling player declares `decision` for the hand in play, within their loss
        limit."""

        def command(state: TableState) -> Command:
            seat = require_player_of(caller, state)
            return Declare(seat, decision, self._allowance(state, seat, decision))

        tell = facts.declared
        return self._command(caller, checked_table_id(table_id), command, tell, conditions)

    def _allowance(self, state: TableState, seat: int, decision: str) -> Allowance | None:
        """The loss-limit allowance of the player at `seat` declaring `decision` (None: no
        limit; out is always allowed: no limit to look up)."""
        if decision == "out":
            return None
        player = state.seats[seat].player_id
        return self.allowances(state, [player]).get(player)

    def pass_card(
        self, caller: Caller, table_id: str, card: str, *, conditions: Conditions = NO_CONDITIONS
    ) -> Outcome:
        """The calling player passes `card` on."""

        def command(state: TableState) -> Command:
            return PassCard(require_player_of(caller, state), card)

        return self._command(caller, checked_table_id(table_id), command, facts.passed, conditions)

    def draw(
        self,
        caller: Caller,
        table_id: str,
        discard: Sequence[str],
        *,
        conditions: Conditions = NO_CONDITIONS,
    ) -> Outcome:
        """The calling player discards `discard` and draws as many."""
        discarded = tuple(discard)

        def command(state: TableState) -> Command:
            return Draw(require_player_of(caller, state), discarded)

        return self._command(caller, checked_table_id(table_id), command, facts.drew, conditions)

    def bet(
        self, caller: Caller, table_id: str, action: str, *, conditions: Conditions = NO_CONDITIONS
    ) -> Outcome:
        """The calling player acts in the betting round: check, bet, call, raise or fold."""

        def command(state: TableState) -> Command:
            return Bet(require_player_of(caller, state), action)

        tell = facts.bet_made
        return self._command(caller, checked_table_id(table_id), command, tell, conditions)

    def close(
        self, caller: Caller, table_id: str, *, conditions: Conditions = NO_CONDITIONS
    ) -> Outcome:
        """The operator closes the hand's declarations once their deadline has passed."""
        require(caller, OPERATOR)
        command, tell = CloseAtDeadline(), facts.hand_moved_on
        return self._command(caller, checked_table_id(table_id), command, tell, conditions)

    def resolve(
        self, caller: Caller, table_id: str, *, conditions: Conditions = NO_CONDITIONS
    ) -> Outcome:
        """Showdown and settlement of the hand in play; the facts are its outcome."""
        require(caller, OPERATOR)
        command, tell = Resolve(), facts.resolved
        return self._command(caller, checked_table_id(table_id), command, tell, conditions)

    def void(
        self, caller: Caller, table_id: str, reason: str, *, conditions: Conditions = NO_CONDITIONS
    ) -> Outcome:
        """The operator calls the hand in play off, for `reason`."""
        require(caller, OPERATOR)
        command, tell = VoidHand(reason), facts.voided
        return self._command(caller, checked_table_id(table_id), command, tell, conditions)

    def end_table(
        self, caller: Caller, table_id: str, *, conditions: Conditions = NO_CONDITIONS
    ) -> Outcome:
        """The operator ends the table between hands: the pots go back to the players of the
        current game, everyone is cashed out, and no command is taken after
        (`service.rules.ending`)."""
        require(caller, OPERATOR)
        command, tell = EndTable(), facts.ended
        return self._command(caller, checked_table_id(table_id), command, tell, conditions)

    # --- the clock --------------------------------------------------------------------------

    def close_due(self, table_id: str) -> Outcome | None:
        """What the clock does (the dispatcher calls it): act on the table for whatever fell
        due, as the rules say (`service.rules.clock`: a deadline, an automatic resolve, the
        end of a cover grace). Returns the outcome (its events say what was done), or None
        when nothing was due (a player or another dispatcher got there first, or the index
        was early); the table's stored due is then indexed again."""
        try:
            result = self.tables.execute(table_id, self.when_due)
        except NothingDue:
            self.tables.reindex(table_id)
            return None
        return _outcome(table_id, result)
