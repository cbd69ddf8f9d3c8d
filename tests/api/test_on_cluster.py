"""The API suite on a real 3-master Redis Cluster: these modules' tests run again here, against
a server whose store is the cluster (``GUTS_REDIS_CLUSTER``: every table's keys under one hash
tag, every script on one slot), with RQ's queues on the session's plain Redis
(``GUTS_QUEUE_REDIS_URL``) and the archive in the session's PostgreSQL. The fixtures below
replace the plain-Redis ones for the tests collected in this module (the clients' fixtures,
``api``, ``casino_a`` and the rest, then use them)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from service.config import Settings

# The tests that run here again (imported names are collected in this module): every API
# module that plays through a server (test_bodies and test_observability run in-process or
# without Redis; the rest of test_stream tampers with the plain Redis).
from tests.api.test_authorization import *  # noqa: F403
from tests.api.test_authorization import Kept
from tests.api.test_betting import *  # noqa: F403
from tests.api.test_client_seeds import *  # noqa: F403
from tests.api.test_commands import *  # noqa: F403
from tests.api.test_end_table import *  # noqa: F403
from tests.api.test_games import *  # noqa: F403
from tests.api.test_leaks import *  # noqa: F403
from tests.api.test_ledger import *  # noqa: F403
from tests.api.test_limits import *  # noqa: F403
from tests.api.test_stream import (  # noqa: F401
    test_a_stream_resumes_at_every_position_without_gap_or_duplicate,
    test_every_viewer_streams_exactly_what_events_shows_at_that_moment,
    test_many_subscribers_on_many_tables_each_get_their_own_table_only,
    test_the_table_list_pages_newest_first,
)
from tests.api.test_tenants import *  # noqa: F403
from tests.api.test_validation import *  # noqa: F403
from tests.api.test_variant_games import *  # noqa: F403
from tests.apiclient import (
    AUDITOR,
    AUDITOR_A,
    OPERATOR,
    REGULATOR,
    TENANT_A,
    TENANT_B,
    Api,
    _serve,
)


def _cluster_settings(
    cluster: Any, queues: str, database: str, sandbox: bool = True, **keys: Any
) -> Settings:
    return Settings(
        redis_url=cluster.url,
        redis_cluster=True,
        queue_redis_url=queues,
        database_url=database,
        sandbox=sandbox,
        token_secret="test-token-secret",
        key_prefix="guts",
        allow_private_urls=True,  # (the tests' wallets and receivers are on 127.0.0.1)
        **keys,
    )


@pytest.fixture(scope="module")
def sandbox_url(
    redis_cluster: Any, redis_url: str, database_url: str, pytestconfig: pytest.Config
) -> Iterator[str]:
    keys = {"operator_keys": (OPERATOR,), "auditor_keys": (AUDITOR,)}
    yield from _serve(
        _cluster_settings(redis_cluster, redis_url, database_url, **keys), pytestconfig
    )


@pytest.fixture(scope="module")
def production_url(
    redis_cluster: Any, redis_url: str, database_url: str, pytestconfig: pytest.Config
) -> Iterator[str]:
    keys = {"operator_keys": (OPERATOR,), "auditor_keys": (AUDITOR,)}
    settings = _cluster_settings(redis_cluster, redis_url, database_url, sandbox=False, **keys)
    yield from _serve(settings, pytestconfig)


@pytest.fixture(scope="module")
def tenants_url(
    redis_cluster: Any, redis_url: str, database_url: str, pytestconfig: pytest.Config
) -> Iterator[str]:
    keys = {
        "operator_keys": (f"casino-a:{TENANT_A}", f"casino-b:{TENANT_B}"),
        "auditor_keys": (f"*:{REGULATOR}", f"casino-a:{AUDITOR_A}"),
    }
    yield from _serve(
        _cluster_settings(redis_cluster, redis_url, database_url, **keys), pytestconfig
    )


@pytest.fixture
def redis_client(cluster_client: Any, redis_url: str) -> Any:
    """The cluster, every master flushed (and the queues' Redis too)."""
    import redis

    queues = redis.Redis.from_url(redis_url)
    queues.flushall()
    queues.close()
    return cluster_client


@pytest.fixture
def kept(redis_cluster: Any, redis_url: str) -> Iterator[Any]:
    """The authorization matrix's Redis (see `Kept`): every master, and the queues' Redis."""
    import redis

    nodes = [redis.Redis(port=port) for port in redis_cluster.master_ports]
    nodes.append(redis.Redis.from_url(redis_url))
    try:
        yield Kept(nodes)
    finally:
        for node in nodes:
            node.close()


def test_the_server_here_keeps_its_tables_on_every_master(api: Api, redis_cluster: Any) -> None:
    import redis

    for _ in range(8):
        api.table("three-card")
    holding = 0
    for port in redis_cluster.ports:
        node = redis.Redis(port=port)
        holding += bool(node.keys("guts:{*}:meta"))
        node.close()
    assert holding >= 2  # (8 random table ids: all on one master is a 1-in-2,000 chance)
