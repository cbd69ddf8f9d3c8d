"""The archive, end to end over HTTP on a real Redis and a real PostgreSQL: a table's log is
copied, verified and trimmed from Redis, and every reader (the log, the hands and their PHH,
the new list of hands, the live feed's resume, audits, the ledger) answers exactly what it
answered before; commands go on on the trimmed stream."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import threading
from typing import Any

import psycopg
import pytest
import redis
from rq import SimpleWorker

from service.api.app import create_app
from service.archive.archive import Archive
from service.archive.database import migrations
from service.config import Settings
from service.eventlog.redis_store import RedisEventStore
from service.eventlog.store import ArchiveUnavailable, CorruptLog
from service.infrastructure import archiver
from service.projections.follower import Follower
from service.tables import Tables
from tests.apiclient import AUDITOR, KEEP, OPERATOR, SERVED, Api
from tests.sse import Stream
from tests.tampering import rewrite_log
from tests.test_follow import _table
from workers.queues import QUEUES, SERIALIZER


def _played(api: Api, hands: int, players: int = 3) -> tuple[str, list[str]]:
    """A table where `hands` hands were played, everyone in on odd hands, one in on even."""
    table, tokens = api.rules_table(players, ante_rule="every_hand")
    for n in range(hands):
        dealt = api.post(f"/v1/tables/{table}/deal", {})
        assert dealt.status_code == 201, dealt.text
        for i, seat in enumerate(dealt.json()["order"]):
            decision = "in" if n % 2 == 0 or i == 0 else "out"
            answer = api.post(
                f"/v1/tables/{table}/declare", {"decision": decision}, token=tokens[seat]
            )
            assert answer.status_code == 200, answer.text
        assert api.post(f"/v1/tables/{table}/resolve").status_code == 200
    return table, tokens


def _services(api: Api) -> Any:
    return SERVED[api.base].extensions["guts"]


def _archive(api: Api, table: str) -> int:
    """Archive the table now, as the dispatchers' archiver does; how many events."""
    return int(_services(api).usecases.archiver.catch_up(table))


def _everything(api: Api, table: str, hands: int, tokens: list[str]) -> dict[str, Any]:
    """What readers get of the table: the log from several points and as a player, each
    hand's history (JSON and PHH) as the auditor and a player, the ledger."""
    seen: dict[str, Any] = {}
    for after in (0, 1, 5, 17):
        for limit in (3, 1000):
            seen[f"events {after} {limit}"] = api.get(
                f"/v1/tables/{table}/events?after={after}&limit={limit}"
            ).json()
    seen["player's events"] = api.get(f"/v1/tables/{table}/events", token=tokens[1]).json()
    for hand in range(1, hands + 1):
        path = f"/v1/tables/{table}/hands/{hand}"
        seen[f"hand {hand}"] = api.get(path, token=AUDITOR).json()
        seen[f"hand {hand} player"] = api.get(path, token=tokens[0]).json()
        seen[f"hand {hand} phh"] = api.get(path + "?format=phh", token=AUDITOR).text
    seen["ledger"] = api.get(f"/v1/ledger?table_id={table}&limit=1000").json()["entries"]
    return seen


def test_an_archived_table_reads_exactly_as_before_and_plays_on(
    archived_api: Api, redis_client: redis.Redis, database_url: str
) -> None:
    api = archived_api
    table, tokens = _played(api, hands=6)
    version = api.get(f"/v1/tables/{table}").json()["version"]
    before = _everything(api, table, 6, tokens)
    store: RedisEventStore = _services(api).usecases.tables.store

    _archive(api, table)  # (reading the ledger of the table archived it already)
    trimmed = int(redis_client.hget(store.meta_key(table), "trimmed") or 0)
    assert version - KEEP - 16 <= trimmed <= version - KEEP  # up to the snapshot
    assert redis_client.xlen(store.events_key(table)) == version - trimmed
    with psycopg.connect(database_url) as conn:
        stored = conn.execute(
            "SELECT version, data FROM archive_events WHERE table_id = %s ORDER BY version",
            (table,),
        ).fetchall()
    assert [v for v, _ in stored] == list(range(1, version + 1))
    assert [bytes(d) for _, d in stored][-KEEP:] == [
        s.data for s in store.read(table, version - KEEP)
    ]

    assert _everything(api, table, 6, tokens) == before
    # The live feed resumes from before the trim without a gap.
    with Stream.open(api.base, f"/v1/tables/{table}/stream", OPERATOR, after=0) as stream:
        got = [m.id for m in stream.events_until(version)]
    assert got == list(range(1, version + 1))

    # Commands go on on the trimmed stream, and are archived in turn.
    _play_one_more(api, table, tokens)
    now = api.get(f"/v1/tables/{table}").json()["version"]
    _archive(api, table)
    assert _services(api).usecases.archive.positions([("default", table)]) == [now]
    assert (
        api.get(f"/v1/tables/{table}/events?after=0&limit=1000").json()["events"][-1]["version"]
        == now
    )


