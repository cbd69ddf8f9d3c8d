"""The ledger projection: every chip movement of a tenant's tables, kept in Redis and paged.

A projection (`service.projections.follower`): the follower hands it a table's events after its
position;
it folds them with the rules' ledger (`service.rules.ledger.step`, from the book it stored
with the position) and writes the entries, the new book and the new position in one Lua
script, only if the position is still the one it read. So every entry is written exactly
once, whoever follows and however often, and a crash anywhere loses nothing.

Keys, all under one hash tag per tenant (``P`` the prefix, ``T`` the tenant; ``%`` is in no
table id, so no table's tag is ever this one), so every script touches one slot::

    P:{%ledger:T}:positions     hash   table id -> the version applied up to
    P:{%ledger:T}:books         hash   table id -> the book (JSON) at that version
    P:{%ledger:T}:seq           string the last entry's sequence number (the cursor)
    P:{%ledger:T}:entries       hash   sequence number -> the entry (JSON)
    P:{%ledger:T}:table:<id>    zset   the table's entries (score = member = sequence number)
    P:{%ledger:T}:player:<id>   zset   the player's entries (likewise)
    P:{%ledger:T}:paid:<id>     zset   the player's pot movements, scored by time (epoch ms),
                                       members "<seq>:<amount>": their 24 h net loss
    P:{%ledger:T}:limits        hash   player id -> their limits (JSON)
    P:{%ledger:T}:settings      hash   "profile" -> the tenant's player-protection profile
    P:{%ledger:T}:outbox        hash   player id -> a limits change still to apply at the
                                       tables where they sit (JSON; written with the limits)
    P:{%ledger:T}:cool-downs    zset   player id, scored by the end (epoch ms) of the cool-down
                                       a session limit started (until it ends)
    P:%ledger:outbox-tenants    set    the tenants that ever had an outbox entry

Entries are numbered in the order they are written (per tenant), so a page is "the entries
after sequence number N": an unfiltered page is one HMGET of N+1..N+limit, a filtered one a
ZRANGE of the table's or the player's index; a cursor stays valid while entries are added.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any, cast

import orjson
import redis

from service.eventlog.decoding import CorruptTable, book_data, position
from service.eventlog.derived_keys import wrong_kind
from service.eventlog.store import BadCursor, CorruptRecord
from service.projections.positions import hash_positions
from service.projections.projection import Followed, HeldProjection
from service.projections.protections import (
    DAY_MS,
    CallsMany,
    PlayerProtections,
    epoch_ms,
    reachable,
)
from service.rules import ledger
from service.rules.serial import from_data, to_data

_APPLY = """
local position = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if position ~= tonumber(ARGV[2]) then return 0 end
local count = tonumber(ARGV[5])
local i = 6
for _ = 1, count do
  local seq = redis.call('INCR', KEYS[3])
  redis.call('HSET', KEYS[4], seq, ARGV[i])
  redis.call('ZADD', KEYS[5], seq, seq)
  local player = tonumber(ARGV[i + 1])
  if player > 0 then redis.call('ZADD', KEYS[player], seq, seq) end
  local paid = tonumber(ARGV[i + 2])
  if paid > 0 then
    local at = tonumber(ARGV[i + 3])
    redis.call('ZADD', KEYS[paid], at, seq .. ':' .. ARGV[i + 4])
    redis.call('ZREMRANGEBYSCORE', KEYS[paid], '-inf', '(' .. (at - ARGV[6 + 5 * count]))
  end
  i = i + 5
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[4])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
"""
"""KEYS: positions, books, seq, entries, the table's index, then the players' keys the
entries name. ARGV: table id, the position read, the new position, the new book, the entry
count, per entry (its JSON, its player index's KEYS position or 0, its paid index's or 0, its
time in ms, its amount), and last how long the paid index keeps a movement (ms)."""


_INDEXED = """
local seqs = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], '+inf', 'LIMIT', 0, ARGV[2])
if #seqs == 0 then return {} end
local rows = redis.call('HMGET', KEYS[2], unpack(seqs))
local out = {}
for i = 1, #seqs do
  out[2 * i - 1] = seqs[i]
  out[2 * i] = rows[i]
