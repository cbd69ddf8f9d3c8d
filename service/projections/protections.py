"""Players' protections in each tenant, kept beside the tenant's ledger (under its hash tag,
``P:{%ledger:T}``; the keys are listed in `service.projections.ledger`'s doc): the limits
set for each player, the tenant's profile, the outbox of limit changes still to apply at
the tables, and the cool-downs a session limit started. `LedgerStore` is one of these.

A seat asks three of them (the player's limits, the profile whose defaults they get
otherwise, their cool-down): `seating` reads them in one round trip, which may carry another
store's step (`Carried`: a wallet-funded seat's debit is recorded in it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from functools import wraps
from typing import Any, ParamSpec, Protocol, TypeVar, cast

import orjson
import redis
from redis.cluster import RedisCluster

from service.eventlog.redis_errors import REDIS_ERRORS, failing_over
from service.eventlog.store import CorruptRecord, StoreUnavailable
from service.rules.limit_changes import DEFAULT_PROFILE, PROFILES, outbox_entry_from
from service.rules.limits import Limits, limits_from
from service.rules.times import iso, parse_iso

DAY_MS = 24 * 3600 * 1000
log = logging.getLogger("guts.protection")

P = ParamSpec("P")
R = TypeVar("R")
Seating = tuple[Limits | None, str, str | None]
"""A player's limits (None: none set), their tenant's profile, the end of their cool-down."""


class CallsMany(Protocol):
    """Commands sent together on one connection (`service.eventlog.replication.Replicated`)."""

    def call_many(self, *commands: tuple[Any, ...]) -> list[Any]: ...


class Carried(Protocol):
    """Another store's step that a round trip of this one carries (sent with its commands on
    one connection, any keys): `commands` are its commands, `took` is handed their replies."""

    commands: tuple[tuple[Any, ...], ...]

    def took(self, replies: list[Any]) -> None: ...


def reachable(method: Callable[P, R]) -> Callable[P, R]:
    """Redis going away, or a failover under way (``CLUSTERDOWN`` while a replica takes
    over), is the store being unavailable (a 503 at the API, a wait in the follower), as for
    the event store."""

    @wraps(method)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except REDIS_ERRORS as error:
            if not failing_over(error):
                raise
            raise StoreUnavailable(f"Redis is unreachable: {str(error)[:200]}") from error

    return call


class PlayerProtections:
    """The players' protections of the tenants under `prefix` (see the module doc)."""

    client: redis.Redis
    prefix: str
    commands: CallsMany | None = None
    """How `limits` (a request's read: every deal and every "in") is sent: an event store's
    `commands`, its shortcut around redis-py when on; None: redis-py's pipeline."""

    def key(self, tenant: str, *parts: str) -> str:
        """The key of `parts` in `tenant`'s ledger."""
        return ":".join((f"{self.prefix}:{{%ledger:{tenant}}}", *parts))

    def _together(self, read: list[tuple[Any, ...]], also: Carried | None = None) -> list[Any]:
        """The replies to `read` (commands on one tenant's keys, the second, if any, an
        ``HMGET``) and to `also`'s commands, in one round trip: through `commands` (on a Redis
        Cluster only without `also`, whose keys are another slot's), else redis-py's pipeline.
        A slot that moved answers the first command alone through `commands` (the others
        None, where an ``HMGET`` answers a list): `read` is then sent again the pipeline's way,
        never taken for keys that hold nothing."""
        carried = also.commands if also is not None else ()
        if self.commands is not None and not (carried and isinstance(self.client, RedisCluster)):
            replies = self.commands.call_many(*read, *carried)
            if carried or len(read) < 2 or replies[1] is not None:
                if also is not None:
                    also.took(replies[len(read) :])
                return replies
        pipe = self.client.pipeline(transaction=False)
        for command in (*read, *carried):
            pipe.execute_command(*command)  # type: ignore[no-untyped-call]
        replies = pipe.execute()
        if also is not None:
            also.took(replies[len(read) :])
        return list(replies)

    @reachable
    def limits(self, tenant: str, player_ids: Sequence[str]) -> tuple[dict[str, Limits], str]:
        """The limits set for each of `player_ids` (players without any are left out) and the
        tenant's player-protection profile, whose defaults the others get: one round trip
        (both keys under the tenant's hash tag)."""
        read: list[tuple[Any, ...]] = [("HGET", self.key(tenant, "settings"), "profile")]
        if player_ids:
            read.append(("HMGET", self.key(tenant, "limits"), *player_ids))
        found, *raw = self._together(read)
        stored = {
            pid: _limits(tenant, pid, data)
            for pid, data in zip(player_ids, raw[0] if raw else [], strict=True)
            if data
        }
        return stored, _profile(tenant, found)

    @reachable
    def set_limits(
        self,
        tenant: str,
        player_id: str,
        limits: Limits,
        outbox: dict[str, Any] | None = None,
    ) -> None:
        """Set `player_id`'s limits in `tenant` (replacing any before); with `outbox`, in the
        same transaction, what is still to apply of them at the tables where the player sits
        (replacing any entry before: the newest limits carry everything)."""
        if outbox is not None:
            self.client.sadd(f"{self.prefix}:%ledger:outbox-tenants", tenant)
        pipe = self.client.pipeline(transaction=True)
        pipe.hset(self.key(tenant, "limits"), player_id, orjson.dumps(asdict(limits)))
        if outbox is not None:
            pipe.hset(self.key(tenant, "outbox"), player_id, orjson.dumps(outbox))
        pipe.execute()

    @reachable
    def outbox(self, tenant: str | None = None) -> list[tuple[str, str, dict[str, Any]]]:
        """The (tenant, player id, entry) still to apply at the tables (every tenant's, or
        `tenant`'s)."""
        tenants = [tenant] if tenant is not None else self._outbox_tenants()
        found = []
        for each in tenants:
            entries = cast(dict[bytes, bytes], self.client.hgetall(self.key(each, "outbox")))
            for player, raw in sorted(entries.items()):
                entry = _entry(raw)
                if entry is not None:
                    found.append((each, player.decode(), entry))
                else:  # (never applicable: it would stop every later entry of every tenant)
                    self._drop_unreadable(each, player.decode(), raw)
        return found

    def _drop_unreadable(self, tenant: str, player_id: str, raw: bytes) -> None:
        dropped = self.client.eval(_DROP_IF_SAME, 1, self.key(tenant, "outbox"), player_id, raw)
        if dropped:
            log.error(
                "an unreadable limits change of player %s (tenant %s) was dropped from the "
                "outbox: their limits stand as stored; a time-out or exclusion just set may "
                "not have ended their sessions at the tables: set it again (PUT "
                "/v1/players/%s/limits)",
                player_id,
                tenant,
                player_id,
                extra={"tenant": tenant, "player_id": player_id},
            )

    def _outbox_tenants(self) -> list[str]:
        members = cast(set[bytes], self.client.smembers(f"{self.prefix}:%ledger:outbox-tenants"))
        return sorted(m.decode() for m in members)

    @reachable
    def applied(self, tenant: str, player_id: str, entry: dict[str, Any]) -> bool:
        """`entry` was applied at every table: drop it, unless a newer one replaced it."""
        done = self.client.eval(
            _DROP_IF_SAME, 1, self.key(tenant, "outbox"), player_id, orjson.dumps(entry)
        )
        return bool(done)

    @reachable
    def cool_down(self, tenant: str, player_id: str, until: str) -> None:
        """`player_id` may not be seated at `tenant`'s tables until `until` (a later end
        kept, an earlier one ignored: writing one twice is writing it once)."""
        key = self.key(tenant, "cool-downs")
        pipe = self.client.pipeline(transaction=True)
        pipe.zadd(key, {player_id: epoch_ms(until)}, gt=True)
        # (those that ended before this one began are done with)
        pipe.zremrangebyscore(key, "-inf", f"({epoch_ms(until) - DAY_MS}")
        pipe.execute()

    def cool_down_until(self, tenant: str, player_id: str) -> str | None:
        """The end of `player_id`'s cool-down in `tenant` (None: none was ever recorded, or
        it ended long ago)."""
        return self.seating(tenant, player_id)[2]

    @reachable
    def seating(self, tenant: str, player_id: str, also: Carried | None = None) -> Seating:
        """What a seat of `player_id` asks (the limits set for them, None: none; the tenant's
        profile; `cool_down_until`) in one round trip (`_together`), which carries `also`
        when given."""
        read: list[tuple[Any, ...]] = [
            ("HGET", self.key(tenant, "settings"), "profile"),
            ("HMGET", self.key(tenant, "limits"), player_id),  # (a list: never None
            ("ZSCORE", self.key(tenant, "cool-downs"), player_id),  # unless the slot moved)
        ]
        chosen, (data,), score, *_ = self._together(read, also)
        until = None if score is None else iso(datetime.fromtimestamp(float(score) / 1000, UTC))
        limits = _limits(tenant, player_id, data) if data else None
        return limits, _profile(tenant, chosen), until

    @reachable
    def profile(self, tenant: str) -> str:
        """The tenant's player-protection profile ("default" until one is set)."""
        found = cast(bytes | None, self.client.hget(self.key(tenant, "settings"), "profile"))
        return _profile(tenant, found)

    @reachable
    def set_profile(self, tenant: str, profile: str) -> None:
        """Set the tenant's player-protection profile."""
        self.client.hset(self.key(tenant, "settings"), "profile", profile)