def _play_one_more(api: Api, table: str, tokens: list[str]) -> None:
    dealt = api.post(f"/v1/tables/{table}/deal", {})
    assert dealt.status_code == 201, dealt.text
    for seat in dealt.json()["order"]:
        api.post(f"/v1/tables/{table}/declare", {"decision": "in"}, token=tokens[seat])
    assert api.post(f"/v1/tables/{table}/resolve").status_code == 200


def test_the_list_of_hands_pages_newest_first_and_filters(archived_api: Api) -> None:
    api = archived_api
    table, _ = _played(api, hands=5)
    other, _ = _played(api, hands=2, players=2)  # players p0 and p1 only
    _archive(api, other)  # (a page of one table catches it up itself; this one is not)

    # A page of one table: its archive is caught up first, so every hand is there.
    page = api.get(f"/v1/hands?table_id={table}&limit=2", token=AUDITOR).json()
    assert [h["hand"] for h in page["hands"]] == [5, 4]
    seen = [h["hand"] for h in page["hands"]]
    while page["next_after"]:
        page = api.get(
            f"/v1/hands?table_id={table}&limit=2&after={page['next_after']}", token=AUDITOR
        ).json()
        seen += [h["hand"] for h in page["hands"]]
    assert seen == [5, 4, 3, 2, 1]
    for hand in (1, 5):  # the same bodies as the hand's own history
        listed = api.get(f"/v1/hands?table_id={table}&limit=100", token=AUDITOR).json()
        mine = next(h for h in listed["hands"] if h["hand"] == hand)
        assert mine == api.get(f"/v1/tables/{table}/hands/{hand}", token=AUDITOR).json()

    everyone = api.get("/v1/hands?limit=100").json()["hands"]
    assert len(everyone) == 7
    ended = [h["ended_at"] for h in everyone]
    assert ended == sorted(ended, reverse=True)
    p2 = api.get("/v1/hands?player_id=p2&limit=100").json()["hands"]
    assert {h["table_id"] for h in p2} == {table} and len(p2) == 5
    assert api.get("/v1/hands?player_id=nobody").json() == {"hands": [], "next_after": None}
    last = everyone[0]["ended_at"]
    assert [h["ended_at"] for h in api.get(f"/v1/hands?from={_q(last)}").json()["hands"]] == [
        h["ended_at"] for h in everyone if h["ended_at"] >= last
    ]
    assert len(api.get(f"/v1/hands?to={_q(last)}&limit=100").json()["hands"]) == len(
        [h for h in everyone if h["ended_at"] < last]
    )


def test_the_archives_ledger_reads_a_requests_protections_the_event_stores_way(
    archived_api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With an archive the ledger is the archive's (its pages and net losses in PostgreSQL);
    its Redis reads on a request's path, a seat's protections and the loss limits at a deal,
    still go the event store's way (its shortcut around redis-py when on), as they do without
    an archive: none went through redis-py's pool (whose checkout polls each connection
    through gevent's hub)."""
    commands = _services(archived_api).usecases.tables.store.commands
    sent: list[str] = []
    call_many = commands.call_many

    def counted(*batch: tuple[Any, ...]) -> list[Any]:
        sent.extend(str(command[0]) for command in batch)
        return call_many(*batch)

    monkeypatch.setattr(commands, "call_many", counted)
    table, _ = _played(archived_api, hands=1, players=2)
    assert sent.count("ZSCORE") == 2  # each seat's protections (its cool-down among them)
    assert sent.count("HGET") >= 3  # the profile: at each seat, and at the deal's limits


def _q(moment: str) -> str:
    return moment.replace("+", "%2B")


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ("after=abc", 422),
        ("limit=0", 422),
        ("limit=101", 422),
        ("from=yesterday", 422),
        ("from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z", 422),
        ("from=2026-01-01T00:00:00", 422),  # no offset
        ("table_id=no-such-table", 404),
        ("colour=red", 422),
    ],
)
def test_bad_hand_queries_are_refused_clearly(archived_api: Api, query: str, status: int) -> None:
    answer = archived_api.get(f"/v1/hands?{query}", token=AUDITOR)
    assert answer.status_code == status, answer.text
    assert answer.headers["Content-Type"] == "application/problem+json"


