"""Credits to the casino wallet, derived from the tables' logs (a projection, kept by the
dispatchers' follower: `service.projections.follower`).

For each event that cashes a wallet-funded seat out (`service.rules.wallet.wallet_cash_outs`:
a player leaving, the table ending, any cash-out the platform appends for a player), a credit
is recorded, pending and due at once, in the same script that moves the projection's position,
and only if the position is still the one read: so each cash-out makes exactly one credit,
whoever derives it and however often, and its id (`credit_id`: the table, the event's version,
the seat) is the same on every derivation. A credit is worth the cashed-out chips at the chip
value and currency of the debit that funded the seat. The wallet duty sends it
(`workers.wallet_duty`).

The same script confirms the debits the batch's seats and top-ups carry (`player_seated`,
`chips_added` with a transaction id): such an event is in the log only because the wallet
answered its debit ok, so its pending record is confirmed here, by a conditional write (as
`WalletStore.settle`: only if the record is still as read), not by the request that appended
it. A seat's request thus writes nothing after its append; its answer comes one append after
the wallet's.

Which seats are wallet-funded is the projection's own small book, per tenant:
``P:{%wallet:T}:funded``, ``<table id> <seat>`` -> the debit that funded the seat, set by a
`player_seated` that carries a transaction id and cleared when the seat is cashed out.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, cast

import orjson

from service.eventlog.decoding import CorruptTable
from service.projections.positions import hash_positions
from service.projections.projection import Followed, HeldProjection
from service.projections.wallet import WalletStore
from service.rules import events as ev
from service.rules import wallet as w

_DERIVE = """
local position = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if position ~= tonumber(ARGV[2]) then return 0 end
local funded = cjson.decode(ARGV[4])
for field, debit in pairs(funded) do
  if debit == '' then redis.call('HDEL', KEYS[2], field)
  else redis.call('HSET', KEYS[2], field, debit) end
end
for _, confirmed in ipairs(cjson.decode(ARGV[6])) do
  local raw = redis.call('HGET', KEYS[3], confirmed[1])
  local record = raw and cjson.decode(raw)
  if record and record['status'] == 'pending' and record['attempts'] == confirmed[2] then
    redis.call('HSET', KEYS[3], confirmed[1], confirmed[3])
    redis.call('ZREM', KEYS[6], confirmed[1])
  end
end
for i = 7, #ARGV, 2 do
  if redis.call('HSETNX', KEYS[3], ARGV[i], ARGV[i + 1]) == 1 then
    local seq = redis.call('INCR', KEYS[5])
    redis.call('ZADD', KEYS[4], seq, ARGV[i])
    redis.call('ZADD', KEYS[7], seq, ARGV[i])
    redis.call('ZADD', KEYS[6], ARGV[5], ARGV[i])
  end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
