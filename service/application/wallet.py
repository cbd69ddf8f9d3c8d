"""The casino wallet's use cases: a casino's operator sets its wallet (url, currency, the value
of a chip in minor units; a signing secret is made with the first settings), seats or tops up
a player with money debited from it, and reads its transactions for reconciliation (operators
and auditors of the tenant; a regulator names the tenant).

A wallet-funded seat (or top-up), as docs/wallet.md draws it:
1. the table is checked first (the seat free, the player not excluded nor at their 24 h loss
   limit): a seat the rules or the protections would refuse debits nothing;
2. the debit is recorded, pending, before it is sent (its transaction id derived from the
   sender's Idempotency-Key, so a retried request is the same transaction);
3. the wallet is called, and the seat decided while it answers; `ok` lets the seat's append
   through (a `Gate`), under the idempotency key ``wallet:<transaction id>``, and that is all
   the request writes: the wallet's projection, following the table, confirms the debit its
   seat carries; `insufficient_funds` and `unknown_player` refuse the seat (409) and the
   debit; anything else is an unknown outcome: the debit is rolled back (its key claimed on
   the table, so a late seat cannot land; the rollback sent, and left to the wallet duty if
   the wallet does not take it) and the seat is refused (502). A seat the rules refuse after
   the debit (someone took the seat meanwhile) rolls the debit back too.
A sender that dies anywhere in this leaves a pending debit, which the wallet duty finishes
(`workers.wallet_duty`) unless the projection confirmed it first: confirmed when its seat was
appended, rolled back otherwise.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from service.rules import wallet as w
from service.rules.decide import Command, SeatPlayer, TopUp
from service.rules.errors import GutsError
from service.rules.guards import seat_holder
from service.rules.limits import Limits
from service.rules.protection import SessionLimits
from service.rules.seating import verify_seat_player, verify_top_up
from service.rules.state import TableState
from service.rules.views import AUDITOR, OPERATOR
from service.tables import Contention, IdempotencyReused, TableQuarantined, Tables, Tell

from . import facts
from .access import DEFAULT_TENANT, Caller, hide_quarantined, require, require_tenant
from .errors import Forbidden, WalletNotSet, WalletOutcomeUnknown, WalletRefused
from .money import Seating, ledger_tenant
from .ports import WalletBook
from .values import NO_CONDITIONS, Conditions, IssueToken, Outcome, checked_table_id


class WalletUses:
    """The wallet's use cases (mixed into `TableService`, which provides these attributes and
    `_command`)."""

    tables: Tables
    wallet: WalletBook | None
    issue_token: IssueToken | None

    _command: Callable[..., Outcome]  # TableService's: a game command for the caller
    # MoneyUses': a player's protections, read (carrying another step); a seat's limits (and,
    # paid in, the loss limit's check); the loss limit's check of a pay-in
    seating: Callable[[str, str, Any], Seating]
    seating_limits: Callable[..., tuple[str | None, SessionLimits]]
    verify_pay_in: Callable[[TableState, str, Limits], None]

    def _wallet(self, caller: Caller, *roles: str) -> tuple[WalletBook, str]:
        require(caller, *(roles or (OPERATOR,)))
        if self.wallet is None:
            raise Forbidden("this service keeps no wallet")
        return self.wallet, caller.tenant or DEFAULT_TENANT

    # --- settings ------------------------------------------------------------------------------

    def set_wallet(self, caller: Caller, url: str, currency: str, chip_value_minor: int) -> Outcome:
        """Set the tenant's wallet; the answer that makes it is the only one with its secret."""
        wallet, tenant = self._wallet(caller)
        found, made = wallet.put_settings(tenant, url, currency, chip_value_minor)
        return Outcome("changed", _shown(found, with_secret=made))

    def get_wallet(self, caller: Caller) -> Outcome:
        wallet, tenant = self._wallet(caller)
        return Outcome("found", _shown(self._settings(wallet, tenant), with_secret=False))

    def rotate_wallet_secret(self, caller: Caller) -> Outcome:
        wallet, tenant = self._wallet(caller)
        found = wallet.rotate_secret(tenant)
        if found is None:
            raise WalletNotSet("this tenant has no wallet (PUT /v1/wallet)")
        return Outcome("changed", _shown(found, with_secret=True))

    def delete_wallet(self, caller: Caller) -> Outcome:
        wallet, tenant = self._wallet(caller)
        if not wallet.delete_settings(tenant):
            raise WalletNotSet("this tenant has no wallet")
        return Outcome("removed", None)

    def wallet_transactions(
        self,
        caller: Caller,
        after: int,
        limit: int,
        match: dict[str, str],
        tenant: str | None = None,
    ) -> Outcome:
        """A page of the tenant's wallet transactions, oldest first, filtered by `match`
        (status, player_id, table_id); a regulator names the tenant (as for the ledger)."""
        wallet, _ = self._wallet(caller, OPERATOR, AUDITOR)
        tenant = ledger_tenant(caller, tenant)
        found, cursor = wallet.page(tenant, after, limit, match)
        shown = [_transaction(t) for t in found]
        return Outcome("found", {"transactions": shown, "next_after": cursor})

    @staticmethod
    def _settings(wallet: WalletBook, tenant: str) -> dict[str, Any]:
        found = wallet.settings(tenant)
        if found is None:
            raise WalletNotSet("this tenant has no wallet (PUT /v1/wallet)")
        return found

    # --- debits ------------------------------------------------------------------------------

    def wallet_seat(
        self,
        caller: Caller,
        table_id: str,
        player_id: str,
        buy_in: int,
        seat: int | None = None,
        *,
        conditions: Conditions = NO_CONDITIONS,
    ) -> Outcome:
        """Seat `player_id` with `buy_in` chips debited from the tenant's wallet."""
        if self.issue_token is None:
            raise Forbidden("players cannot be seated here (no tokens can be issued)")

        def seating(state: TableState, found: Seating | None, verify: bool) -> Checked:
            require_tenant(caller, state)
            excluded, limits = self.seating_limits(state, player_id, paid_in=verify, seating=found)
            if verify:
                now = self.tables.now()
                verify_seat_player(state, player_id, buy_in, seat, excluded_until=excluded, now=now)
            return SeatPlayer(player_id, buy_in, seat, excluded, "", limits), player_id, buy_in

        tell = facts.seated(self.issue_token)
        payer = (player_id, buy_in)
        return self._funded(caller, table_id, w.BUY_IN, seating, tell, conditions, payer)

    def wallet_top_up(
        self,
        caller: Caller,
        table_id: str,
        seat: int,
        amount: int,
        *,
        conditions: Conditions = NO_CONDITIONS,
    ) -> Outcome:
        """Add `amount` chips, debited from the wallet, to the wallet-funded seat `seat`."""

        def topping_up(state: TableState, found: Seating | None, verify: bool) -> Checked:
            require_tenant(caller, state)
            if found is not None and not verify:
                return TopUp(seat, amount), "", amount
            player_id = seat_holder(state, seat).player_id
            if found is not None:
                verify_top_up(state, seat, amount, "pending")
                self.verify_pay_in(state, player_id, found.limits)
            return TopUp(seat, amount), player_id, amount

        return self._funded(caller, table_id, w.TOP_UP, topping_up, facts.seat_changed, conditions)

    def _funded(
        self,
        caller: Caller,
        table_id: str,
        reason: str,
        checked: Check,
        tell: Tell,
        conditions: Conditions,
        payer: tuple[str, int] | None = None,
    ) -> Outcome:
        """A command paid by a debit of the tenant's wallet. `checked` says, of the table,
        the command, who pays and how many chips: first of who pays alone (no protections
        given; not asked when the request says it: `payer`, the player and their chips);
        then, given the payer's protections, refused as the rules and protections would
        refuse it when asked to verify, before any money moves. The debit is recorded in the
        round trip that reads the protections; withdrawn when they or the rules refuse the
        command. A retry of a request that recorded it goes on where that one was."""
        wallet, tenant = self._wallet(caller)
        till = _Till(wallet, tenant, {})
        table_id = checked_table_id(table_id)
        for _ in range(2):
            player_id, chips = payer or self._payer(caller, table_id, checked)
            debit = self._debit_maker(tenant, reason, table_id, player_id, chips, conditions)
            carried = wallet.carry_debit(tenant, debit)
            found = self.seating(tenant, player_id, carried)
            begun = wallet.begin_debit(tenant, debit, carried)
            if begun is None:
                raise WalletNotSet("this tenant has no wallet (PUT /v1/wallet)")
            record, settings, new = begun
            till = replace(till, settings=settings)
            if new:
                command = self._verified(caller, till, record, checked, found)
                return self._debit_then_append(
                    caller, till, record, command, tell, conditions, new=True
                )
            resumed = wallet.resume(tenant, record)  # (an earlier request's: it goes on)
            if resumed is not None:
                command, _, _ = checked(self._table(caller, table_id), found, False)
                return self._debit_then_append(caller, till, resumed, command, tell, conditions)
        raise Contention("requests with this Idempotency-Key withdrew its debit twice; retry")

    def _payer(self, caller: Caller, table_id: str, checked: Check) -> tuple[str, int]:
        """Who pays for the command `checked` makes of the table, and how many chips."""
        try:
            _, player_id, chips = self.tables.look(table_id, lambda s: checked(s, None, False))
        except TableQuarantined as error:
            hide_quarantined(caller, error)
        return player_id, chips

    def _verified(
        self,
        caller: Caller,
        till: _Till,
        record: dict[str, Any],
        checked: Check,
        found: Seating,
    ) -> Command:
        """The command `checked` makes of the table, verified with the payer's protections
        (`found`); the debit `record` (new, not sent) withdrawn when it is refused."""
        try:
            command, _, _ = self.tables.look(record["table_id"], lambda s: checked(s, found, True))
        except BaseException as error:
            till.wallet.withdraw(till.tenant, record)
            if isinstance(error, TableQuarantined):
                hide_quarantined(caller, error)
            raise
        return command

    def _debit_maker(
        self,
        tenant: str,
        reason: str,
        table_id: str,
        player_id: str,
        chips: int,
        conditions: Conditions,
    ) -> Callable[[dict[str, Any]], dict[str, Any]]:
        """The debit's record, made of the wallet settings it is made with."""
        transaction_id = self._debit_id(tenant, conditions)

        def debit(settings: dict[str, Any]) -> dict[str, Any]:
            return w.new_debit(
                reason,
                self.tables.now(),
                transaction_id=transaction_id,
                player_id=player_id,
                table_id=table_id,
                chips=chips,
                currency=settings["currency"],
                chip_value_minor=settings["chip_value_minor"],
            )

        return debit

    def _table(self, caller: Caller, table_id: str) -> TableState:
        """The table as stored (another tenant's is not found, quarantined or not)."""
        try:
            state = self.tables.load(table_id)
        except TableQuarantined as error:
            hide_quarantined(caller, error)
        require_tenant(caller, state)
        return state

    @staticmethod
    def _debit_id(tenant: str, conditions: Conditions) -> str:
        """The debit's transaction id: from the sender's Idempotency-Key (a retry is the same
        transaction), else fresh."""
        key = conditions.idempotency_key
        scope = f"{conditions.sender}\0{key}" if key is not None else secrets.token_hex(16)
        return w.debit_id(tenant, scope)

    def _debit_then_append(
        self,
        caller: Caller,
        till: _Till,
        record: dict[str, Any],
        command: Command,
        tell: Tell,
        conditions: Conditions,
        *,
        new: bool = False,
    ) -> Outcome:
        """Send the debit (unless a request before settled it, or appended its seat), then
        append `command` under the debit's key once the wallet took it; roll the debit back on
        anything but a confirmation. The command is decided while the wallet answers: its
        append waits for the answer (a `Gate`). `new`: this request recorded the debit, so
        nothing can be kept under its key yet."""
        wallet, tenant = till.wallet, till.tenant
        txid, table_id = record["transaction_id"], record["table_id"]
        key = wallet.seat_key(txid)
        request = f"{wallet.seat_request}:{conditions.request_hash}"
        status = record["status"]
        answered: Callable[[], str] = lambda: status  # noqa: E731 - (nothing sent)
        if status == w.PENDING and (new or not self._seated(table_id, key, request)):
            answered = wallet.send_debit(tenant, record, till.settings)  # (all that follows,
            # up to the append, is done while the wallet answers)
        command = replace(command, transaction_id=txid)
        keyed = replace(conditions, idempotency_key=key, request_hash=request)

        def paid() -> None:  # (only a debit the wallet took pays for the command)
            if answered() in (w.ROLLED_BACK, w.REFUSED):
                raise _refusal(wallet.transaction(tenant, txid) or record)

        try:
            outcome = self._command(
                caller, table_id, command, tell, keyed, fresh_key=new, gate=paid
            )
        except IdempotencyReused as reused:  # a rollback claimed the debit first, or the
            answered()  # key came with another body
            settled = wallet.transaction(tenant, txid) or record
            if settled["status"] == w.ROLLED_BACK:
                raise _refusal(settled) from reused
            raise
        except (WalletRefused, WalletOutcomeUnknown):
            raise  # (the gate's: the debit is settled)
        except GutsError:  # refused by the rules, though verified before the debit was sent
            if answered() == w.PENDING:
                wallet.roll_back(tenant, txid)
            raise
        finally:
            answered()  # (read, whatever happened: a debit's answer is never left unread)
        facts = outcome.facts  # (the debit is confirmed by the wallet's projection, which
        # follows the seat: this request writes nothing after its append)
        if isinstance(facts, dict):
            outcome = replace(outcome, facts={**facts, "transaction_id": txid})
        return outcome

    def _seated(self, table_id: str, key: str | None, request_hash: str) -> bool:
        """Whether the request `request_hash` was appended under `key` (a retry's debit,
        pending until the wallet's projection follows its seat, was paid: not sent again)."""
        seen = None if key is None else self.tables.store.find_idempotent(table_id, key)
        return seen is not None and seen.request_hash == request_hash


