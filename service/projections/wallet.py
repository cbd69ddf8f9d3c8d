"""The casino wallet's records: each tenant's wallet settings, every money movement (debit,
credit, rollback) as a transaction record, the transactions due for the wallet duty, and the
one atomic step that decides a debit's fate on its table (`claim_rollback`). The calls
themselves are `service.projections.wallet_messages`'; the credits are derived from the logs
by `service.projections.wallet_credits`.

Keys, under one hash tag per tenant (``P`` the prefix, ``T`` the tenant)::

    P:{%wallet:T}:settings   hash  url, currency, chip_value_minor, secret, updated_at
    P:{%wallet:T}:tx         hash  key -> the transaction's record (JSON); the key is the
                                   transaction id, ``rollback:<debit's id>`` for a rollback
    P:{%wallet:T}:order      zset  key -> its sequence number (the list's order and cursor)
    P:{%wallet:T}:of:<table> zset  the same, of one table's transactions (for its audit)
    P:{%wallet:T}:seq        the last sequence number
    P:{%wallet:T}:due        zset  key -> when the wallet duty next looks at it (epoch s):
                                   every pending transaction is in it, and only those
    P:{%wallet:T}:positions  hash  table id -> the version credits were derived up to
    P:{%wallet:T}:funded     hash  ``<table id> <seat>`` -> the debit that funded the seat

and ``P:{%wallet}:tenants``, the tenants that ever set a wallet (the duty looks at theirs).

A debit's fate is decided on its table's keys: the seat (or top-up) it pays for is appended
with the idempotency key ``wallet:<transaction id>``, and a rollback first claims that same
key (`claim_rollback`, one script on the table's hash tag). Whichever comes first wins: a seat
appended first makes the claim answer "seated" (the debit is confirmed, never rolled back); a
claim first makes the late seat's append refused (its key was used for another request). So
however many API processes and wallet duties race on one debit, exactly one outcome holds.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol, cast

import orjson
import redis

from service.eventlog.replication import plain
from service.projections.wallet_messages import check_settings
from service.projections.wallet_records import (
    decoded,
    opened,
    record_of,
    retried,
    settings_of,
)
from service.projections.wallet_scripts import CLAIM, DUE, OPEN, SETTLE, WITHDRAW
from service.projections.webhook_messages import new_secret
from service.rules import wallet as w
from service.rules.times import iso

log = logging.getLogger("guts.wallet")

SEAT_REQUEST = "wallet-seat"
"""The request hash under which a wallet-funded seat or top-up is appended."""
ROLLBACK_CLAIM = "wallet-rollback"
"""The request hash of a rollback's claim of the same key."""
CLAIM_TTL_S = 7 * 24 * 3600
"""How long a rollback's claim is kept (a sender stalled longer than this could still seat)."""

KEEP = "keep"
"""A transaction's due moment left as it was (`WalletStore.settle`)."""
Due = float | str | None
"""When a transaction is due to the wallet duty: an epoch, `KEEP`, or None (never)."""


def seat_key(transaction_id: str) -> str:
    """The idempotency key a wallet-funded seat or top-up is appended under."""
    return f"wallet:{transaction_id}"


def rollback_key(transaction_id: str) -> str:
    return f"rollback:{transaction_id}"


class RunsScripts(Protocol):
    """Scripts run on one connection of the store's Redis
    (`service.eventlog.replication.Replicated`): the reply, and how many replicas hold it."""

    def run(self, script: Any, keys: list[Any], args: list[Any]) -> tuple[Any, int | None]: ...


