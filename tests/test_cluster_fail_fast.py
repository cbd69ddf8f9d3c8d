"""The API's cluster client on a stopped master (issue 31): the requests that reach Redis
through redis-py's cluster client (the due index's record after an append, the ledger's
limits before a deal, the rate limiter's counters) wait on a stalled master no longer than
the command that found it stalled: the others are refused unsent at once (503 for a request)
until the node answers a ping from the process again, so they no longer fill a web worker's
two places until a replica takes over, and every other master is served meanwhile."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis
from limits import parse

from service.api.rate_limits import RateLimited, RateLimits, _name
from service.application.access import Caller
from service.config import Settings
from service.eventlog.due_index import DueIndex
from service.eventlog.fail_fast import STALLED
from service.eventlog.redis_store import RedisEventStore
from service.eventlog.store import StoreUnavailable
from service.infrastructure import store_client
from service.projections.ledger import LedgerStore
from service.rules.views import OPERATOR as OPERATOR_ROLE
from tests.apiclient import OPERATOR, Api, _serve
from tests.cluster import LocalCluster, until


def _settings(cluster: LocalCluster, **more: Any) -> Settings:
    """Settings on `cluster` (a socket timeout of 2 s unless `more` says otherwise)."""
    given: dict[str, Any] = {"queue_redis_url": "redis://unused", "redis_timeout_s": 2.0}
    return Settings(redis_url=cluster.url, redis_cluster=True, **{**given, **more})


def _api_settings(cluster: LocalCluster, queue_url: str, timeout_s: float) -> Settings:
    """Settings for an API on `cluster` (a sandbox, the tests' operator key)."""
    return _settings(
        cluster,
        queue_redis_url=queue_url,
        redis_timeout_s=timeout_s,
        operator_keys=(OPERATOR,),
        sandbox=True,
        token_secret="test-token-secret",
    )


def _key(client: redis.Redis, on: Callable[[int], bool], key: Callable[[int], str]) -> str:
    """The first of key(0), key(1), ... whose slot's master's port passes `on`."""
    return next(key(i) for i in range(10_000) if on(client.get_node_from_key(key(i)).port))  # type: ignore[attr-defined]


def test_a_stopped_master_holds_no_request_once_one_found_it_stalled():
    """SIGSTOP of the due index's master (no replica takes over in the test): the record
    unanswered marks it stalled; from then on every record and the ledger's limits read (a
    tenant whose ledger is on that master) are refused unsent at once (the ledger's is the
    store unavailable: a 503), while a key on another master is answered; once the master is
    back it answers the process's pings and is used again, and the refused records were
    never applied. Before, each waited out the socket timeout up to 11 times; then one
    request at a time was sent to learn whether it answered again, and waited."""
    with LocalCluster(node_timeout_ms=60000) as cluster:
        settings = _settings(cluster)
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
            began = time.monotonic()
            for table in ("b", "c"):
                with pytest.raises(redis.TimeoutError, match="not sent"):
                    index.record(table, 1, 400.0)
            with pytest.raises(StoreUnavailable, match="not sent"):
                ledger.limits(tenant, ["p1"])
            assert client.set(elsewhere, b"served") is True
            assert time.monotonic() - began < settings.redis_timeout_s  # (none waited on it)
            assert name in STALLED
        finally:
            cluster.resume(master)
        until(lambda: name not in STALLED, "the node answering a ping")
        assert index.record("d", 1, 500.0)  # answered again
        assert index.due_at("b") is None and index.due_at("c") is None  # never applied
        assert index.due_at("a") == 200.0  # (the unanswered one was sent: applied on resume)
        client.close()


def _pause_and_mark(cluster: LocalCluster, port: int, mark: Callable[[], object]) -> str:
    """SIGSTOP of `port`, then `mark()` (something sent to it, unanswered: it is stalled)."""
    name = f"127.0.0.1:{port}"
    cluster.pause(port)
    mark()
    until(lambda: name in STALLED, f"{name} marked stalled")
    return name


def test_a_stopped_masters_tables_answer_503_at_once_and_the_others_are_served(
    redis_url: str, pytestconfig: pytest.Config
) -> None:
    """The API on a cluster whose master is SIGSTOPped (no replica takes over here): once one
    request has found it stalled (it waits the socket timeout, 3 s here), every request for
    a table on it answers 503 with Retry-After at once, a read or a command, while a table on
    another master is read and played (a player seated); after SIGCONT its table is served
    again."""
    with LocalCluster(node_timeout_ms=60000) as cluster:
        settings = _api_settings(cluster, redis_url, 3.0)
        served = _serve(settings, pytestconfig)  # (the server stops when it is closed)
        api = Api(next(served))
        probe = store_client(settings)
        on = lambda table: probe.get_node_from_key(f"guts:{{{table}}}:meta").port  # type: ignore[attr-defined]  # noqa: E731
        tables = [api.table() for _ in range(12)]
        # (not the tenant's ledger's master: every seat and deal reads its limits there, so
        # its failover refuses them on every table: docs/chaos.md)
        ledger = LedgerStore(probe, prefix="guts").key("default", "limits")
        stopped = next(on(t) for t in tables if on(t) != probe.get_node_from_key(ledger).port)  # type: ignore[attr-defined]
        here = next(t for t in tables if on(t) == stopped)
        there = next(t for t in tables if on(t) != stopped)
        name = _pause_and_mark(cluster, stopped, lambda: api.get(f"/v1/tables/{here}"))
        try:
            began = time.monotonic()
            answers = [api.get(f"/v1/tables/{here}") for _ in range(5)]
            answers.append(api.post(f"/v1/tables/{here}/players", {"player_id": "p", "buy_in": 50}))
            held = time.monotonic() - began
            assert [a.status_code for a in answers] == [503] * 6, answers[-1].text
            assert all(a.headers.get("Retry-After") for a in answers)
            assert held < settings.redis_timeout_s  # (6 requests: none waited on the node)
            assert api.get(f"/v1/tables/{there}").status_code == 200
            seated = api.post(f"/v1/tables/{there}/players", {"player_id": "p0", "buy_in": 50})
            assert seated.status_code == 201, seated.text
        finally:
            cluster.resume(stopped)
        until(lambda: name not in STALLED, "the node answering a ping")
        assert api.get(f"/v1/tables/{here}").status_code == 200
        assert api.seat(here, "p0")["seat"] == 0
        probe.close()
        served.close()


def test_a_rate_limit_whose_counter_is_on_a_stopped_master_admits_commands_at_once():
    """Per-key limits (`GUTS_RATE_LIMIT_KEYS`) while the master of a key's counter is
    stopped: the request that finds it stalled waits the socket timeout and is admitted;
    the others are admitted at once, uncounted (the limit fails open: no command held or
    failed by it), a failed authentication counted there is refused (503: nothing a guesser
    can use); after SIGCONT the counter counts again and the limit holds."""
    with LocalCluster(node_timeout_ms=60000) as cluster:
        settings = _settings(
            cluster, rate_limit_keys="3/minute", rate_limit_auth_failures="5/minute"
        )
        limits = RateLimits(settings)
        caller, key = Caller(OPERATOR_ROLE, tenant="default"), f"Bearer {OPERATOR}"
        limits.admit(caller, key, "GET")  # counted: 1 of 3
        probe = store_client(settings)
        storage = limits.limiter.storage  # type: ignore[union-attr]
        counter = storage.prefixed_key(limits.keys.key_for("key", _name(key)))  # type: ignore[union-attr]
        stopped = probe.get_node_from_key(counter).port  # type: ignore[attr-defined]
        address = next(f"10.0.0.{n}" for n in range(256) if _auth_on(probe, storage, n, stopped))
        mark = lambda: limits.admit(caller, key, "GET")  # noqa: E731
        name = _pause_and_mark(cluster, stopped, mark)
        try:
            began = time.monotonic()
            for _ in range(10):  # over the limit, were they counted
                assert limits.admit(caller, key, "GET") is None
            with pytest.raises(StoreUnavailable):
                limits.failed_authentication(address)
            assert time.monotonic() - began < settings.redis_timeout_s
        finally:
            cluster.resume(stopped)
        until(lambda: name not in STALLED, "the node answering a ping")
        # 2 of 3: the one that found it stalled was sent, and counted when it went on
        limits.admit(caller, key, "GET")  # 3 of 3
        with pytest.raises(RateLimited):
            limits.admit(caller, key, "GET")
        probe.close()


def _auth_on(probe: redis.Redis, storage: object, n: int, port: int) -> bool:
    """Whether the failed authentications of address 10.0.0.`n` are counted on `port`."""
    item = parse("5/minute")
    counter = storage.prefixed_key(item.key_for("auth-failures", f"10.0.0.{n}"))  # type: ignore[attr-defined]
    return bool(probe.get_node_from_key(counter).port == port)  # type: ignore[attr-defined]


def test_a_cluster_none_of_whose_nodes_answers_is_unavailable_never_an_error(
    redis_url: str, pytestconfig: pytest.Config
) -> None:
    """Every node of the cluster killed: redis-py's cluster client, mapping the cluster again,
    finds no node that answers and raises its own RedisClusterException ("Redis Cluster cannot
    be connected"), which is not a RedisError. The stores make it their unavailability, as
    for a node away (the ledger's limits and the event store's reads raised it as it was: a
    500 once in a CI chaos run), and every request answers 503 with Retry-After, a read or a
    command, at the table or at the ledger."""
    with LocalCluster(node_timeout_ms=60000) as cluster:
        settings = _api_settings(cluster, redis_url, 0.5)
        served = _serve(settings, pytestconfig)  # (the server stops when it is closed)
        api = Api(next(served))
        table = api.table()
        api.seat(table, "p1")
        api.seat(table, "p2")
        stores = []
        for fail_fast in (False, True):
            client = store_client(settings, fail_fast=fail_fast)
            ledger = LedgerStore(client, prefix="guts")
            events = RedisEventStore(client, prefix="guts")
            ledger.limits("default", ["p1"])
            events.read(table)
            stores += [functools.partial(ledger.limits, "default", ["p1"])]
            stores += [functools.partial(events.read, table)]
        for port in cluster.live():
            cluster.kill(port)
        for read in stores:
            for _ in range(2):  # (the first meets a node away, the next the client's new map)
                with pytest.raises(StoreUnavailable):
                    read()
        requests = [
            ("GET", f"/v1/tables/{table}", None),
            ("POST", f"/v1/tables/{table}/players", {"player_id": "p3", "buy_in": 50}),
            ("POST", f"/v1/tables/{table}/deal", {}),
            ("GET", f"/v1/ledger?table_id={table}", None),
            ("GET", "/v1/players/p1/limits", None),
            ("POST", "/v1/tables", {"preset": "three-card"}),
        ]
        for _ in range(2):
            answers = [api.call(method, path, body) for method, path, body in requests]
            assert [a.status_code for a in answers] == [503] * len(answers), [
                a.text for a in answers
            ]
            assert all(a.headers.get("Retry-After") for a in answers)
