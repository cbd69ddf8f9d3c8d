"""Audit replay speed: events per second checked by the audit, on a real Redis log.

Builds a table with a few thousand complete hands through the application service (the same
path the API uses), then runs the audit the RQ job runs and prints its rate. Run on purpose:

    .venv/bin/python -m tests.bench.bench_audit
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import redis

from service.audit.rebuild import audit_table
from service.eventlog.redis_store import RedisEventStore
from service.processes.redis_server import RedisServer
from service.rules.decide import CreateTable, Deal, Declare, Resolve, SeatPlayer
from service.rules.ruleset import resolve_ruleset
from service.tables import Tables

HANDS = 2000


def build(tables: Tables, table_id: str) -> None:
    clock = [datetime(2026, 11, 22, tzinfo=UTC)]

    def now() -> datetime:
        clock[0] += timedelta(milliseconds=5)
        return clock[0]

    tables.now = now
    rules = resolve_ruleset("three-card")
    tables.execute(table_id, CreateTable(table_id, rules), create=True)
    for i in range(6):
        tables.execute(table_id, SeatPlayer(f"p{i}", 10**9))
    for n in range(HANDS):
        seed = hashlib.sha256(n.to_bytes(4, "big")).digest()
        tables.execute(table_id, Deal(seed))

        order = tables.load(table_id).hand.order
        for k, seat in enumerate(order):
            decision = "in" if (n + k) % 3 == 0 else "out"
            tables.execute(table_id, Declare(seat, decision))
        tables.execute(table_id, Resolve())


def main() -> None:
    with RedisServer() as server:
        client = redis.Redis.from_url(server.url)
        tables = Tables(RedisEventStore(client))
        build(tables, "bench")
        best = min(
            (audit_table(tables.store, "bench") for _ in range(3)), key=lambda r: r["duration_ms"]
        )
        assert best["ok"], best
        rate = best["events_per_second"]
        print(
            f"audit replay: {best['events_checked']:,} events in {best['duration_ms']:.0f} ms "
            f"= {rate:,.0f} events/s (goal >= 50,000: {'MET' if rate >= 50_000 else 'NOT MET'})"
        )


if __name__ == "__main__":
    main()
