"""The event store's shortcut on a Redis Cluster through a master's failover (issue 31, the
unavailability per failover): a command for a master that is away reads the map of the slots
again at once and goes straight to the promoted replica with its ``WAIT`` (so the first answer
after a failover can be confirmed, not "outcome unknown"); a stalled master is sent no
command until it answers a ping (sent by a thread of the process's own), every command for its
slots failing at once rather than waiting out the socket timeout; a process whose
``REDIS_URL`` names a killed node reaches the cluster through the other nodes it is given; and
the API's look at the quarantined tables, whose index may be on that master, holds up no
request but the one that reads it."""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

import pytest
import redis
from redis.crc import key_slot
from redis.exceptions import ClusterDownError, RedisClusterException

from service.config import Settings
from service.eventlog.due_index import DueIndex, QuarantineView
from service.eventlog.fail_fast import STALLED
from service.eventlog.redis_py_bypass import ClusterCommands
from service.eventlog.store import StoreUnavailable
from service.infrastructure import rate_limit_storage, store_client
from service.projections.protections import reachable as _reachable
from tests.cluster import LocalCluster, _state_ok, until

KEY = b"failover:{t1}:meta"


def _commands(cluster: LocalCluster) -> tuple[ClusterCommands, Any]:
    settings = Settings(
        redis_url=cluster.url,
        redis_cluster=True,
        queue_redis_url="redis://unused",
        redis_timeout_s=0.5,
    )
    client = store_client(settings)
    return ClusterCommands(client), client


def _has_replica(cluster: LocalCluster, port: int) -> bool:
    info = cluster.client(port, 1.0).info("replication")
    return any(isinstance(v, dict) and v.get("state") == "online" for v in info.values())


def test_the_first_command_after_a_master_is_killed_is_confirmed_on_the_promoted_replica():
    """Two replicas per master: once one is promoted the other follows it, and a command sent
    with its WAIT through a map that still names the killed master is answered there with the
    WAIT's count (before: sent again through redis-py's cluster client without it, so
    unconfirmed and answered 503)."""
    with LocalCluster(replicas=2, node_timeout_ms=1000) as cluster:
        commands, client = _commands(cluster)
        assert commands.call("SET", KEY, b"before") == b"OK"
        master = client.get_node_from_key(KEY).port
        cluster.kill(master)
        slot = key_slot(KEY)
        until(lambda: cluster.slot_owner().get(slot, master) != master, "a replica promoted")
        promoted = cluster.slot_owner()[slot]
        until(lambda: _has_replica(cluster, promoted), "the other replica following it")
        assert client.get_node_from_key(KEY).port == master  # (the map as it was)
        replies = commands.call_many(("SET", KEY, b"after"), ("WAIT", 1, 5000))
        assert replies == [b"OK", 1]
        assert client.get_node_from_key(KEY).port == promoted
        client.close()


def test_a_stalled_master_is_sent_no_command_until_it_answers_a_ping():
    """SIGSTOP of a master: the command that met it unanswered marks it stalled; from then on
    a command for its slots is refused unsent (no request waits on it: a thread of the
    process pings it instead); once a replica is promoted a command is answered there, the
    old master still stopped and still stalled; after SIGCONT the pings are answered and the
    node is no longer stalled, without any command sent to learn it."""
    with LocalCluster(replicas=1, node_timeout_ms=1000) as cluster:
        commands, client = _commands(cluster)
        commands.call("SET", KEY, b"held")
        cluster.client(client.get_node_from_key(KEY).port).execute_command("WAIT", 1, 5000)
        master, slot = client.get_node_from_key(KEY).port, key_slot(KEY)
        name = f"127.0.0.1:{master}"
        cluster.pause(master)
        try:
            with pytest.raises(redis.TimeoutError):
                commands.call("GET", KEY)  # unanswered within the socket timeout
            assert name in STALLED
            try:
                answer = commands.call("GET", KEY)
            except redis.TimeoutError as refused:
                assert "not sent" in str(refused)
            else:  # (only once a replica has taken over)
                assert answer == b"held" and cluster.slot_owner()[slot] != master
            until(lambda: cluster.slot_owner().get(slot, master) != master, "a replica promoted")

            def answered() -> bool:  # from the promoted replica, once the map read says so
                try:
                    return bool(commands.call("GET", KEY) == b"held")
                except redis.TimeoutError as refused:  # (the nodes asked still name the old
                    assert "not sent" in str(refused)  # master: refused, never waited on)
                    return False

            until(answered, "a command answered by the promoted replica", within_s=10)
            assert master in cluster.stopped and name in STALLED
        finally:
            cluster.resume(master)
        until(lambda: name not in STALLED, "the stopped node answering a ping again")
        client.close()


