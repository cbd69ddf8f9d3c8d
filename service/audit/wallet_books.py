"""The audit's reconciliation of a table's casino-wallet transactions with its log
(`service.audit.rebuild`).

Event by event: every wallet-funded movement of the log must have its transaction (a seat or
top-up that carries a `transaction_id`: a debit of that id, of the same player, chips and
amount, `confirmed`, or `pending` until the wallet's projection or duty finishes it; a cash-out
of a wallet-funded seat: its credit, `credit_id`, of the same chips and amount, in any status),
and every transaction of the table must be a movement of the log (a confirmed debit no seat
carries took money for chips that do not exist; a credit no cash-out made pays money that
never left the table). So, per table, the wallet-funded chips the log brought in minus those
it cashed out, in minor units, are the confirmed debits minus the confirmed, pending or failed
credits (the report's `wallet`). Credits are compared up to the credits' projection's
position only: a projection behind its log is late, not wrong.
"""

from __future__ import annotations

from typing import Any, NoReturn, Protocol

from service.rules import events as ev
from service.rules import wallet as w


class StoredWallet(Protocol):
    """Where the audit reads a table's transactions (`service.projections.wallet.WalletStore`)."""

    def table_transactions(self, tenant: str, table_id: str) -> tuple[int, list[dict[str, Any]]]:
        """The credits' position for the table and its transactions."""
        ...


class WalletMismatch(Exception):
    """The table's wallet transactions do not agree with its log at this version."""

    def __init__(self, version: int, event_type: str, problem: str) -> None:
        super().__init__(problem)
        self.version, self.event_type, self.problem = version, event_type, problem


class WalletBooks:
    """The reconciliation of one table (see the module doc)."""

    def __init__(self, table_id: str, position: int, records: list[dict[str, Any]]) -> None:
        self.table_id, self.position = table_id, position
        self.debits = {r["transaction_id"]: r for r in records if r["kind"] == w.DEBIT}
        self.credits = {r["transaction_id"]: r for r in records if r["kind"] == w.CREDIT}
        self.funded: dict[int, dict[str, Any]] = {}  # seat -> the debit that seated it
        self.seen: set[str] = set()
        self.chips_in = self.chips_out = 0  # in minor units, as the log says
        self.debited = self.credited = 0  # in minor units, as the transactions say

    def check(self, version: int, event: ev.Event) -> None:
        """Reconcile the movements of `event` (at `version`) with their transactions."""
        if isinstance(event, ev.PlayerSeated | ev.ChipsAdded) and event.transaction_id:
            self._debited(version, event)
        for seat, chips in w.wallet_cash_outs(event):
            debit = self.funded.get(seat)
            if debit is not None and version <= self.position:
                self._credited(version, event, seat, chips, debit)
        if isinstance(event, ev.PlayerLeft):
            self.funded.pop(event.seat, None)
        elif isinstance(event, ev.TableEnded):
            self.funded.clear()

    def _debited(self, version: int, event: ev.PlayerSeated | ev.ChipsAdded) -> None:
        txid = event.transaction_id
        chips = event.buy_in if isinstance(event, ev.PlayerSeated) else event.amount
        debit = self.debits.get(txid)
        if debit is None:
            self._wrong(version, event, f"{chips} wallet-funded chips have no debit {txid}")
        if debit["status"] not in (w.CONFIRMED, w.PENDING):
            self._wrong(version, event, f"debit {txid} is {debit['status']}, yet chips were added")
        player: str | None = None
        if isinstance(event, ev.PlayerSeated):
            player = event.player_id
        else:  # a top-up: of the player the seat's debit seated
            player = self.funded.get(event.seat, {}).get("player_id")
        amount = w.minor_units(chips, debit["chip_value_minor"])
        if debit["chips"] != chips or debit["amount"] != amount or debit["player_id"] != player:
            self._wrong(version, event, f"debit {txid} is not these chips or this player")
        if isinstance(event, ev.PlayerSeated):
            self.funded[event.seat] = debit
        self.seen.add(txid)
        self.chips_in += amount
        self.debited += debit["amount"]

    def _credited(
        self, version: int, event: ev.Event, seat: int, chips: int, debit: dict[str, Any]
    ) -> None:
        txid = w.credit_id(self.table_id, version, seat)
        credit = self.credits.get(txid)
        amount = w.minor_units(chips, debit["chip_value_minor"])
        if credit is None:
            self._wrong(version, event, f"a cash-out of {chips} wallet-funded chips has no credit")
        if credit["amount"] != amount or credit["player_id"] != debit["player_id"]:
            self._wrong(version, event, f"credit {txid} is not this cash-out")
        self.seen.add(txid)
        self.chips_out += amount
        self.credited += credit["amount"]

    def check_end(self, version: int) -> None:
        """No confirmed debit or derived credit of the table may lack its movement."""
        for txid, debit in self.debits.items():
            if debit["status"] == w.CONFIRMED and txid not in self.seen:
                raise WalletMismatch(
                    version,
                    "wallet",
                    f"the wallet: debit {txid} was confirmed "
                    "but no seat or top-up of the log carries it",
                )
        for txid, credit in self.credits.items():
            if txid not in self.seen and credit.get("version", 0) <= self.position:
                raise WalletMismatch(version, "wallet", f"the wallet: credit {txid} pays a "
                                     "cash-out the log does not have")  # fmt: skip
        if self.debited - self.credited != self.chips_in - self.chips_out:
            raise WalletMismatch(version, "wallet", "the wallet: confirmed debits minus credits "
                                 "are not the wallet-funded chips on the table")  # fmt: skip

    def summary(self) -> dict[str, int]:
        """How far credits were derived, and the table's money in minor units."""
        return {
            "position": self.position,
            "debited": self.debited,
            "credited": self.credited,
            "on_table": self.chips_in - self.chips_out,
        }

    @staticmethod
    def _wrong(version: int, event: ev.Event, problem: str) -> NoReturn:
        raise WalletMismatch(version, event.TYPE, f"the wallet: {problem}")
