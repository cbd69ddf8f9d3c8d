"""The archive under faults, with real processes: `guts dispatch` (whose archiver copies the
logs into PostgreSQL and trims Redis) killed with -9 in the middle of its batches, and the
PostgreSQL server itself killed with -9 while hands are played. Afterwards nothing is lost,
nothing is archived twice, nothing was ever trimmed that was not archived, and every table's
audit is ok."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import redis

from service.archive.archive import Archive
from service.audit.rebuild import audit_table
from service.eventlog.redis_store import RedisEventStore
from service.projections.ledger import LedgerStore
from service.tables import Tables
from tests.playing import new_table, play
from tests.waiting import eventually

_until = functools.partial(eventually, tolerate=(psycopg.OperationalError, redis.RedisError))
"""`eventually`, a store killed or restarting meaning "not yet" (every wait here meets one)."""


def _dispatch(redis_url: str, database_url: str, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "REDIS_URL": redis_url,
        "GUTS_DATABASE_URL": database_url,
        "GUTS_ARCHIVE_KEEP_EVENTS": "8",
        "GUTS_FOLLOW_LEASE_S": "1",  # (one killed with -9 is replaced within it)
        "GUTS_LOG_LEVEL": "warning",
    }
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "service.cli", "dispatch"], env=env, stdout=out, stderr=out
        )


def _archived(url: str) -> dict[str, tuple[int, int, int, int]]:
    """Per table: (position, events, lowest and highest version) in the archive."""
    with psycopg.connect(url, connect_timeout=2) as conn:  # one statement: one snapshot
        rows = conn.execute(
            "SELECT t.table_id, t.version, count(e.version), min(e.version), max(e.version)"
            " FROM archive_tables t LEFT JOIN archive_events e USING (table_id)"
            " GROUP BY t.table_id, t.version"
        ).fetchall()
    return {t: (position, n, low or 0, high or 0) for t, position, n, low, high in rows}


def _check_consistent(client: redis.Redis, store: RedisEventStore, url: str) -> dict[str, int]:
    """Every archived table: events 1..position exactly once, and Redis trimmed no further
    than that (read before the archive, which only ever grows); the positions."""
    names = [k.decode().split("{")[1].split("}")[0] for k in client.scan_iter("guts:{*}:meta")]
    trimmed = {t: store.trimmed(t) for t in names}
    archived = _archived(url)
    for table_id, (position, count, low, high) in archived.items():
        assert (count, low, high) == (position, 1, position), (table_id, archived[table_id])
    for table_id, upto in trimmed.items():
        assert upto <= archived.get(table_id, (0,))[0], (table_id, upto, archived.get(table_id))
    return {t: a[0] for t, a in archived.items()}


def _audit_all(client: redis.Redis, url: str, table_ids: list[str]) -> None:
    archive = Archive.open(url, size=1)
    try:
        store = RedisEventStore(client, archive=archive)
        for table_id in table_ids:
            report = audit_table(store, table_id, LedgerStore(client))
            assert report["ok"], report
            assert report["events_checked"] == report["version"]
    finally:
        archive.close()


@pytest.fixture
def backlog(redis_client: redis.Redis) -> Iterator[tuple[Tables, dict[str, list[bytes]]]]:
    """Four tables of 150 hands each, not archived yet, and their logs as stored."""
    tables = Tables(RedisEventStore(redis_client))
    for n in range(4):
        new_table(tables, f"t{n}")
        play(tables, f"t{n}", 150)
    logs = {f"t{n}": [s.data for s in tables.store.read(f"t{n}")] for n in range(4)}
    yield tables, logs


def test_an_archiver_killed_mid_batch_loses_nothing_and_archives_nothing_twice(
    redis_url: str,
    redis_client: redis.Redis,
    empty_archive: str,
    backlog: tuple[Tables, dict[str, list[bytes]]],
    tmp_path: Path,
) -> None:
    tables, logs = backlog
    store = RedisEventStore(redis_client)
    total = sum(len(log) for log in logs.values())
    kills = 0
    while True:
        process = _dispatch(redis_url, empty_archive, tmp_path / "dispatch.log")
        try:
            before = sum(_check_consistent(redis_client, store, empty_archive).values())
            if before == total:
                break
            # Killed as soon as it has archived more (in the middle of the next batches).
            _until(
                lambda b=before: (
                    sum(_check_consistent(redis_client, store, empty_archive).values()) > b
                ),
                30,
                "the archiver archived something",
            )
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait()
        kills += 1
        _check_consistent(redis_client, store, empty_archive)
    assert kills >= 1
    # A last archiver finds everything archived: its first sweep verifies and trims what the
    # kills left untrimmed (a kill between a commit and its trim).
    process = _dispatch(redis_url, empty_archive, tmp_path / "dispatch.log")
    try:
        _until(
            lambda: all(redis_client.xlen(store.events_key(t)) < 30 for t in logs),
            30,
            "every stream trimmed",
        )
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    assert _check_consistent(redis_client, store, empty_archive) == {
        t: len(log) for t, log in logs.items()
    }
    archive = Archive.open(empty_archive, size=1)
    try:
        whole = RedisEventStore(redis_client, archive=archive)
        for table_id, log in logs.items():
            assert [s.data for s in whole.read(table_id)] == log  # the same bytes
            assert redis_client.xlen(store.events_key(table_id)) < 30  # trimmed
        with psycopg.connect(empty_archive) as conn:
            hands = conn.execute("SELECT table_id, count(*) FROM archive_hands GROUP BY 1")
            assert dict(hands.fetchall()) == {t: 150 for t in logs}
    finally:
        archive.close()
    _audit_all(redis_client, empty_archive, sorted(logs))


def _outages(log: Path) -> int:
    """How often the dispatcher's archiver has said it cannot reach PostgreSQL."""
    return log.read_text(errors="replace").count("cannot use its stores")


