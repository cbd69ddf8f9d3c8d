"""The API's cluster client on a stopped master (issue 31): the requests that reach Redis
through redis-py's cluster client (the due index's record after an append, the ledger's
limits before a deal) wait on a stalled master one at a time; the others are refused unsent
at once (503 for a request), so they no longer fill a web worker's two places until a
replica takes over, and every other master is served meanwhile."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
import redis

from service.config import Settings
from service.eventlog.due_index import DueIndex
from service.eventlog.fail_fast import STALLED
from service.eventlog.store import StoreUnavailable
from service.infrastructure import store_client
from service.projections.ledger import LedgerStore
from tests.cluster import LocalCluster


def _until(done: Callable[[], bool], what: str, within_s: float = 30) -> None:
    deadline = time.monotonic() + within_s
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within_s} s: {what}")
        time.sleep(0.01)


def _key(client: redis.Redis, on: Callable[[int], bool], key: Callable[[int], str]) -> str:
    """The first of key(0), key(1), ... whose slot's master's port passes `on`."""
    return next(key(i) for i in range(10_000) if on(client.get_node_from_key(key(i)).port))  # type: ignore[attr-defined]


def test_a_stopped_master_holds_one_request_at_a_time_the_others_are_refused_unsent():
    """SIGSTOP of the due index's master (no replica takes over in the test): the record
    unanswered marks it; while one record waits on it, another record and the ledger's limits
    read (a tenant whose ledger is on that master) are refused unsent (the ledger's is the
    store unavailable: a 503), a key on another master is answered, all before the one sent
    is answered or times out; once the master is back it answers again, and the refused
    record was never applied. Before, each waited out the socket timeout up to 11 times."""
    with LocalCluster(node_timeout_ms=60000) as cluster:
        settings = Settings(
            redis_url=cluster.url,
            redis_cluster=True,
            queue_redis_url="redis://unused",
            redis_timeout_s=2.0,
        )
        client = store_client(settings, fail_fast=True)
        index, ledger = DueIndex(client, prefix="ff"), LedgerStore(client, prefix="ff")
        master = client.get_node_from_key(index.index_key).port  # type: ignore[attr-defined]
        tenant_key = _key(client, lambda p: p == master, lambda i: ledger.key(f"t{i}", "limits"))
        tenant = tenant_key.split("%ledger:")[1].split("}")[0]
        elsewhere = _key(client, lambda p: p != master, lambda i: f"ff:other{i}")
        assert index.record("a", 1, 100.0)
        ledger.limits(tenant, ["p1"])  # (its connections made)
        name = f"127.0.0.1:{master}"
        cluster.pause(master)
        try:
            with pytest.raises(redis.TimeoutError):
                index.record("a", 2, 200.0)  # unanswered: the node is marked
            failed: list[Exception] = []

            def waits() -> None:
                try:
                    index.record("b", 1, 300.0)
                except redis.RedisError as error:
                    failed.append(error)

            waiting = threading.Thread(target=waits)
            waiting.start()
            _until(lambda: STALLED.probing(name) or not waiting.is_alive(), "a record sent")
            with pytest.raises(redis.TimeoutError, match="not sent"):
                index.record("c", 1, 400.0)
            with pytest.raises(StoreUnavailable, match="not sent"):
                ledger.limits(tenant, ["p1"])
            assert client.set(elsewhere, b"served") is True
            assert waiting.is_alive()  # (all of the above before the one sent came back)
        finally:
            cluster.resume(master)
        waiting.join(30)
        assert index.record("d", 1, 500.0)  # answered again
        assert name not in STALLED
        assert index.due_at("c") is None  # refused unsent: never applied
        assert index.due_at("a") == 200.0  # (the unanswered one was sent: applied on resume)
        client.close()
