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
    they started (Redis, PostgreSQL, gunicorn, a browser) or on the real clock, so a core is
    often idle: on 2 cores the suite took 225 s with 3 workers, 286 s with 2 (2026-11-26, 2,242
    tests); with 3,308 tests (2026-12-03), 306 s with 4 workers and 292 s with 5 (a browser
    test's page then timed out once), where 3 took 360 s (before the dispatchers waited on the
    due index instead of polling it); the processes' CPU, as process accounting counted it,
    was 466 and 479 CPU-s (2 cores give at most 2 a second). With 3,481 tests (2026-12-07, a
    quiet machine, 4 workers): 338 s and 352 s; process accounting counted 526 CPU-s in one
    run (the 4 workers 179, the ~200 processes the tests start 150, Chromium 83, Redis 24,
    PostgreSQL 16), a floor of 263 s on 2 cores: the suite is bound by its CPU now. Later that
    day, 3,519 tests: 339 s with 4 workers (552 CPU-s busy, 124 core-s idle), 350 s with 6 (665
    CPU-s busy, 37 idle): more workers fill the idle seconds with more CPU of their own.
    2026-12-07 again, a host about twice as slow, 3,522 tests, 4 workers: 624 s (1,164 CPU-s
    busy) before `guts serve` forked its worker and dispatchers, 524 s (954) after. On a host
    like 2026-12-07's first, 4 workers, alternating runs: 337 s and 325 s (531 and 493 CPU-s
    busy) before the browser tests ran Chromium's headless shell and the clock-bound modules
    started early (tests/schedule.py), 289 s and 297 s (436 and 472) after; 6 workers took as
    long as 4 (294 s) with 524 CPU-s busy. 2026-12-07, later, another host, 3,523 tests, runs
    one after the other: 4 workers 313.0 s and 313.3 s (500 and 503 CPU-s busy, 117 and 116
    core-s idle), 5 workers 271.1, 315.6 and 316.3 s (461, 560 and 554 busy; 66-76 idle), 6
    workers 319.0 s (604 busy, 31 idle): a fifth worker fills idle seconds with as much CPU
    again in most runs, so 4 stays. (Not the workers' own servers: one worker's Redis, cluster
    and API servers, idle, cost 0.26 CPU-s in 30 s.)"""
    return (os.cpu_count() or 1) + 2


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest tests first, spread over the xdist workers (tests/schedule.py)."""
    from tests.schedule import spread, worker_count

    order = spread([item.nodeid for item in items], worker_count())
    items[:] = [items[index] for index in order]