"""
"""KEYS positions, funded, tx, order, seq, due, the table's index. ARGV table id, the position
read, the new position, the funded seats' changes (JSON: field -> debit, '' to clear), now,
the debits to confirm (JSON: [id, the attempts read, the confirmed record], each written only
if the record is still pending with those attempts), then per credit its id and record."""


class WalletCredits:
    """The projection (`name`, `positions`, `apply`, `tidy`) of the wallet's credits."""

    name = "wallet"

    def __init__(self, store: WalletStore, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.clock = clock
        self._derive = store.client.register_script(_DERIVE)

    def positions(
        self, tables: Sequence[tuple[str, str]]
    ) -> list[int | CorruptTable | HeldProjection]:
        key_of = lambda tenant: self.store.key(tenant, "positions")  # noqa: E731
        return hash_positions(self.store.client, key_of, tables, self.name)

    def tidy(self, table_id: str, position: int) -> None:
        """Nothing is ever left half done: each batch is one script."""

    def apply(self, followed: Followed) -> bool:
        tenant, table_id = followed.tenant, followed.table_id
        book = _Book(self, tenant, table_id)
        credits: list[dict[str, Any]] = []
        paid: list[str] = []  # the debits the batch's seats and top-ups carry
        for version, event in followed.events:
            if isinstance(event, ev.PlayerSeated | ev.ChipsAdded) and event.transaction_id:
                paid.append(event.transaction_id)
            if isinstance(event, ev.PlayerSeated):
                book.set(event.seat, event.transaction_id)
            for seat, chips in w.wallet_cash_outs(event):
                debit = book.debit(seat)
                if debit is not None:
                    credits.append(_credit(table_id, version, seat, chips, debit, self.clock()))
            for seat in _vacated(event):
                book.set(seat, "")
        last = followed.events[-1][0] if followed.events else followed.after
        if not book.changes and not credits and last == followed.after:
            return True
        keys = [self.store.key(tenant, n) for n in ("positions", "funded", "tx", "order", "seq")]
        args: list[Any] = [table_id, followed.after, last, orjson.dumps(book.changes)]
        args += [repr(self.clock()), orjson.dumps(self._confirmed(tenant, paid))]
        for credit in credits:
            args += [credit["transaction_id"], orjson.dumps(credit)]
        keys += [self.store.key(tenant, "due"), self.store.key(tenant, f"of:{table_id}")]
        return bool(self._derive(keys=keys, args=args))

    def _confirmed(self, tenant: str, paid: list[str]) -> list[tuple[str, int, str]]:
        """The confirmation of each of the debits `paid` still pending: its id, the attempts
        read, the confirmed record (its attempt counted, as a sender's confirmation counts)."""
        confirmed = []
        for record in self.store.transactions(tenant, paid) if paid else []:
            if record is not None and record["status"] == w.PENDING:
                attempts = record["attempts"]
                changes = {"status": w.CONFIRMED, "attempts": attempts + 1}
                after = orjson.dumps(self.store.changed(record, changes)).decode()
                confirmed.append((record["transaction_id"], attempts, after))
        return confirmed


class _Book:
    """The table's wallet-funded seats, as stored and as the batch changes them."""

    def __init__(self, credits: WalletCredits, tenant: str, table_id: str) -> None:
        self.credits, self.tenant, self.table_id = credits, tenant, table_id
        self.changes: dict[str, str] = {}
        self._stored: dict[str, str] | None = None

    def field(self, seat: int) -> str:
        return f"{self.table_id} {seat}"

    def set(self, seat: int, debit: str) -> None:
        self.changes[self.field(seat)] = debit

    def debit(self, seat: int) -> dict[str, Any] | None:
        """The record of the debit that funded the seat (None: the casino funded it)."""
        field = self.field(seat)
        txid = self.changes.get(field)
        if txid is None:
            txid = self._read(field)
        if not txid:
            return None
        return self.credits.store.transaction(self.tenant, txid)

    def _read(self, field: str) -> str:
        client, key = self.credits.store.client, self.credits.store.key(self.tenant, "funded")
        raw = cast(bytes | None, client.hget(key, field))
        return "" if raw is None else raw.decode()


def _vacated(event: ev.Event) -> list[int]:
    """The seats the event empties (their funding is forgotten)."""
    if isinstance(event, ev.PlayerLeft):
        return [event.seat]
    if isinstance(event, ev.TableEnded):
        return sorted(set(event.cash_outs) | set(event.players))
    return []


def _credit(
    table_id: str, version: int, seat: int, chips: int, debit: dict[str, Any], now: float
) -> dict[str, Any]:
    return w.new_transaction(
        w.CREDIT,
        w.CASH_OUT,
        datetime.fromtimestamp(now, UTC),
        transaction_id=w.credit_id(table_id, version, seat),
        player_id=debit["player_id"],
        table_id=table_id,
        chips=chips,
        currency=debit["currency"],
        chip_value_minor=debit["chip_value_minor"],
        seat=seat,
        version=version,
        debit=debit["transaction_id"],
    )