def _played_on(store: RedisEventStore, versions: dict[str, int], events: int) -> bool:
    """Whether every table has `events` more events than `versions`."""
    return all(store.load(t).version >= v + events for t, v in versions.items())


def test_postgres_killed_while_hands_are_played_loses_nothing(
    redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    from service.archive.database import EmbeddedPostgres, connect, migrate

    data = tmp_path / "pg"
    server = EmbeddedPostgres(data)  # what guts serve runs without GUTS_DATABASE_URL
    url = server.start()
    with connect(url) as conn:
        migrate(conn)
    tables = Tables(RedisEventStore(redis_client))
    store = RedisEventStore(redis_client)
    for n in range(3):
        new_table(tables, f"k{n}")
    stop = threading.Event()
    failures: list[BaseException] = []

    def keep_playing() -> None:
        try:
            played = 0
            while not stop.is_set():
                for n in range(3):
                    play(tables, f"k{n}", 1, first=played)
                played += 1
                time.sleep(0.01)
        except BaseException as error:  # noqa: BLE001 - reported below
            failures.append(error)

    player = threading.Thread(target=keep_playing)
    log = tmp_path / "dispatch.log"
    dispatcher = _dispatch(redis_url, url, log)
    player.start()
    try:
        try:
            _check_consistent(redis_client, store, url)
            _until(lambda: len(_archived(url)) == 3, 30, "every table archived")
            postmaster = int((data / "postmaster.pid").read_text().split()[0])
            os.kill(postmaster, signal.SIGKILL)
            # The archiver has found PostgreSQL gone (a batch under way when it died failed:
            # no trim of its is still to come).
            _until(lambda: _outages(log) >= 1, 30, "the archiver saw PostgreSQL go")
            held = {t: store.trimmed(t) for t in ("k0", "k1", "k2")}
            versions = {t: store.load(t).version for t in held}
            # Hands go on in Redis while the archiver tries twice more, and trims nothing.
            _until(lambda: _outages(log) >= 3, 30, "the archiver tried again")
            _until(lambda: _played_on(store, versions, 20), 30, "hands went on")
            assert {t: store.trimmed(t) for t in held} == held
            _until(lambda: not server.running, 30, "the killed postmaster gone")
            server.restart()  # started again, on the same data, at the same URL
            versions = {t: store.load(t).version for t in held}
            _until(lambda: _played_on(store, versions, 20), 30, "hands went on after")
        finally:
            stop.set()
            player.join()
        assert failures == []
        versions = {f"k{n}": store.load(f"k{n}").version for n in range(3)}
        _until(  # (10 s here on a quiet machine; over 60 s twice on a loaded one)
            lambda: _check_consistent(redis_client, store, url) == versions,
            120,
            "the archiver caught up after PostgreSQL came back",
        )
        # Trimming resumed (each batch trims Redis after its commit: an archive that caught up
        # may be read a moment before its last trim).
        trims = lambda: all(store.trimmed(t) > held[t] for t in held)  # noqa: E731
        _until(trims, 30, "trimming resumed")
    finally:
        dispatcher.kill()
        dispatcher.wait()
    _audit_all(redis_client, url, sorted(versions))
    server.stop()
