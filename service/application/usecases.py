"""The game's use cases, by name. Each one checks who is calling, loads the table, lets the
rules decide and appends what they decided (through `Tables.execute`), and returns a plain
`Outcome`: no HTTP in here. Who may act for a seat is decided here, on the table's state;
the edge only says who the caller is (`Caller`) and what the request asks (`Conditions`).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from redis import Redis

from service import audits
from service.rules import commands
from service.rules import events as ev
from service.rules.errors import GutsError
from service.rules.history import hand_history
from service.rules.ruleset import Ruleset, resolve_ruleset
from service.rules.state import TableState
from service.rules.views import AUDITOR, OPERATOR, Viewer, event_view, table_view
from service.tables import Decide, Respond, TableNotFound, Tables

from .access import (
    Caller,
    Forbidden,
    may_view,
    require,
    require_operator_or_player_of,
    require_player_of,
)

TABLE_ID = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
IssueToken = Callable[[str, int, int], str]
"""Makes the token of the player who sat at (table, seat, version)."""


class HandNotFound(GutsError):
    """The table has no finished hand with this number."""


class AuditNotFound(GutsError):
    """No audit has this id (or its record has expired)."""


@dataclass(frozen=True)
class Conditions:
    """What a request asks of a command besides its arguments: the table version it expects
    (If-Match), and an idempotency key with a hash of the whole request, so that the same
    request sent again is answered again instead of run again. `sender` is the credential
    as sent: a table id or audit id derived from a key is derived per sender."""

    if_match: int | None = None
    idempotency_key: str | None = None
    request_hash: str = ""
    sender: str = ""


NO_CONDITIONS = Conditions()


@dataclass(frozen=True)
class Outcome:
    """A use case's answer: a status (HTTP's numbers, which the contract speaks in), a body of
    plain data, the table version to report (None: none), whether it is the stored answer to
    an earlier identical request, and where the thing it made can be read (None: nowhere)."""

    status: int
    body: Any
    version: int | None = None
    replayed: bool = False
    location: str | None = None


@dataclass(frozen=True)
class HandHistory:
    """The record of one finished hand as the caller may see it, with the table's version and
    rules (which the hand-history formats need)."""

    record: dict[str, Any]
    version: int
    rules: Ruleset


def _table_id(table_id: str) -> str:
    if not TABLE_ID.fullmatch(table_id):
        raise TableNotFound(f"no table {table_id!r}"[:100])
    return table_id


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
class TableService:
    """The use cases of the tables kept by `tables`; audits are recorded in `redis` under
    `key_prefix`. `issue_token` makes a seated player's token; `sandbox` allows stacked
    decks."""

    tables: Tables
    redis: Redis
    key_prefix: str
    issue_token: IssueToken
    sandbox: bool = False

    def _execute(
        self,
        table_id: str,
        decide: Decide,
        respond: Respond,
        conditions: Conditions,
        *,
        create: bool = False,
    ) -> Outcome:
        result = self.tables.execute(
            table_id,
            decide,
            respond,
            create=create,
            if_match=None if create else conditions.if_match,
            idempotency_key=conditions.idempotency_key,
            request_hash=conditions.request_hash,
        )
        body = result.body
        version = body.get("version") if isinstance(body, dict) else None
        return Outcome(result.status, body, version, result.replayed)

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
        new_id = _table_id(table_id) if table_id else self._new_table_id(conditions)
        first_seed = self.tables.new_seed()

        def decide(state: TableState, now: datetime) -> list[ev.Event]:
            return commands.create_table(new_id, rules, now, first_seed)

        def respond(state: TableState, events: list[ev.Event]) -> tuple[int, Any]:
            return 201, {"table_id": new_id, "rules": rules.to_dict(), "version": state.version}

        return self._execute(new_id, decide, respond, conditions, create=True)

    @staticmethod
    def _new_table_id(conditions: Conditions) -> str:
        if conditions.idempotency_key is None:
            return secrets.token_urlsafe(12)
        scoped = f"{conditions.sender}\0{conditions.idempotency_key}"
        return f"t{hashlib.sha256(scoped.encode()).hexdigest()[:20]}"

    def table(self, caller: Caller, table_id: str) -> Outcome:
        """The table as the caller may see it."""
        state = self.tables.load(_table_id(table_id))
        return Outcome(200, table_view(state, may_view(caller, state)), state.version)

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

        def decide(state: TableState, now: datetime) -> list[ev.Event]:
            return commands.seat_player(state, player_id, buy_in, now, seat)

        def respond(state: TableState, events: list[ev.Event]) -> tuple[int, Any]:
            (seated,) = events
            assert isinstance(seated, ev.PlayerSeated)
            holder = state.seats[seated.seat]
            return 201, {
                "seat": seated.seat,
                "player_id": seated.player_id,
                "token": self.issue_token(state.table_id, seated.seat, holder.joined),
                "stack": holder.stack,
                "status": holder.status,
                "version": state.version,
            }

        return self._execute(_table_id(table_id), decide, respond, conditions)

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

        return self._execute(_table_id(table_id), decide, respond, conditions)

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

        return self._execute(_table_id(table_id), decide, respond, conditions)

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

        return self._execute(_table_id(table_id), decide, respond, conditions)

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
            return commands.deal(state, seed, now, client_seed, stacked, next_seed)

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

        return self._execute(_table_id(table_id), decide, respond, conditions)

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
            return commands.declare(state, require_player_of(caller, state), decision, now)

        def respond(state: TableState, events: list[ev.Event]) -> tuple[int, Any]:
            first = events[0]
            assert isinstance(first, ev.DecisionMade)
            return 200, {**_hand_body(state), "seat": first.seat, "decision": first.decision}

        return self._execute(_table_id(table_id), decide, respond, conditions)

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

        return self._execute(_table_id(table_id), decide, respond, conditions)

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

        return self._execute(_table_id(table_id), decide, respond, conditions)

    def close(
        self, caller: Caller, table_id: str, *, conditions: Conditions = NO_CONDITIONS
    ) -> Outcome:
        """The operator closes the hand's declarations once their deadline has passed."""
        require(caller, OPERATOR)

        def decide(state: TableState, now: datetime) -> list[ev.Event]:
            return commands.close_at_deadline(state, now)

        def respond(state: TableState, events: list[ev.Event]) -> tuple[int, Any]:
            return 200, _hand_body(state)

        return self._execute(_table_id(table_id), decide, respond, conditions)

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

        return self._execute(_table_id(table_id), decide, respond, conditions)

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

        return self._execute(_table_id(table_id), decide, respond, conditions)

    # --- the log --------------------------------------------------------------------------

    def events(self, caller: Caller, table_id: str, after: int, limit: int) -> Outcome:
        """The events after version `after` (at most `limit`), as the caller may see them."""
        state = self.tables.load(_table_id(table_id))
        viewer = may_view(caller, state)
        read = self.tables.events(table_id, after, limit)
        items = [{"version": v, **event_view(e, state, viewer, v)} for v, e in read]
        next_after = read[-1][0] if read else after
        body = {"events": items, "version": state.version, "next_after": next_after}
        return Outcome(200, body, state.version)

    def hand_history(self, caller: Caller, table_id: str, hand: int) -> HandHistory:
        """The record of finished hand `hand`, as the caller may see it."""
        state = self.tables.load(_table_id(table_id))
        viewer = may_view(caller, state)
        if hand < 1 or hand > state.hands_dealt:
            raise HandNotFound(f"table {table_id} has no hand {hand}")
        if state.hand is not None and state.hand.number == hand:
            raise HandNotFound(f"hand {hand} is still in play; its history is kept once it is over")
        record = hand_history(state, hand, self._hand_events(table_id, hand), viewer)
        return HandHistory(record, state.version, state.rules)

    def _hand_events(self, table_id: str, hand: int) -> list[tuple[int, ev.Event]]:
        """The events of one finished hand: from its deal to its resolution or void.

        A linear scan of the log in pages; fine for the history, which is not on the hot
        path. (An index by hand would make it one read.)
        """
        found: list[tuple[int, ev.Event]] = []
        after = 0
        while True:
            page = self.tables.events(table_id, after, 1000)
            if not page:
                return found
            for version, event in page:
                if getattr(event, "hand", None) == hand:
                    found.append((version, event))
                    if isinstance(event, ev.HandResolved | ev.HandVoided):
                        return found
            after = page[-1][0]

    # --- audits ---------------------------------------------------------------------------

    def start_audit(
        self, caller: Caller, table_id: str, *, conditions: Conditions = NO_CONDITIONS
    ) -> Outcome:
        """Queue a rebuild of the table from its log (operators and auditors). With an
        idempotency key, the same key for the same table and request is the same audit,
        queued once."""
        require(caller, OPERATOR, AUDITOR)
        self.tables.check_exists(_table_id(table_id))
        key = conditions.idempotency_key
        if key is None:
            audit_id = secrets.token_hex(12)
        else:
            scoped = f"{table_id}\0{conditions.request_hash}\0{key}"
            audit_id = hashlib.sha256(scoped.encode()).hexdigest()[:24]
        known = audits.load_audit(self.redis, self.key_prefix, audit_id)
        if known is None:
            audits.enqueue_audit(self.redis, self.key_prefix, audit_id, table_id)
        status = known["status"] if known else "queued"
        body = {"audit_id": audit_id, "table_id": table_id, "status": status}
        return Outcome(202, body, location=f"/v1/audits/{audit_id}")

    def audit(self, caller: Caller, audit_id: str) -> Outcome:
        """An audit's status, and its report once it is finished."""
        require(caller, OPERATOR, AUDITOR)
        known = None
        if audit_id.isalnum():
            known = audits.load_audit(self.redis, self.key_prefix, audit_id)
        if known is None:
            raise AuditNotFound(f"no audit {audit_id!r}"[:80])
        if known["status"] in ("queued", "running") and audits.audit_failed(self.redis, audit_id):
            known = {**known, "status": "failed"}
        return Outcome(200, {"audit_id": audit_id, "result": None, **known})