_DROP_IF_SAME = """
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  return redis.call('HDEL', KEYS[1], ARGV[1])
end
return 0
"""


def _limits(tenant: str, player_id: str, data: bytes) -> Limits:
    """The limits stored for `player_id`; CorruptRecord (naming the player) when they do not
    decode: nothing that needs them goes on until an operator sets them again."""
    try:
        return limits_from(orjson.loads(data))
    except ValueError as error:  # (orjson's JSONDecodeError is one)
        where = {"tenant": tenant, "player_id": player_id}
        log.error("the stored limits of player %s (tenant %s) cannot be read: %s",
                  player_id, tenant, error, extra=where)  # fmt: skip
        raise CorruptRecord(
            f"the limits stored for player {player_id!r} cannot be read; an operator must "
            f"set them again (PUT /v1/players/{player_id}/limits)",
            player_id=player_id,
        ) from error


def _profile(tenant: str, found: bytes | None) -> str:
    """The tenant's profile as stored (the default when none is); CorruptRecord when it names
    none there is."""
    name = found.decode(errors="replace") if found else DEFAULT_PROFILE
    if name not in PROFILES:
        log.error("the stored protection profile of tenant %s cannot be read", tenant,
                  extra={"tenant": tenant})  # fmt: skip
        raise CorruptRecord(
            "the tenant's stored protection profile cannot be read; an operator must set it "
            "again (PUT /v1/protection/profile)"
        )
    return name


def _entry(raw: bytes) -> dict[str, Any] | None:
    """An outbox entry as stored, None when it is not one."""
    try:
        return outbox_entry_from(orjson.loads(raw))
    except ValueError:  # (orjson's JSONDecodeError is one)
        return None


def epoch_ms(at: str) -> int:
    return int(parse_iso(at).timestamp() * 1000) if at else 0
