"""Acknowledged means replicated (issue 31): a write is confirmed when ``WAIT numreplicas
timeout``, sent after it on the same connection, says that many replicas hold it (and all
that came before it on that master: replication is one ordered stream). The event store sends
its append and the ``WAIT`` together, in one round trip (`RedisEventStore`, with
``min_replicas``); this module holds what both of its paths share: redis-py's pipeline for the
plain path (`pipelined`), and what a cluster answers when a table's slot has moved
(`REROUTED`, `rerouted`).

Over a Redis Cluster the commands go to the master of the first one's key; a master that
redirects them (a failover, a resharding) has not run them: the first is sent again through
the cluster client, which follows the redirect and refreshes its map of the slots, and the
``WAIT``'s reply is unknown (None) since it would have to follow that write on the same
connection: the caller answers "outcome unknown", and the client's retry (same
Idempotency-Key) is confirmed on the new master.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis
from redis.cluster import RedisCluster
from redis.exceptions import (
    AskError,
    ClusterDownError,
    MovedError,
    SlotNotCoveredError,
    TryAgainError,
)

from service.eventlog.store import NotReplicated, StoredEvent

__all__ = [
    "REROUTED",
    "Replicated",
    "pipelined",
    "plain",
    "replicated_log",
    "replicated_upto",
    "rerouted",
]

REROUTED = (
    redis.ConnectionError,
    redis.TimeoutError,
    MovedError,
    AskError,
    TryAgainError,
    ClusterDownError,
    SlotNotCoveredError,
)
"""What a node answers when its slot moved or it went away (a resharding, a failover)."""

CallMany = Callable[..., list[Any]]


def rerouted(cluster: RedisCluster, commands: tuple[tuple[Any, ...], ...]) -> list[Any]:
    """The first of `commands` through the cluster client (which finds the slot's master),
    the others' replies unknown (None)."""
    first = cluster.execute_command(*commands[0])  # type: ignore[no-untyped-call]
    return [first, *[None] * (len(commands) - 1)]


def pipelined(client: redis.Redis) -> CallMany:
    """``call_many`` through redis-py's public pipeline: the commands sent together on one
    connection (on a cluster, one of the master that holds the first one's key), every reply
    read; an error reply raises then."""

    def call_many(*commands: tuple[Any, ...]) -> list[Any]:
        target = client
        if isinstance(client, RedisCluster):
            first = commands[0]
            key = first[3] if first[0] == "EVALSHA" else first[1]
            node = client.get_node_from_key(key)
            target = client.get_redis_connection(node)
        try:
            with target.pipeline(transaction=False) as pipe:
                for command in commands:
                    pipe.execute_command(*command)  # type: ignore[no-untyped-call]
                replies = pipe.execute(raise_on_error=False)
            for reply in replies:
                if isinstance(reply, Exception):
                    raise reply
        except REROUTED:
            if not isinstance(client, RedisCluster):
                raise
            return rerouted(client, commands)
        return list(replies)

    return call_many


def plain(client: redis.Redis) -> Replicated:
    """Scripts and commands on `client` through redis-py's public API, no replica asked (a
    store given no event store's `commands`)."""
    return Replicated(client, client.execute_command, pipelined(client))


class Replicated:
    """Scripts run on one store's Redis, confirmed on `min_replicas` replicas (0: none
    asked) within `timeout_ms`: `call` runs one command, `call_many` several on one
    connection (the shortcut's or `pipelined`)."""

    def __init__(
        self,
        client: redis.Redis,
        call: Callable[..., Any],
        call_many: CallMany,
        min_replicas: int = 0,
        timeout_ms: int = 200,
    ) -> None:
        self.client = client
        self.call = call
        self.call_many = call_many
        self.min_replicas = min_replicas
        self.timeout_ms = timeout_ms

    def run(self, script: Any, keys: list[Any], args: list[Any]) -> tuple[Any, int | None]:
        """The reply of `script` (a redis-py Script) on `keys` and `args`, and, with
        `min_replicas`, how many replicas hold what it wrote (``WAIT``, sent with it on the
        same connection; None: unknown); the script is loaded first when Redis lost it (a
        restart)."""
        command = ("EVALSHA", script.sha, len(keys), *keys, *args)
        for attempt in (1, 2, 3):
            try:
                if not self.min_replicas:
                    return self.call(*command), None
                wait = ("WAIT", self.min_replicas, self.timeout_ms)
                reply, acked = self.call_many(command, wait)
                return reply, None if acked is None else int(acked)
            except redis.exceptions.NoScriptError:  # a restarted, flushed or promoted Redis
                if attempt == 3:  # (twice: once where the map said, once where a failover moved it)
                    raise
                self._load(script, keys[0])
        raise AssertionError("unreachable")

    def _load(self, script: Any, key: Any) -> None:
        """Load `script` where `key` is: on a cluster, the key's master as the client maps it
        now (a replica promoted in a failover lacks the scripts: Redis does not replicate
        ``SCRIPT LOAD``, and redis-py's cluster client sends it to the masters of a map that
        may predate the failover)."""
        target = self.client
        if isinstance(target, RedisCluster):
            target = target.get_redis_connection(target.get_node_from_key(key))
        target.script_load(script.script)

    def check(self, table_id: str, version: int, acked: int | None) -> None:
        """NotReplicated unless `acked` replicas are enough (or none are asked)."""
        if self.min_replicas and (acked is None or acked < self.min_replicas):
            raise NotReplicated(table_id, version, acked, self.min_replicas)


_CONFIRM_LUA = (Path(__file__).parent / "lua" / "confirm.lua").read_text()


def replicated_log(store: Any) -> Callable[[str, StoredEvent], bool] | None:
    """For a follower (`service.projections.follower`) of a `RedisEventStore` that asks for
    replicas (None for one that does not): whether the replicas hold a table's log up to an
    event as it was read (`last`, the last of a batch). One round trip: the event read again
    on its table's master, a write there (its mark, expiring), then ``WAIT`` on the same
    connection; confirmed when the master holds that very event and the replicas acknowledge
    the write (so everything before it). A batch not confirmed (a replica behind or down, the
    master failing over, an event a failover lost) is not applied: nothing unreplicated
    reaches the archive, the ledger or the webhooks, and a failover that loses a suffix
    leaves none of them ahead of the log."""
    held = _held_by_replicas(store)
    if held is None:
        return None

    def confirmed(table_id: str, last: StoredEvent) -> bool:
        reply, enough = held(table_id, last.version)
        return enough and reply == last.data

    return confirmed


def replicated_upto(store: Any) -> Callable[[str, int], bool] | None:
    """For a reader that hands out only what the replicas hold (the live feed, with a
    `RedisEventStore` that asks for replicas; None for one that does not): whether they hold a
    table's log up to `version`, as its master holds it now (the same round trip as
    `replicated_log`). Events read after it said so, up to that version, are the replicas'
    too (a failover that promotes one of them keeps them)."""
    held = _held_by_replicas(store)
    if held is None:
        return None

    def confirmed(table_id: str, version: int) -> bool:
        reply, enough = held(table_id, version)
        return enough and bool(reply)

    return confirmed


def _held_by_replicas(store: Any) -> Callable[[str, int], tuple[Any, bool]] | None:
    """The confirmation's round trip for `store` (None when it asks for no replicas): the
    event at a version as its table's master holds it (None: none) and whether enough
    replicas acknowledged the mark written after it."""
    replication: Replicated | None = getattr(store, "replication", None)
    if replication is None or not replication.min_replicas:
        return None
    script = store.client.register_script(_CONFIRM_LUA)

    def held(table_id: str, version: int) -> tuple[Any, bool]:
        events = store.events_key(table_id)
        keys = [events, events[: -len(b"events")] + b"confirmed"]
        reply, acked = replication.run(script, keys, [version])
        return reply, acked is not None and acked >= replication.min_replicas

    return held
