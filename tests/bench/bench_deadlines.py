"""Deadline precision: how late is the close after a hand's declaration deadline?

Starts a private Redis and `guts worker` processes (RQ with the scheduler, plus the backstop),
deals HANDS hands nobody declares in, with deadlines spread so a worker is free for each, and
measures lateness = close event time - deadline, read from the log. Run on purpose:

    .venv/bin/python -m tests.bench.bench_deadlines
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime

import redis

from service.eventlog.redis_store import RedisEventStore
from service.redis_server import RedisServer
from service.rules import commands
from service.rules.ruleset import resolve_ruleset
from service.rules.times import parse_iso
from service.tables import Tables
from workers import scheduling

HANDS = 200
WORKERS = 6
SPACING_S = 0.4
TIMEOUT_S = 3


def _ok(state, events):
    return 200, {}


def main() -> None:
    with RedisServer() as server:
        env = {**os.environ, "REDIS_URL": server.url}
        workers = [
            subprocess.Popen(
                [sys.executable, "-m", "service.cli", "worker"],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for _ in range(WORKERS)
        ]
        client = redis.Redis.from_url(server.url)
        tables = Tables(RedisEventStore(client), follow_ups=scheduling.follow_ups(client))
        try:
            rules = resolve_ruleset("three-card", {"decision_timeout_s": TIMEOUT_S})
            ids = [f"t{i}" for i in range(HANDS)]
            for table_id in ids:
                tables.execute(
                    table_id,
                    lambda s, n, t=table_id: commands.create_table(t, rules, n),
                    _ok,
                    create=True,
                )
                for p in range(2):
                    tables.execute(
                        table_id, lambda s, n, p=p: commands.seat_player(s, f"p{p}", 100, n), _ok
                    )
            time.sleep(2)  # let a worker take the scheduler lock
            deadlines = {}
            for table_id in ids:
                result = tables.execute(
                    table_id, lambda s, n: commands.deal(s, os.urandom(32), n), _ok
                )
                deadlines[table_id] = parse_iso(result.state.hand.deadline)
                time.sleep(SPACING_S)
            time.sleep(TIMEOUT_S + 3)
            lateness = []
            for table_id in ids:
                closes = [
                    e for _, e in tables.events(table_id) if getattr(e, "by", "") == "platform"
                ]
                if not closes:
                    lateness.append(float("inf"))
                    continue
                lateness.append((parse_iso(closes[0].at) - deadlines[table_id]).total_seconds())
        finally:
            for w in workers:
                w.send_signal(signal.SIGTERM)
            for w in workers:
                w.wait(20)
    ms = sorted(x * 1000 for x in lateness)
    q = statistics.quantiles(ms, n=100, method="inclusive")
    early = sum(1 for x in ms if x < 0)
    print(
        f"{HANDS} hands, {WORKERS} workers, deadlines {SPACING_S}s apart, "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M}Z"
    )
    print(
        f"lateness ms: p50 {q[49]:.1f}  p95 {q[94]:.1f}  p99 {q[98]:.1f}  max {ms[-1]:.1f}  "
        f"(early closes: {early})"
    )
    print(f"goal p99 < 250 ms: {'MET' if q[98] < 250 else 'NOT MET'}")


if __name__ == "__main__":
    main()