def test_a_process_started_while_its_urls_node_is_killed_reaches_the_cluster_by_the_others():
    """kill -9 of the master ``REDIS_URL`` names, its replica promoted: a new client (a new
    process: an RQ job, a restarted API node, a dispatcher) given the other nodes too
    (``GUTS_REDIS_CLUSTER_NODES``) serves every slot, the rate limiter's storage too; with
    the URL alone it cannot reach the cluster at all (redis-py takes one node from a URL)."""
    with LocalCluster(replicas=1, node_timeout_ms=1000) as cluster:
        named = cluster.ports[0]
        env = {
            "REDIS_URL": cluster.url,
            "GUTS_REDIS_CLUSTER": "1",
            "GUTS_QUEUE_REDIS_URL": "redis://unused",
            "GUTS_REDIS_CLUSTER_NODES": ",".join(f"127.0.0.1:{p}" for p in cluster.ports[1:]),
            "GUTS_RATE_LIMIT_KEYS": "5/minute",
        }
        settings = Settings.from_env(env)
        assert f"127.0.0.1:{named}" in cluster.url
        cluster.kill(named)
        until(lambda: named not in cluster.slot_owner().values(), "a replica promoted")
        client = store_client(settings)
        for n in range(30):  # (keys in every master's slots)
            assert client.set(f"startup:{{k{n}}}", n) is True
        assert client.get("startup:{k7}") == b"7"
        storage = rate_limit_storage(settings)
        assert storage.incr("startup-counter", 60) == 1
        client.close()
        alone = dataclasses.replace(settings, redis_cluster_nodes=())
        with pytest.raises(RedisClusterException, match="cannot be connected"):
            store_client(alone)


class _StalledIndex(DueIndex):
    """A due index whose quarantine list is read once, then held up (as on a master that is
    away) until `go` is set."""

    def __init__(self, client: redis.Redis) -> None:
        super().__init__(client, prefix="stalled")
        self.reads = 0
        self.go = threading.Event()
        self.stored = {"held": {"reason": "corrupt"}}  # (as the index's hash holds them)

    def quarantined(self) -> dict[str, dict[str, Any]]:
        self.reads += 1
        if self.reads > 1:
            self.go.wait(30)
        return dict(self.stored)


def test_a_quarantine_read_held_up_by_a_master_away_holds_up_no_other_request(redis_client):
    """While one request reads the quarantined tables again (the index's master away: until
    a replica takes over), the others are answered from what was read last, and a table this
    process quarantines meanwhile is refused at once (before, each waited for that read: on
    every table, the whole failover)."""
    index = _StalledIndex(redis_client)
    view = QuarantineView(index, ttl_s=0.0)
    assert view.entry("held") is not None  # the first read
    reading = threading.Thread(target=view.entry, args=("other",))
    reading.start()
    until(lambda: index.reads == 2, "the second read under way")
    assert view.entry("held") == {"reason": "corrupt"}  # (would wait for the read)
    assert view.entry("free") is None
    index.stored["new"] = {"reason": "unreadable"}  # quarantined by this process
    view.add("new", {"reason": "unreadable"})
    assert view.entry("new") == {"reason": "unreadable"}
    assert index.reads == 2 and reading.is_alive()
    index.go.set()
    reading.join(30)
    assert view.entry("new") == {"reason": "unreadable"}  # (read back now)
    del index.stored["new"]  # released
    assert view.entry("new") is None


def test_the_cluster_down_during_a_failover_is_the_ledger_unavailable_not_an_error():
    """``CLUSTERDOWN`` (nodes that have marked a master failed, before its replica takes
    over) to the ledger's reads (a deal reads the players' limits there) is a 503, as for the
    event store; it was a 500 (once in a chaos run). Other refusals stay errors."""

    def down() -> None:
        raise ClusterDownError("The cluster is down")

    def refused() -> None:
        raise redis.ResponseError("WRONGTYPE Operation against a key holding the wrong kind")

    with pytest.raises(StoreUnavailable):
        _reachable(down)()
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        _reachable(refused)()


@pytest.mark.parametrize("full_coverage", [True, False], ids=["redis-default", "recommended"])
def test_a_lost_master_stops_the_other_masters_tables_only_under_full_coverage(full_coverage):
    """``cluster-require-full-coverage`` (docs/operations.md sets it to no): while a lost
    master's slots have no master (in production, from its failure's detection until its
    replica is promoted; here it has no replica, so the window stays open), Redis's default
    makes every node refuse every command, and a table on another master answers as the
    store being unavailable (503); with no, that table is served as if nothing happened."""
    from service.eventlog.redis_store import RedisEventStore
    from service.rules.decide import CreateTable, SeatPlayer
    from service.rules.ruleset import resolve_ruleset
    from service.tables import Tables

    with LocalCluster(node_timeout_ms=1000, full_coverage=full_coverage) as cluster:
        client = store_client(
            Settings(redis_url=cluster.url, redis_cluster=True, queue_redis_url="redis://unused")
        )
        store = RedisEventStore(client)
        tables = Tables(store)
        victim = cluster.master_ports[0]
        table_id = next(
            f"t-{n}"
            for n in range(100)
            if client.get_node_from_key(store.meta_key(f"t-{n}")).port != victim
        )
        rules = resolve_ruleset("three-card")
        tables.execute(table_id, CreateTable(table_id, rules, b"s" * 32, "casino-a"), create=True)
        cluster.kill(victim)
        survivor = cluster.client(next(p for p in cluster.master_ports if p != victim), 1.0)
        until(lambda: _failed(survivor, victim), "the killed master marked as failed")
        if full_coverage:
            until(lambda: not _state_ok(survivor), "the cluster down")
            with pytest.raises(StoreUnavailable):
                tables.execute(table_id, SeatPlayer("p0", 50))
        else:
            tables.execute(table_id, SeatPlayer("p0", 50))
            assert store.load(table_id).version == 2


def _failed(client: Any, port: int) -> bool:
    """Whether the node `client` talks to has marked the node on `port` as failed (FAIL, not
    only suspected: PFAIL)."""
    nodes = client.execute_command("CLUSTER NODES")  # redis-py parses it: address -> fields
    return any(
        address.startswith(f"127.0.0.1:{port}") and "fail" in node["flags"].split(",")
        for address, node in nodes.items()
    )