end
return out
"""
"""A filtered page in one round trip: up to ARGV[2] sequence numbers after ARGV[1] from the
index KEYS[1], each followed by its entry in KEYS[2] (read only)."""


class LedgerStore(PlayerProtections):
    """The ledger projection of the tables under `prefix` (see the module doc), with the
    players' protections of its tenants (`PlayerProtections`)."""

    name = "ledger"

    def __init__(
        self, client: redis.Redis, prefix: str = "guts", commands: CallsMany | None = None
    ) -> None:
        self.client = client
        self.prefix = prefix
        self.commands = commands
        self.script = client.register_script(_APPLY)
        self.indexed = client.register_script(_INDEXED)

    # --- the projection ---------------------------------------------------------------------

    def tidy(self, table_id: str, position: int) -> None:
        """Nothing is ever left half done: each step is one script."""

    @reachable
    def positions(
        self, tables: Sequence[tuple[str, str]]
    ) -> list[int | CorruptTable | HeldProjection]:
        return hash_positions(self.client, lambda t: self.key(t, "positions"), tables, self.name)

    @reachable
    def apply(self, followed: Followed) -> bool:
        tenant, table_id = followed.tenant, followed.table_id
        pipe = self.client.pipeline(transaction=True)  # the book and its position, together
        pipe.hget(self.key(tenant, "positions"), table_id)
        pipe.hget(self.key(tenant, "books"), table_id)
        raw_position, stored = pipe.execute()
        if position(table_id, self.name, raw_position) != followed.after:
            return False
        book = _book(table_id, stored) if stored else ledger.Book()
        book, entries = ledger.fold(followed.events, book)
        keys = [
            self.key(tenant, "positions"),
            self.key(tenant, "books"),
            self.key(tenant, "seq"),
            self.key(tenant, "entries"),
            self.key(tenant, "table", table_id),
        ]
        args: list[Any] = [
            table_id,
            followed.after,
            followed.events[-1][0],
            orjson.dumps(to_data(book)),
            len(entries),
        ]
        where: dict[str, int] = {}

        def slot(key: str) -> int:
            if key not in where:
                keys.append(key)
                where[key] = len(keys)
            return where[key]

        for entry in entries:
            player = entry.player_id
            pot_move = player is not None and (
                entry.kind in ledger.PAID_IN or entry.kind in ledger.PAID_OUT
            )
            args += [
                orjson.dumps(asdict(entry)),
                slot(self.key(tenant, "player", player)) if player is not None else 0,
                slot(self.key(tenant, "paid", player)) if pot_move and player else 0,
                epoch_ms(entry.at),
                entry.amount,
            ]
        args.append(DAY_MS)
        return bool(self.script(keys=keys, args=args))

    # --- reading ----------------------------------------------------------------------------

    @reachable
    def page(
        self,
        tenant: str,
        after: str | None,
        limit: int,
        *,
        table_id: str | None = None,
        player_id: str | None = None,
    ) -> tuple[list[dict[str, Any]], str]:
        """Up to `limit` entries after the cursor `after` (None: from the first), oldest
        first, of one table and/or one player when given; and the cursor to go on from (the
        same one when there is nothing newer yet)."""
        try:
            return self._page(tenant, page_cursor(after), limit, table_id, player_id)
        except redis.ResponseError as error:
            if not wrong_kind(error):
                raise
            raise CorruptRecord(
                f"a key of the ledger of tenant {tenant!r} (its entries, or the index of the "
                "table or player asked for) holds another type than the ledger writes: it "
                "must be written again, as the tables' logs derive it"
            ) from error

    def _page(
        self, tenant: str, start: int, limit: int, table_id: str | None, player_id: str | None
    ) -> tuple[list[dict[str, Any]], str]:
        if table_id is None and player_id is None:
            seqs = list(range(start + 1, start + limit + 1))
            found = self._entries(tenant, seqs)
            return [e for _, e in found], str(found[-1][0] if found else start)
        index = self.key(tenant, "table", table_id) if table_id else None
        if index is None:
            assert player_id is not None
            index = self.key(tenant, "player", player_id)
        rows: list[dict[str, Any]] = []
        cursor = start
        entries = self.key(tenant, "entries")
        while len(rows) < limit:  # both filters: the table's index, keeping the player's
            pairs = cast(
                list[bytes | None], self.indexed(keys=[index, entries], args=[cursor, limit])
            )
            if not pairs:
                break
            for seq, data in zip(pairs[::2], pairs[1::2], strict=True):
                cursor = int(cast(bytes, seq))
                if data is None:
                    continue
                entry = _entry(tenant, cursor, data)
                if player_id is None or entry["player_id"] == player_id:
                    rows.append(entry)
                    if len(rows) == limit:
                        break
        return rows, str(cursor)

    def _entries(self, tenant: str, seqs: list[int]) -> list[tuple[int, dict[str, Any]]]:
        if not seqs:
            return []
        raw = cast(list[bytes | None], self.client.hmget(self.key(tenant, "entries"), seqs))
        pairs = zip(seqs, raw, strict=True)
        return [(seq, _entry(tenant, seq, data)) for seq, data in pairs if data]

    @reachable
    def table_entries(self, tenant: str, table_id: str) -> tuple[int, list[dict[str, Any]]]:
        """The position of `table_id` and every entry stored for it, oldest first."""
        (applied,) = self.positions([(tenant, table_id)])
        if isinstance(applied, CorruptTable | HeldProjection):
            raise applied
        index = self.key(tenant, "table", table_id)
        seqs = [int(s) for s in cast(list[bytes], self.client.zrange(index, 0, -1))]
        entries: list[dict[str, Any]] = []
        for start in range(0, len(seqs), 1000):
            entries += [e for _, e in self._entries(tenant, seqs[start : start + 1000])]
        return applied, entries

    def net_loss(self, tenant: str, player_id: str, now_ms: int) -> int:
        """What `player_id` paid into pots minus what pots paid them, at `tenant`'s tables, in
        the 24 hours before `now_ms` (as far as the ledger has followed the logs)."""
        return self.net_losses(tenant, [player_id], now_ms)[player_id]

    @reachable
    def net_losses(self, tenant: str, player_ids: Sequence[str], now_ms: int) -> dict[str, int]:
        """`net_loss` of each of `player_ids`, in one round trip."""
        pipe = self.client.pipeline(transaction=False)
        for player_id in player_ids:
            pipe.zrangebyscore(self.key(tenant, "paid", player_id), now_ms - DAY_MS, "+inf")
        found = cast(list[list[bytes]], pipe.execute())
        return {
            player_id: -sum(int(m.rpartition(b":")[2]) for m in members)
            for player_id, members in zip(player_ids, found, strict=True)
        }


def _book(table_id: str, stored: bytes) -> ledger.Book:
    """The book stored with a table's position (CorruptTable when it does not parse)."""
    data = book_data(table_id, "ledger", stored)
    try:
        return from_data(ledger.Book, data)
    except (KeyError, TypeError, ValueError) as error:
        raise CorruptTable(table_id, "ledger book", type(error).__name__) from error


def page_cursor(after: str | None) -> int:
    if after is None:
        return 0
    if not (after.isascii() and after.isdigit()) or len(after) > 18:
        raise BadCursor("after must be the next_after of an earlier page")
    return int(after)


def _entry(tenant: str, seq: int, data: bytes) -> dict[str, Any]:
    """Entry `seq` as stored; CorruptRecord (naming it) when it does not decode to an entry:
    the pages that hold it are refused until an operator writes it again (from the table's
    log, which the entry is derived from), and the others are served."""
    try:
        entry = orjson.loads(data)
    except orjson.JSONDecodeError:
        entry = None
    if not isinstance(entry, dict) or not isinstance(entry.get("player_id", 0), str | None):
        raise CorruptRecord(
            f"the ledger entry {seq} of tenant {tenant!r} does not decode: it must be written "
            "again, as the table's log derives it"
        )
    return entry
