"""The dispatcher's every duty on a real Redis Cluster with a replica per master (issue 31):
`guts dispatch` on the cluster (RQ on a plain Redis, the archive in PostgreSQL) with tables in
every master's slots acts on their deadlines, repairs a lost due index (the repair records
many tables in one script call: a pipeline of scripts is refused on a cluster), follows the
logs into the ledger and the archive, and carries on when a master is killed and its
address disappears (its replica promoted)."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from redis.cluster import RedisCluster

from service.archive.archive import Archive
from service.eventlog.due_index import DueIndex
from service.eventlog.redis_store import RedisEventStore
from service.eventlog.store import StoreUnavailable
from service.eventlog.table_list import TableList
from service.rules.decide import CreateTable, Deal, SeatPlayer, VoidHand
from service.rules.ruleset import resolve_ruleset
from service.tables import Tables
from tests.cluster import LocalCluster, until
from tests.test_cli import _env

PREFIX = "dispatch"


@pytest.fixture
def replicated() -> Iterator[LocalCluster]:
    """Three masters with a replica each; a master unreachable for 1 s is replaced."""
    with LocalCluster(replicas=1, node_timeout_ms=1000) as cluster:
        yield cluster


def _retried(action: Callable[[], object], within_s: float = 30) -> None:
    """`action`, tried again while the cluster is failing over."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            action()
            return
        except (StoreUnavailable, redis.RedisError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _dispatch(url: str, queues: str, archive: str, logs: Path) -> subprocess.Popen[bytes]:
    """`guts dispatch` on the cluster at `url` (RQ on `queues`), its output in `logs`."""
    env = _env(
        REDIS_URL=url,
        GUTS_REDIS_CLUSTER="1",
        GUTS_QUEUE_REDIS_URL=queues,
        GUTS_DATABASE_URL=archive,
        GUTS_KEY_PREFIX=PREFIX,
    )
    with logs.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "service.cli", "dispatch"], env=env, stdout=out, stderr=out
        )


def test_the_dispatcher_runs_every_duty_on_a_cluster_through_a_failover(
    replicated, redis_url, empty_archive, tmp_path
):
    client = RedisCluster.from_url(replicated.url)
    store = RedisEventStore(client, prefix=PREFIX)
    index = DueIndex(client, prefix=PREFIX)
    tables = Tables(store, index=index, listing=TableList(client, prefix=PREFIX))
    rules = resolve_ruleset("three-card", {"decision_timeout_s": 1})
    ids, slots_of = [], {}
    for n in range(60):  # until every master holds two tables
        table_id = f"c-{n}"
        owner = client.get_node_from_key(store.meta_key(table_id)).name
        if len(slots_of.setdefault(owner, [])) < 2:
            slots_of[owner].append(table_id)
            ids.append(table_id)
    assert len(slots_of) == 3 and len(ids) == 6
    for table_id in ids:
        tables.execute(table_id, CreateTable(table_id, rules, b"s" * 32, "casino-a"), create=True)
        for seat in range(3):
            tables.execute(table_id, SeatPlayer(f"p{seat}", 50))

    def deal_all() -> None:
        for table_id in ids:
            if tables.load(table_id).hand is not None:  # in showdown: over, the next one
                _retried(lambda t=table_id: tables.execute(t, VoidHand("next")))
            _retried(lambda t=table_id: tables.execute(t, Deal(b"d" * 32)))
        # The index lost every record (as records lost to crashes): the repair finds them.
        _retried(lambda: client.delete(index.index_key, index.versions_key))

    def all_acted_on() -> bool:
        return all(tables.load(t).hand is None or tables.load(t).hand.phase != "declaring"
                   for t in ids)  # fmt: skip

    logs = tmp_path / "dispatch.log"
    dispatcher = _dispatch(replicated.url, redis_url, empty_archive, logs)
    stack = contextlib.ExitStack()
    try:
        deal_all()
        until(all_acted_on, "every deadline acted on")
        archive = stack.enter_context(contextlib.closing(Archive.open(empty_archive, size=1)))

        def followed() -> bool:  # the archiver (which keeps the ledger too) caught up
            positions = archive.positions([("casino-a", t) for t in ids])
            if positions != [store.load(t).version for t in ids]:
                return False
            return all(
                [e.data for e in archive.read(t, 0, position, None)]
                == [e.data for e in store.read(t)]
                for t, position in zip(ids, positions, strict=True)
            )

        until(followed, "the archive holds every table's log")
        # A master killed: its address disappears, its replica takes its slots.
        victim = client.get_node_from_key(store.meta_key(ids[0])).port
        promoted = replicated.replica_of(victim)
        replicated.kill(victim)
        until(lambda: promoted in replicated.masters(), "the replica promoted")
        replicated.wait_ok()
        deal_all()
        until(all_acted_on, "every deadline acted on after the failover")
        until(followed, "the archive holds every table's log after the failover")
        assert dispatcher.poll() is None, logs.read_text()
        assert "Traceback" not in logs.read_text(), logs.read_text()
    finally:
        dispatcher.terminate()
        dispatcher.wait(10)
        stack.close()
        client.close()


def test_the_dispatcher_waits_out_a_cluster_that_is_down(redis_url, empty_archive, tmp_path):
    """A master lost with no replica to take its slots: every node answers CLUSTERDOWN. The
    dispatcher's clock and its webhook and wallet threads wait it out (none exits), and
    deadlines are acted on again once the master is back."""
    with LocalCluster(node_timeout_ms=1000) as cluster:
        client = RedisCluster.from_url(cluster.url)
        store = RedisEventStore(client, prefix=PREFIX)
        index = DueIndex(client, prefix=PREFIX)
        tables = Tables(store, index=index, listing=TableList(client, prefix=PREFIX))
        port_of = lambda key: client.get_node_from_key(key).port  # noqa: E731
        busy = {port_of(index.index_key), port_of(f"{PREFIX}:vitals:dispatchers")}
        victim = next(port for port in cluster.master_ports if port not in busy)
        table_id = next(
            f"down-{n}" for n in range(100) if port_of(store.meta_key(f"down-{n}")) != victim
        )
        rules = resolve_ruleset("three-card", {"decision_timeout_s": 1})
        tables.execute(table_id, CreateTable(table_id, rules, b"s" * 32, "casino-a"), create=True)
        for seat in range(3):
            tables.execute(table_id, SeatPlayer(f"p{seat}", 50))
        logs = tmp_path / "dispatch.log"
        dispatcher = _dispatch(cluster.url, redis_url, empty_archive, logs)
        try:
            cluster.kill(victim)
            for who in ("Redis cannot serve", "webhooks: Redis cannot serve"):
                until(
                    lambda w=who: f"{w} (ClusterDownError)" in logs.read_text(),
                    f"{who}: the cluster down met and waited out",
                )
            cluster.restart(victim)
            cluster.wait_ok()
            _retried(lambda: tables.execute(table_id, Deal(b"d" * 32)))
            until(lambda: tables.load(table_id).hand.phase != "declaring", "the deadline acted on")
            assert dispatcher.poll() is None, logs.read_text()
            assert "uncaught" not in logs.read_text(), logs.read_text()
        finally:
            dispatcher.terminate()
            dispatcher.wait(10)
            client.close()
