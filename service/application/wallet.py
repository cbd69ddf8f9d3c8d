"""The casino wallet's use cases: a casino's operator sets its wallet (url, currency, the value
of a chip in minor units; a signing secret is made with the first settings), seats or tops up
a player with money debited from it, and reads its transactions for reconciliation (operators
and auditors of the tenant; a regulator names the tenant).

A wallet-funded seat (or top-up), as docs/wallet.md draws it:
1. the table is checked first (the seat free, the player not excluded nor at their 24 h loss
   limit): a seat the rules or the protections would refuse debits nothing;
2. the debit is recorded, pending, before it is sent (its transaction id derived from the
   sender's Idempotency-Key, so a retried request is the same transaction);
3. the wallet is called; `ok` appends the seat under the idempotency key
   ``wallet:<transaction id>``, then the debit is confirmed; `insufficient_funds` and
   `unknown_player` refuse the seat (409) and the debit; anything else is an unknown outcome:
   the debit is rolled back (its key claimed on the table, so a late seat cannot land; the
   rollback sent, and left to the wallet duty if the wallet does not take it) and the seat is
   refused (502). A seat the rules refuse after the debit (someone took the seat meanwhile)
   rolls the debit back too.
A sender that dies anywhere in this leaves a pending debit, which the wallet duty finishes
(`workers.wallet_duty`): confirmed when its seat was appended, rolled back otherwise.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from service.rules import wallet as w
from service.rules.decide import Command, SeatPlayer, TopUp
from service.rules.errors import GutsError
from service.rules.guards import seat_holder
from service.rules.limits import Allowance, verify_may_pay_in
from service.rules.protection import SessionLimits
from service.rules.seating import verify_seat_player, verify_top_up
from service.rules.state import TableState
from service.rules.views import AUDITOR, OPERATOR
from service.tables import IdempotencyReused, TableQuarantined, Tables, Tell

from . import facts
from .access import DEFAULT_TENANT, Caller, hide_quarantined, require, require_tenant
from .errors import Forbidden, WalletNotSet, WalletOutcomeUnknown, WalletRefused
from .money import ledger_tenant
from .ports import WalletBook
from .values import NO_CONDITIONS, Conditions, IssueToken, Outcome, checked_table_id


class WalletUses:
    """The wallet's use cases (mixed into `TableService`, which provides these attributes and
    `_command`)."""

    tables: Tables
    wallet: WalletBook | None
    issue_token: IssueToken | None

    _command: Callable[..., Outcome]  # TableService's: a game command for the caller
    # MoneyUses': a seat's limits (and, paid in, the loss limit's check); the allowances
    seating_limits: Callable[..., tuple[str | None, SessionLimits]]
    allowances: Callable[[TableState, Iterable[str]], dict[str, Allowance]]

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

        def seating(state: TableState, verify: bool) -> tuple[Command, str, int]:
            require_tenant(caller, state)
            excluded, limits = self.seating_limits(state, player_id, paid_in=verify)
            if verify:
                now = self.tables.now()
                verify_seat_player(state, player_id, buy_in, seat, excluded_until=excluded, now=now)
            return SeatPlayer(player_id, buy_in, seat, excluded, "", limits), player_id, buy_in

        tell = facts.seated(self.issue_token)
        return self._funded(caller, table_id, w.BUY_IN, seating, tell, conditions)

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

        def topping_up(state: TableState, verify: bool) -> tuple[Command, str, int]:
            require_tenant(caller, state)
            if not verify:
                return TopUp(seat, amount), "", amount
            verify_top_up(state, seat, amount, "pending")
            player_id = seat_holder(state, seat).player_id
            verify_may_pay_in(player_id, self.allowances(state, [player_id]).get(player_id))
            return TopUp(seat, amount), player_id, amount

        return self._funded(caller, table_id, w.TOP_UP, topping_up, facts.seat_changed, conditions)

    def _funded(
        self,
        caller: Caller,
        table_id: str,
        reason: str,
        checked: Callable[[TableState, bool], tuple[Command, str, int]],
        tell: Tell,
        conditions: Conditions,
    ) -> Outcome:
        """A command paid by a debit of the tenant's wallet: `checked` says, of the table, the
        command (when asked to verify, refused as the rules would refuse it, before any money
        moves), who pays and how many chips. A retry of a request that debited goes on where
        it was; a new debit is recorded with the settings it is made with (one round trip when
        this process knows them)."""
        wallet, tenant = self._wallet(caller)
        table_id = checked_table_id(table_id)
        kept = self._kept_debit(wallet, tenant, conditions)
        if kept is not None:
            command, _, _ = checked(self._table(caller, table_id), False)
            till = _Till(wallet, tenant, self._settings(wallet, tenant))
            return self._debit_then_append(caller, till, kept, command, tell, conditions)
        try:
            command, player_id, chips = self.tables.look(table_id, lambda s: checked(s, True))
        except TableQuarantined as error:
            hide_quarantined(caller, error)

        def debit(settings: dict[str, Any]) -> dict[str, Any]:
            return w.new_debit(
                reason,
                self.tables.now(),
                transaction_id=self._debit_id(tenant, conditions),
                player_id=player_id,
                table_id=table_id,
                chips=chips,
                currency=settings["currency"],
                chip_value_minor=settings["chip_value_minor"],
            )

        begun = wallet.begin_debit(tenant, debit)
        if begun is None:
            raise WalletNotSet("this tenant has no wallet (PUT /v1/wallet)")
        record, settings, new = begun
        till = _Till(wallet, tenant, settings)
        return self._debit_then_append(caller, till, record, command, tell, conditions, new=new)

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

    def _kept_debit(
        self, wallet: WalletBook, tenant: str, conditions: Conditions
    ) -> dict[str, Any] | None:
        """The debit an earlier request with the same Idempotency-Key recorded, if any."""
        if conditions.idempotency_key is None:
            return None
        return wallet.transaction(tenant, self._debit_id(tenant, conditions))

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
        """Send the debit (unless a request before settled it), then append `command` under
        the debit's key; roll the debit back on anything but a confirmation. `new`: this
        request recorded the debit, so nothing can be kept under its key yet."""
        wallet, tenant = till.wallet, till.tenant
        txid, table_id = record["transaction_id"], record["table_id"]
        command = replace(command, transaction_id=txid)
        keyed = replace(conditions, idempotency_key=wallet.seat_key(txid))
        keyed = replace(keyed, request_hash=f"{wallet.seat_request}:{conditions.request_hash}")
        status = record["status"]
        if status == w.PENDING:
            status = wallet.debit(tenant, record, till.settings)
        if status in (w.ROLLED_BACK, w.REFUSED):
            raise _refusal(wallet.transaction(tenant, txid) or record)
        try:
            outcome = self._command(caller, table_id, command, tell, keyed, fresh_key=new)
        except IdempotencyReused as reused:  # a rollback claimed the debit first, or the
            settled = wallet.transaction(tenant, txid) or record  # key came with another body
            if settled["status"] == w.ROLLED_BACK:
                raise _refusal(settled) from reused
            raise
        except GutsError:
            wallet.roll_back(tenant, txid)  # refused by the rules after the debit
            raise
        wallet.confirm(tenant, record)
        facts = outcome.facts
        if isinstance(facts, dict):
            outcome = replace(outcome, facts={**facts, "transaction_id": txid})
        return outcome


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
