"""Fixtures shared by the whole suite.

A private redis-server (see ``service.processes.redis_server``) is started once per session on a
free port, never the machine's 6379, and stopped at the end even when tests fail.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from service.processes.redis_server import RedisServer

pytest_plugins = ["tests.apiclient", "tests.leaks"]

# The suite starts some 200 Python processes (`guts serve` and its children, dispatchers,
# workers, the chaos harness's nodes) and one per xdist worker. Where PYTHONDONTWRITEBYTECODE
# is set, as in many container images and on this project's machines, no `.pyc` of the
# project's own modules is ever written, so every one of them compiled every module of
# `service/` from source again, and every xdist worker rewrote every test module's asserts
# again: a `guts serve` started and stopped took 4.13-4.17 CPU-s and 2.13-2.15 s to /readyz
# without them, 3.47-3.55 CPU-s and 1.76-1.79 s with them (2026-12-06, three pairs). So the
# suite writes them (in `__pycache__/`, ignored by git), for itself, the workers it starts
# (xdist's, started after this module is loaded) and everything they start.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False
# The tests' wallets and webhook receivers listen on 127.0.0.1, where a service calls nobody
# unless allowed (service.projections.wallet_http): every `guts` process the suite starts
# inherits the permission (the in-process servers' Settings say so themselves).
os.environ["GUTS_ALLOW_PRIVATE_URLS"] = "1"


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """A redis-server for the whole session (no persistence, temporary directory)."""
    with RedisServer() as server:
        assert server.port != 6379
        yield server


@pytest.fixture(scope="session")
def database_url() -> Iterator[str]:
    """A fresh, migrated PostgreSQL database for the whole session (tests/postgres.py)."""
    from tests.postgres import fresh_database

    with fresh_database() as url:
        yield url


@pytest.fixture(scope="session")
def archive_admin(database_url: str) -> Iterator[Any]:
    """One connection to the session's database for the fixtures that empty its archive
    before a test (a connection per test cost about 11 ms, thousands of times)."""
    from tests.postgres import ArchiveAdmin

    admin = ArchiveAdmin(database_url)
    try:
        yield admin
    finally:
        admin.close()


@pytest.fixture
def empty_archive(database_url: str, archive_admin: Any) -> str:
    """The session's database with the archive emptied first; its URL."""
    archive_admin.empty()
    return database_url


@pytest.fixture(scope="session")
def redis_url(redis_server: RedisServer) -> str:
    """The URL of the session's redis-server."""
    return redis_server.url


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    """A bytes-returning client on an empty Redis (FLUSHALL before each test)."""
    client = redis.Redis.from_url(redis_url, decode_responses=False)
    client.flushall()
    try:
        yield client
    finally:
        client.close()


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[Any]:
    """A real 3-master Redis Cluster for the whole session (tests/cluster.py)."""
    from tests.cluster import LocalCluster

    with LocalCluster() as cluster:
        yield cluster


@pytest.fixture(scope="session")
def _session_cluster_client(redis_cluster: Any) -> Iterator[Any]:
    """One cluster client for the session: a new one asks the cluster for its slots first,
    about 70 ms, which hundreds of tests on the cluster paid each."""
    from redis.cluster import RedisCluster

    client = RedisCluster.from_url(redis_cluster.url)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def cluster_client(_session_cluster_client: Any) -> Any:
    """A cluster client on the session's cluster, every master flushed first."""
    from redis.cluster import RedisCluster

    _session_cluster_client.flushall(target_nodes=RedisCluster.PRIMARIES)
    return _session_cluster_client


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto` (pyproject.toml): two workers more than the cores. Many tests wait on servers
    they started (Redis, PostgreSQL, gunicorn, a browser) or on the real clock, so with one
    worker per core a core is often idle; a fifth worker on 2 cores mostly fills those idle
    seconds with as much CPU of its own again (its collection, servers and module fixtures),
    so 4 stays. The measurements behind the count: docs/benchmarks.md, "The test suite"."""
    return (os.cpu_count() or 1) + 2


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest tests first, spread over the xdist workers (tests/schedule.py)."""
    from tests.schedule import spread, worker_count

    order = spread([item.nodeid for item in items], worker_count())
    items[:] = [items[index] for index in order]
