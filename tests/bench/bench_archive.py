"""The archive: Redis kept bounded, archive throughput, archive lag. Run on purpose:

    .venv/bin/python -m tests.bench.bench_archive [--hands 20000]

Everything runs on real servers: a private redis-server, a fresh database on the machine's
PostgreSQL (127.0.0.1:5432; a private one from the pgserver wheel where none runs), and, where
the archive runs as in production, a real `guts dispatch` process (its archiver thread,
beside its ledger and webhook followers and its deadline loop). Hands are played through
`Tables` (the command path under HTTP: decide, conditional append, snapshots).

1. Bounded Redis. One 6-seat table plays `--hands` hands with `guts dispatch` archiving. Every
   1,000 hands: the bytes of the table's own keys (MEMORY USAGE of each, exact), Redis'
   `used_memory`, and the bytes of the ledger's keys (none are expected: with the archive the
   ledger's entries live in PostgreSQL). Goals: the table's keys under 64 KiB at the end;
   `used_memory` flat from hand 2,000 on.
2. Throughput. A backlog of hands (10 tables of 6 seats) in Redis, then archived by one
   archiver (one thread: `Follower.sweep` with the archive projection, as the dispatcher's
   archiver catches up): hands/s. Baseline in the same run: the least an archiver must do, a
   bare copy (XRANGE the same events, COPY them into a scratch table, no checks, no hand
   rows, no read-back, no trim). Goal: >= 2,000 hands/s.
3. Lag. 20 three-seat tables dealt at a steady 200 hands/s with `guts dispatch` archiving:
   for each hand, from its resolve's append to its row in `archive_hands` (a poller sees it).
   Goal: p99 under 5 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import redis

from service.archive.archive import Archive
from service.eventlog.redis_store import RedisEventStore
from service.infrastructure import archiver
from service.processes.redis_server import RedisServer
from service.projections.follower import Follower
from service.tables import Tables
from tests.playing import new_table, play
from tests.postgres import EMPTY_ARCHIVE, fresh_database


@contextmanager
def dispatcher(redis_url: str, database_url: str) -> Iterator[subprocess.Popen[bytes]]:
    env = {
        **os.environ,
        "REDIS_URL": redis_url,
        "GUTS_DATABASE_URL": database_url,
        "GUTS_LOG_LEVEL": "warning",
    }
    process = subprocess.Popen([sys.executable, "-m", "service.cli", "dispatch"], env=env)
    try:
        yield process
    finally:
        process.terminate()
        process.wait(30)


def _key_bytes(client: redis.Redis, pattern: str) -> int:
    return sum(int(client.memory_usage(key, samples=0) or 0) for key in client.scan_iter(pattern))


def _settled(client: redis.Redis, database_url: str, table_id: str) -> float:
    """Wait until the archive has the table's log (the samples are taken after its trim);
    how long that took."""
    started = time.monotonic()
    version = int(client.hget(f"guts:{{{table_id}}}:meta", "version") or 0)
    with psycopg.connect(database_url, autocommit=True) as conn:
        while True:
            row = conn.execute(
                "SELECT version FROM archive_tables WHERE table_id = %s", (table_id,)
            ).fetchone()
            if row is not None and row[0] >= version:
                time.sleep(0.05)  # (its trim follows its commit)
                return time.monotonic() - started
            time.sleep(0.02)


def bounded(client: redis.Redis, redis_url: str, database_url: str, hands: int) -> None:
    print(f"\n1. bounded Redis: one 6-seat table, {hands:,} hands, guts dispatch archiving")
    tables = Tables(RedisEventStore(client))
    new_table(tables, "long", players=6)
    print(
        f"{'hand':>7} {'table keys':>11} {'used_memory':>12} {'ledger keys':>12} {'events':>7}"
        f" {'wait s':>6}"
    )
    curve = []
    peak = 0
    with dispatcher(redis_url, database_url):
        for done in range(0, hands, 1000):
            play(tables, "long", 1000, first=done)
            peak = max(peak, _key_bytes(client, "guts:{long}:*"))
            waited = _settled(client, database_url, "long")
            table = _key_bytes(client, "guts:{long}:*")
            used = int(client.info("memory")["used_memory"])
            ledger = _key_bytes(client, "guts:{%ledger:*")
            held = client.xlen("guts:{long}:events")
            curve.append((done + 1000, table, used, ledger))
            print(
                f"{done + 1000:>7,} {table:>11,} {used:>12,} {ledger:>12,} {held:>7,}"
                f" {waited:>6.2f}"
            )
    at_2000 = next(c for c in curve if c[0] == 2000)
    last = curve[-1]
    per_hand = (last[2] - at_2000[2]) / (last[0] - at_2000[0])
    ledger_per_hand = (last[3] - at_2000[3]) / (last[0] - at_2000[0])
    print(
        f"table keys at their largest, right after a burst of 1,000 hands (the archive behind"
        f" by its lag): {peak:,} B"
    )
    print(
        f"table keys at the end: {last[1]:,} B ({last[1] / 65536:.2f}x 64 KiB); used_memory "
        f"from hand 2,000 to {last[0]:,}: {per_hand:+.1f} B/hand, of which the ledger's keys "
        f"{ledger_per_hand:+.1f} B/hand; without them {per_hand - ledger_per_hand:+.1f} B/hand"
    )


def throughput(client: redis.Redis, database_url: str, tables_n: int, hands: int) -> None:
    print(f"\n2. throughput: a backlog of {tables_n} tables x {hands:,} hands, one archiver")
    client.flushall()
    tables = Tables(RedisEventStore(client))
    for n in range(tables_n):
        new_table(tables, f"b{n}", players=6)
        play(tables, f"b{n}", hands)
    ids = [f"b{n}" for n in range(tables_n)]
    events = sum(tables.store.load(t).version for t in ids)
    total = tables_n * hands
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("CREATE UNLOGGED TABLE IF NOT EXISTS bare (t text, v bigint, d bytea)")
        conn.execute("TRUNCATE bare")
        started = time.perf_counter()
        for table_id in ids:  # the baseline: read and COPY, nothing else
            after = 0
            while page := tables.store.read(table_id, after, 2000):
                with conn.transaction(), conn.cursor() as cur:
                    with cur.copy("COPY bare (t, v, d) FROM STDIN") as copy:
                        for stored in page:
                            copy.write_row((table_id, stored.version, stored.data))
                after = page[-1].version
        bare = time.perf_counter() - started
        conn.execute("DROP TABLE bare")
    archive = Archive.open(database_url, size=1)
    store = RedisEventStore(client, archive=archive)
    follower = Follower(store, [archiver(store, archive)], batch=2000)
    started = time.perf_counter()
    follower.sweep()
    real = time.perf_counter() - started
    archive.close()
    assert all(store.trimmed(t) > 0 for t in ids)
    print(
        f"{events:,} events: archived in {real:.2f} s = {total / real:,.0f} hands/s "
        f"({events / real:,.0f} events/s); bare copy {bare:.2f} s = {total / bare:,.0f} hands/s;"
        f" archive/bare {bare / real:.2f}x the throughput"
    )


def lag(client: redis.Redis, redis_url: str, database_url: str, seconds: float) -> None:
    rate, tables_n = 200, 20
    print(f"\n3. lag: {tables_n} three-seat tables at {rate} hands/s for {seconds:g} s")
    client.flushall()
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(EMPTY_ARCHIVE)
    tables = Tables(RedisEventStore(client))
    ids = [f"l{n}" for n in range(tables_n)]
    for table_id in ids:
        new_table(tables, table_id, players=3)
    resolved: dict[tuple[str, int], float] = {}
    seen: dict[tuple[str, int], float] = {}
    stop = threading.Event()

    def poll() -> None:
        with psycopg.connect(database_url, autocommit=True) as conn:
            last = 0
            while not stop.is_set() or len(seen) < len(resolved):
                rows = conn.execute(
                    "SELECT seq, table_id, hand FROM archive_hands WHERE seq > %s", (last,)
                ).fetchall()
                now = time.monotonic()
                for seq, table_id, hand in rows:
                    seen[(table_id, hand)] = now
                    last = max(last, seq)
                time.sleep(0.02)
                if stop.is_set() and time.monotonic() - stopped[0] > 30:
                    return

    stopped = [0.0]
    poller = threading.Thread(target=poll)
    with dispatcher(redis_url, database_url):
        time.sleep(2)  # started and subscribed
        poller.start()
        started = time.monotonic()
        behind = 0.0
        for n in range(int(rate * seconds)):
            due = started + n / rate
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            else:
                behind = max(behind, -wait)
            table_id = ids[n % tables_n]
            play(tables, table_id, 1, first=n)
            resolved[(table_id, n // tables_n + 1)] = time.monotonic()
        took = time.monotonic() - started
        stop.set()
        stopped[0] = time.monotonic()
        poller.join()
    lags = sorted(seen[k] - resolved[k] for k in resolved if k in seen)
    missing = len(resolved) - len(lags)
    p50, p99 = lags[len(lags) // 2], lags[int(len(lags) * 0.99)]
    print(
        f"{len(resolved):,} hands in {took:.1f} s ({len(resolved) / took:.0f} hands/s; the "
        f"driver fell behind by at most {behind * 1000:.0f} ms): lag p50 {p50:.2f} s, "
        f"p99 {p99:.2f} s, max {lags[-1]:.2f} s, mean {statistics.mean(lags):.2f} s; "
        f"{missing} never archived"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hands", type=int, default=20_000)
    parser.add_argument("--backlog", type=int, default=1000, help="hands per backlog table")
    parser.add_argument("--lag-seconds", type=float, default=30.0)
    args = parser.parse_args()
    with RedisServer() as server, fresh_database() as database_url:
        client = redis.Redis.from_url(server.url)
        bounded(client, server.url, database_url, args.hands)
        throughput(client, database_url, 10, args.backlog)
        lag(client, server.url, database_url, args.lag_seconds)


if __name__ == "__main__":
    main()
