"""The casino wallet in the game's words, pure: which events move money to a wallet-funded
seat's player (`wallet_cash_outs`), the ids of the money movements (deterministic, so a retry
or a second deriver names the same transaction) and the conversion of chips to the wallet's
minor units. The calls, their signing and their records are `service.projections.wallet`'s.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from . import events as ev
from .errors import InvalidCommand
from .times import iso

DEBIT, CREDIT, ROLLBACK = "debit", "credit", "rollback"
BUY_IN, TOP_UP, CASH_OUT, REFUND = "buy_in", "top_up", "cash_out", "refund"
PENDING, CONFIRMED, ROLLED_BACK, REFUSED, FAILED = (
    "pending",
    "confirmed",
    "rolled_back",
    "refused",
    "failed",
)
STATUSES = (PENDING, CONFIRMED, ROLLED_BACK, REFUSED, FAILED)
KINDS = (DEBIT, CREDIT, ROLLBACK)
REASONS = (BUY_IN, TOP_UP, CASH_OUT, REFUND)
MAX_DEBIT = 2**53 - 1
"""The largest amount a debit asks of a wallet (minor units): the largest integer every JSON
reader holds exactly (I-JSON, RFC 7493), so a wallet in any language reads it as sent."""


def debit_id(tenant: str, scope: str) -> str:
    """A debit's transaction id: derived from its tenant and `scope` (the sender and their
    Idempotency-Key, so a retried request is the same transaction; or a fresh random token)."""
    digest = hashlib.sha256(f"{tenant}\0{scope}".encode()).hexdigest()[:32]
    return f"d-{digest}"


def credit_id(table_id: str, version: int, seat: int) -> str:
    """A credit's transaction id: the table, the version of the event that cashed the seat
    out, and the seat. Whoever derives it, however often, names the same transaction."""
    return f"c-{table_id}-{version}-{seat}"


def minor_units(chips: int, chip_value_minor: int) -> int:
    """`chips` in the wallet's currency's minor units (integers only, never floats)."""
    return chips * chip_value_minor


def wallet_cash_outs(event: ev.Event) -> list[tuple[int, int]]:
    """The (seat, chips) the event pays out to players (leaving, being cashed out for any
    reason, the table ending); nothing of a zero cash-out."""
    if isinstance(event, ev.PlayerLeft):
        paid = {event.seat: event.cash_out}
    elif isinstance(event, ev.TableEnded):
        paid = dict(event.cash_outs)
    else:
        return []
    return [(seat, chips) for seat, chips in sorted(paid.items()) if chips > 0]


def new_transaction(kind: str, reason: str, now: datetime, **fields: Any) -> dict[str, Any]:
    """A pending transaction's record: `fields` are transaction_id, player_id, table_id,
    chips, currency, chip_value_minor (and a credit's seat and version); its amount is the
    chips in minor units."""
    amount = minor_units(fields["chips"], fields["chip_value_minor"])
    return {
        "kind": kind,
        "reason": reason,
        "status": PENDING,
        "attempts": 0,
        "created_at": iso(now),
        "settled_at": None,
        "amount": amount,
        **fields,
    }


def new_debit(reason: str, now: datetime, **fields: Any) -> dict[str, Any]:
    """A debit's record (see `new_transaction`); InvalidCommand naming the chips' field (a
    buy-in's, a top-up's `amount`) when its amount would be over `MAX_DEBIT`."""
    amount = minor_units(fields["chips"], fields["chip_value_minor"])
    if amount > MAX_DEBIT:
        field = "buy_in" if reason == BUY_IN else "amount"
        raise InvalidCommand(
            f"{field} x the wallet's chip_value_minor is {amount} minor units, over the most a "
            f"wallet is asked for at once ({MAX_DEBIT})",
            field,
        )
    return new_transaction(DEBIT, reason, now, **fields)