class WalletStore:
    """Every tenant's wallet settings and transactions under `prefix` (see the module doc).
    `idempotency_key(table_id, key)` names a table's idempotency record (the event store's)."""

    def __init__(
        self,
        client: redis.Redis,
        idempotency_key: Callable[[str, str], bytes],
        prefix: str = "guts",
        clock: Callable[[], float] = time.time,
        commands: RunsScripts | None = None,
        private_ok: bool = False,
    ) -> None:
        """`commands`: how `settle` is sent: an event store's `commands`, its shortcut around
        redis-py when on; None: redis-py's public API (`service.eventlog.replication.plain`).
        `private_ok`: a wallet may be set at, and called at, an address that is not public
        (off unless asked: the composition root passes `GUTS_ALLOW_PRIVATE_URLS`)."""
        self.private_ok = private_ok
        self.client = client
        self.prefix = prefix
        self.clock = clock
        self.idempotency_key = idempotency_key
        self.commands = commands or plain(client)
        self._open = client.register_script(OPEN)
        self._withdraw = client.register_script(WITHDRAW)
        self._settle = client.register_script(SETTLE)
        self._claim = client.register_script(CLAIM)
        self._due = client.register_script(DUE)

    def key(self, tenant: str, name: str) -> str:
        return f"{self.prefix}:{{%wallet:{tenant}}}:{name}"

    @property
    def tenants_key(self) -> str:
        return f"{self.prefix}:{{%wallet}}:tenants"

    def tenants(self) -> list[str]:
        """The tenants that ever set a wallet (a member that names none is passed over)."""
        members = cast(set[bytes], self.client.smembers(self.tenants_key))
        return sorted(m.decode() for m in members if m.isascii())

    # --- settings ----------------------------------------------------------------------------

    def settings(self, tenant: str) -> dict[str, Any] | None:
        """The tenant's wallet settings, secret included (never answer them as they are)."""
        raw = cast(dict[bytes, bytes], self.client.hgetall(self.key(tenant, "settings")))
        return settings_of(raw)

    def put_settings(
        self, tenant: str, url: str, currency: str, chip_value_minor: int
    ) -> tuple[dict[str, Any], bool]:
        """Set the tenant's wallet (a secret is made with the first settings): the settings,
        and whether they are new (their answer is then the one with the secret)."""
        check_settings(url, currency, chip_value_minor, self.private_ok)
        key = self.key(tenant, "settings")
        self.client.sadd(self.tenants_key, tenant)  # first: a tenant listed with none is fine
        made = bool(self.client.hsetnx(key, "secret", new_secret()))
        fields: dict[str | bytes, str] = {
            "url": url,
            "currency": currency,
            "chip_value_minor": str(chip_value_minor),
            "updated_at": _iso(self._now()),
        }
        self.client.hset(key, mapping=cast(Any, fields))
        found = self.settings(tenant)
        assert found is not None
        return found, made

    def rotate_secret(self, tenant: str) -> dict[str, Any] | None:
        """A new secret for the tenant's wallet (None: it has none)."""
        key = self.key(tenant, "settings")
        if not self.client.exists(key):
            return None
        self.client.hset(key, mapping={"secret": new_secret(), "updated_at": _iso(self._now())})
        return self.settings(tenant)

    def delete_settings(self, tenant: str) -> bool:
        """Forget the tenant's wallet settings (pending transactions wait for new ones)."""
        return bool(self.client.delete(self.key(tenant, "settings")))

    # --- transactions -----------------------------------------------------------------------

    def open(self, tenant: str, record: dict[str, Any], due: float | None) -> dict[str, Any]:
        """Record a transaction (pending, due to the duty at `due`) unless one is recorded
        under its key: the record that holds the key."""
        key = record_key(record)
        names = ("tx", "order", "seq", "due", f"of:{record['table_id']}")
        keys = [self.key(tenant, n) for n in names]
        kept = self._open(keys=keys, args=[key, orjson.dumps(record), _score(due)])
        return record if kept is None else record_of(tenant, key, kept)

    def open_as_set(
        self, tenant: str, record: dict[str, Any], due: float, settings: dict[str, Any]
    ) -> dict[str, Any] | None:
        """Record a pending transaction made with the tenant's `settings`, if they are still
        its settings (one round trip): the record kept before under its key (None: `record`
        is new). SettingsChanged, and nothing written, when they are not."""
        keys, args = self.opening(tenant, record, due, settings)
        return opened(self._open(keys=keys, args=args))

    def opening(
        self, tenant: str, record: dict[str, Any], due: float, settings: dict[str, Any]
    ) -> tuple[list[str], list[str | bytes]]:
        """The keys and arguments of `open_as_set`'s script (`OPEN`)."""
        names = ("tx", "order", "seq", "due", f"of:{record['table_id']}", "settings")
        keys = [self.key(tenant, n) for n in names]
        made_with = [str(settings[k]) for k in ("url", "currency", "chip_value_minor", "secret")]
        args: list[str | bytes] = [record_key(record), orjson.dumps(record), _score(due)]
        return keys, args + made_with

    def withdraw(self, tenant: str, record: dict[str, Any]) -> bool:
        """Forget a transaction recorded as `record` (a debit whose seat the rules refused
        before it was sent), if it is still exactly as recorded: whether it was."""
        names = ("tx", "order", "due", f"of:{record['table_id']}")
        keys = [self.key(tenant, n) for n in names]
        return bool(self._withdraw(keys=keys, args=[record_key(record), orjson.dumps(record)]))

    def transaction(self, tenant: str, key: str) -> dict[str, Any] | None:
        """The record under `key` (None: none; CorruptRecord when it cannot be read)."""
        return self.transactions(tenant, [key])[0]

    def transactions(self, tenant: str, keys: list[str]) -> list[dict[str, Any] | None]:
        """The records under `keys`, in their order (None where there is none), in one round
        trip; CorruptRecord when one cannot be read."""
        found = cast(list[bytes | None], self.client.hmget(self.key(tenant, "tx"), keys))
        pairs = zip(keys, found, strict=True)
        return [None if raw is None else record_of(tenant, k, raw) for k, raw in pairs]

    def settle(
        self, tenant: str, before: dict[str, Any], changes: dict[str, Any], due: Due
    ) -> dict[str, Any] | None:
        """Write `before` with `changes` (due to the duty again at `due`; None: finished), if
        nobody changed it since it was read: the new record, or None (someone did)."""
        after = self.changed(before, changes)
        keys = [self.key(tenant, "tx"), self.key(tenant, "due")]
        args = [record_key(before), before["status"], before["attempts"], orjson.dumps(after)]
        args.append(_score(due))
        done = self.commands.run(self._settle, keys, args)[0]
        return after if done else None

    def changed(self, before: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
        """The record `before` with `changes`, its settling time set when they finish it."""
        after = {**before, **changes}
        if after["status"] != w.PENDING and after.get("settled_at") is None:
            after["settled_at"] = _iso(self._now())
        return after

    def claim_rollback(self, table_id: str, transaction_id: str) -> bool:
        """Decide the debit's fate on its table: True when it is (now, or was already) to be
        rolled back, False when its seat or top-up was appended (see the module doc)."""
        record = self.idempotency_key(table_id, seat_key(transaction_id))
        response = orjson.dumps({"effect": "changed", "facts": {"rolled_back": True}})
        held = self._claim(keys=[record], args=[ROLLBACK_CLAIM, response, CLAIM_TTL_S])
        return cast(bytes, held).decode() == ROLLBACK_CLAIM

    def table_transactions(self, tenant: str, table_id: str) -> tuple[int, list[dict[str, Any]]]:
        """The position credits were derived up to for the table, and its transactions."""
        keys = cast(list[bytes], self.client.zrange(self.key(tenant, f"of:{table_id}"), 0, -1))
        raw = self.client.hget(self.key(tenant, "positions"), table_id)
        position = int(cast(bytes, raw)) if raw is not None else 0
        if not keys:
            return position, []
        raws = cast(list[bytes | None], self.client.hmget(self.key(tenant, "tx"), keys))
        pairs = zip(keys, raws, strict=True)
        return position, [record_of(tenant, k.decode(), r) for k, r in pairs if r is not None]

    def due(self, tenant: str, lease_s: float, limit: int = 200) -> list[dict[str, Any]]:
        """Claim the tenant's transactions due now (each comes due again after `lease_s`
        unless settled) and their records."""
        now = self._now()
        due_key = self.key(tenant, "due")
        keys = cast(list[bytes], self._due(keys=[due_key], args=[now, now + lease_s, limit]))
        if not keys:
            return []
        raws = cast(list[bytes | None], self.client.hmget(self.key(tenant, "tx"), keys))
        found = []
        for key, raw in zip(keys, raws, strict=True):
            record = None if raw is None else decoded(raw)
            if record is not None:
                found.append(record)
            elif raw is not None:  # (claimed all the same: it is named again after the lease,
                log.error(  # never taken for settled, and holds up no other)
                    "wallet transaction %s of tenant %s cannot be read; left pending for an "
                    "operator to repair",
                    key.decode(errors="replace"),
                    tenant,
                    extra={"tenant": tenant, "transaction": key.decode(errors="replace")},
                )
        return found

    def hasten(self, tenant: str, lease_s: float, batch: int = 1000) -> int:
        """Bring the tenant's pending credits and rollbacks whose next attempt waits more
        than `lease_s` forward to now (the wallet answers again: their backoff, grown while
        it was away, would hold them up to `max_wait_s` more); how many. One due within
        `lease_s` is left alone: it may be claimed (a claim moves it that far: its call may
        be under way, and must not be sent twice at once) or comes due soon anyway; debits
        keep their grace."""
        now = self._now()
        due_key, tx_key = self.key(tenant, "due"), self.key(tenant, "tx")
        moved = kept = 0
        while True:
            chunk = cast(
                list[bytes],
                self.client.zrangebyscore(due_key, f"({now + lease_s}", "+inf", kept, batch),
            )
            if not chunk:
                return moved
            raws = cast(list[bytes | None], self.client.hmget(tx_key, chunk))
            waiting = {k: now for k, r in zip(chunk, raws, strict=True) if r and retried(r)}
            if waiting:  # (only ever sooner, only while listed: XX LT; none can be claimed
                # meanwhile: a claim takes only what is due now)
                moved += cast(int, self.client.zadd(due_key, waiting, xx=True, lt=True, ch=True))
            kept += len(chunk) - len(waiting)
            if len(chunk) < batch:
                return moved

    def page(
        self, tenant: str, after: int, limit: int, match: dict[str, str]
    ) -> tuple[list[dict[str, Any]], int | None]:
        """Transactions after the cursor `after`, oldest first, whose fields equal `match`'s;
        the next cursor (None at the end). Looks at most 20 pages' worth per call."""
        found: list[dict[str, Any]] = []
        cursor, scanned = after, 0
        while len(found) < limit and scanned < limit * 20:
            chunk = cast(
                list[tuple[bytes, float]],
                self.client.zrangebyscore(
                    self.key(tenant, "order"), f"({cursor}", "+inf", 0, 200, withscores=True
                ),
            )
            if not chunk:
                return found, None
            raws = self.client.hmget(self.key(tenant, "tx"), [k for k, _ in chunk])
            for (key, seq), raw in zip(chunk, cast(list[bytes | None], raws), strict=True):
                cursor, scanned = int(seq), scanned + 1
                record = None if raw is None else record_of(tenant, key.decode(), raw)
                if record is not None and all(record.get(k) == v for k, v in match.items()):
                    found.append(record)
                    if len(found) == limit:
                        break
        return found, cursor

    def _now(self) -> float:
        return self.clock()


def record_key(record: dict[str, Any]) -> str:
    """Where a transaction's record is kept: its id; a rollback's, beside its debit's."""
    txid = str(record["transaction_id"])
    return rollback_key(txid) if record["kind"] == w.ROLLBACK else txid


def _iso(epoch: float) -> str:
    return iso(datetime.fromtimestamp(epoch, UTC))


def _score(due: Due) -> str:
    return "" if due is None else due if isinstance(due, str) else repr(due)


class CarriedDebit:
    """A debit's record (`record`, made with the tenant's `settings`) written by a round
    trip of another store (`service.projections.protections.Carried`): `OPEN` among its
    commands, sent whole (EVAL: a registered script there would cost a round trip of its
    own to check that Redis has it, and a cluster's pipeline refuses EVALSHA); `replies`
    its answer once that ran."""

    def __init__(
        self,
        store: WalletStore,
        tenant: str,
        record: dict[str, Any],
        due: float,
        settings: dict[str, Any],
    ) -> None:
        self.record, self.settings = record, settings
        keys, args = store.opening(tenant, record, due, settings)
        self.commands = (("EVAL", OPEN, len(keys), *keys, *args),)
        self.replies: list[Any] = []

    def took(self, replies: list[Any]) -> None:
        self.replies = replies