Checked = tuple[Command, str, int]
"""A funded command as `Check` makes it: the command, who pays, how many chips."""
Check = Callable[[TableState, "Seating | None", bool], Checked]


@dataclass(frozen=True)
class _Till:
    """The tenant's wallet for one request: its records and calls, the tenant, its settings."""

    wallet: WalletBook
    tenant: str
    settings: dict[str, Any]


def _refusal(record: dict[str, Any]) -> GutsError:
    answer = record.get("answer")
    if record["status"] == w.REFUSED:
        said = "insufficient funds" if answer == "insufficient_funds" else "an unknown player"
        return WalletRefused(f"the wallet refused the debit: {said}")
    why = record.get("problem") or "no confirmation"
    return WalletOutcomeUnknown(f"the wallet's answer was not a confirmation ({why}); rolled back")


TRANSACTION_FIELDS = (
    "transaction_id",
    "kind",
    "reason",
    "player_id",
    "table_id",
    "amount",
    "currency",
    "status",
    "attempts",
    "created_at",
    "settled_at",
)


def _transaction(record: dict[str, Any]) -> dict[str, Any]:
    return {k: record.get(k) for k in TRANSACTION_FIELDS}


def _shown(settings: dict[str, Any], *, with_secret: bool) -> dict[str, Any]:
    shown = {k: settings[k] for k in ("url", "currency", "chip_value_minor")}
    return {**shown, "secret": settings["secret"]} if with_secret else shown