def test_players_may_not_list_hands_and_a_service_without_an_archive_says_so(
    archived_api: Api, redis_url: str
) -> None:
    table, tokens = _played(archived_api, hands=1)
    assert archived_api.get("/v1/hands", token=tokens[0]).status_code == 403
    assert archived_api.get("/v1/hands", token=None).status_code == 401
    plain = create_app(Settings(redis_url=redis_url, operator_keys=(OPERATOR,)))  # no archive
    answer = plain.test_client().get("/v1/hands", headers={"Authorization": f"Bearer {OPERATOR}"})
    assert answer.status_code == 503
    assert answer.json["title"] == "Unavailable"
    assert answer.json["detail"] == "the archive cannot be reached; retry"


def test_audits_of_an_archived_table_are_ok(
    archived_api: Api,
    redis_client: redis.Redis,
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api = archived_api
    table, _ = _played(api, hands=4)
    _archive(api, table)
    monkeypatch.setenv("GUTS_DATABASE_URL", database_url)  # the worker's environment
    started = api.post(f"/v1/tables/{table}/audit", token=AUDITOR)
    assert started.status_code == 202
    SimpleWorker(list(QUEUES), connection=redis_client, serializer=SERIALIZER).work(
        burst=True, logging_level="WARNING"
    )
    report = api.get(f"/v1/audits/{started.json()['audit_id']}", token=AUDITOR).json()
    assert report["status"] == "finished"
    assert report["result"]["ok"], report["result"]
    assert report["result"]["version"] == report["result"]["events_checked"]
    assert report["result"]["version"] == api.get(f"/v1/tables/{table}").json()["version"]


# --- the store and the archive, without the API ---------------------------------------------


def _stores(client: redis.Redis, url: str, keep: int = 2) -> tuple[RedisEventStore, Archive]:
    archive = Archive.open(url, size=2)
    return RedisEventStore(client, archive=archive, keep=keep), archive


def test_nothing_is_trimmed_that_is_not_archived(
    redis_client: redis.Redis, empty_archive: str
) -> None:
    store, archive = _stores(redis_client, empty_archive)
    try:
        _table(Tables(store), "t1", players=6)  # 7 events, snapshots at 1 (and every 16)
        follower = Follower(store, [archiver(store, archive)], batch=3)
        assert follower.catch_up("t1") == 7
        assert archive.positions([("default", "t1")]) == [7]
        # The snapshot of version 1 holds the stream's start in place: trim stays at 1.
        assert int(redis_client.hget(store.meta_key("t1"), "trimmed") or 0) == 1
        assert [s.version for s in store.read("t1")] == list(range(1, 8))
        assert [s.version for s in store.read("t1", 0, 1)] == [1]
    finally:
        archive.close()


def test_a_postgresql_taking_no_writes_is_waited_out_and_archived_to_once_it_does(
    redis_client: redis.Redis,
) -> None:
    """Read-only by setting (as an operator sets it on a full disk), or a standby: the archiver
    logged an error for each table at each sweep, as if the table could not be projected. It
    is the archive unavailable (the follower waits), and archiving resumes once it is over."""
    from tests.postgres import fresh_database

    with fresh_database() as url, psycopg.connect(url, autocommit=True) as admin:
        name = url.rsplit("/", 1)[1].split("?")[0]
        admin.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
        store, archive = _stores(redis_client, url)
        try:
            _table(Tables(store), "t1", players=3)
            follower = Follower(store, [archiver(store, archive)])
            with pytest.raises(ArchiveUnavailable, match="takes no writes"):
                follower.catch_up("t1")
            admin.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = off')
            assert follower.catch_up("t1") == store.load("t1").version
            assert archive.positions([("default", "t1")]) == [store.load("t1").version]
        finally:
            archive.close()


def test_a_log_edited_in_redis_is_not_archived_nor_trimmed(
    redis_client: redis.Redis, empty_archive: str
) -> None:
    store, archive = _stores(redis_client, empty_archive)
    try:
        _table(Tables(store), "t1", players=3)

        def edit(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
            records[2]["data"]["player_id"] = "px"  # who sat at seat 1
            return records

        rewrite_log(redis_client, "t1", edit, rechain=False)
        projection = archiver(store, archive)
        follower = Follower(store, [projection], chained=False)  # the archive's own check
        with pytest.raises(CorruptLog, match="event 3 cannot be archived"):
            follower.catch_up("t1")
        assert archive.positions([("default", "t1")]) == [0]
        assert redis_client.hget(store.meta_key("t1"), "trimmed") is None
    finally:
        archive.close()


def test_archivers_racing_on_one_table_archive_each_event_once(
    redis_client: redis.Redis, empty_archive: str
) -> None:
    store, archive = _stores(redis_client, empty_archive, keep=0)
    try:
        tables = Tables(store)
        _table(tables, "t1", players=6)
        followers = [Follower(store, [archiver(store, archive)], batch=1) for _ in range(4)]
        barrier = threading.Barrier(len(followers))
        errors: list[BaseException] = []

        def run(follower: Follower) -> None:
            barrier.wait()
            try:
                follower.catch_up("t1")
            except BaseException as error:  # noqa: BLE001 - reported below
                errors.append(error)

        threads = [threading.Thread(target=run, args=(f,)) for f in followers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        with psycopg.connect(empty_archive) as conn:
            versions = [
                v for (v,) in conn.execute("SELECT version FROM archive_events ORDER BY version")
            ]
        assert versions == list(range(1, 8))
    finally:
        archive.close()


def test_a_reader_without_the_archive_is_told_rather_than_given_a_gap(
    redis_client: redis.Redis, empty_archive: str
) -> None:
    store, archive = _stores(redis_client, empty_archive, keep=0)
    try:
        tables = Tables(store, snapshot_every=2)
        _table(tables, "t1", players=6)
        Follower(store, [archiver(store, archive)]).catch_up("t1")
        trimmed = int(redis_client.hget(store.meta_key("t1"), "trimmed") or 0)
        assert trimmed > 1
        blind = RedisEventStore(redis_client)
        with pytest.raises(Exception, match="archived"):
            blind.read("t1")
        assert [s.version for s in blind.read("t1", trimmed)] == list(range(trimmed + 1, 8))
    finally:
        archive.close()


def test_guts_migrate_brings_a_database_up_to_date_once() -> None:
    from tests.postgres import MACHINE, _with_database

    name = f"guts_migrate_{secrets.token_hex(4)}"
    try:
        admin = psycopg.connect(MACHINE, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError:
        pytest.skip("no PostgreSQL at 127.0.0.1:5432 to create a database in")
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            env = {**os.environ, "GUTS_DATABASE_URL": _with_database(MACHINE, name)}
            guts = [sys.executable, "-m", "service.cli", "migrate"]
            first = subprocess.run(guts, env=env, capture_output=True, text=True, check=False)
            assert first.returncode == 0, first.stderr
            numbers = ", ".join(str(m.number) for m in migrations())
            assert first.stdout.strip() == f"applied migrations {numbers}"
            again = subprocess.run(guts, env=env, capture_output=True, text=True, check=False)
            assert (again.returncode, again.stdout.strip()) == (0, "already up to date")
            with psycopg.connect(env["GUTS_DATABASE_URL"]) as conn:
                tables = {
                    t
                    for (t,) in conn.execute(
                        "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
                    )
                }
            assert {"archive_events", "archive_hands", "ledger_entries"} <= tables
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    unset = {k: v for k, v in os.environ.items() if k != "GUTS_DATABASE_URL"}
    refused = subprocess.run(guts, env=unset, capture_output=True, text=True, check=False)
    assert refused.returncode == 1 and "GUTS_DATABASE_URL is not set" in refused.stderr
