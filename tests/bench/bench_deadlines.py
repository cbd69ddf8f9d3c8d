"""Deadline precision: how late does the platform act after a hand's deadline, healthy and in
the fault cases of "Time you can trust", all in one run?

Starts a private Redis (append-only, fsync every second as `guts serve`'s embedded one;
``--fsync always`` to fsync every write) and two `guts dispatch` processes, deals
hands nobody declares in (deadlines spread over time), and measures lateness = the platform's
close event time - the deadline, read from the log. Then the same with, in turn:

- a backlog of 2,000 stale index entries ahead of the live deadlines;
- a table whose log no longer loads at the head of the index;
- one dispatcher killed with -9 (the other carries on);
- Redis killed with -9 and restarted on its port (the dispatchers reconnect by themselves).

Goals: p99 < 50 ms healthy, < 1 s in each fault case. Run on purpose:

    .venv/bin/python -m tests.bench.bench_deadlines
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime

import redis

from service.eventlog.due_index import DueIndex
from service.eventlog.redis_store import RedisEventStore
from service.processes.redis_server import RedisServer
from service.rules.decide import CreateTable, Deal, SeatPlayer
from service.rules.ruleset import resolve_ruleset
from service.rules.times import parse_iso
from service.tables import Tables
from tests.tampering import unloadable

HANDS = 60
SPACING_S = 0.05
TIMEOUT_S = 2


class Bench:
    def __init__(self, server: RedisServer) -> None:
        self.server = server
        self.dispatchers: list[subprocess.Popen[bytes]] = []
        self.count = 0
        self.connect()

    def connect(self) -> None:
        self.client = redis.Redis.from_url(self.server.url)
        self.index = DueIndex(self.client)
        self.tables = Tables(RedisEventStore(self.client), index=self.index)

    def start_dispatcher(self) -> None:
        env = {**os.environ, "REDIS_URL": self.server.url}
        self.dispatchers.append(
            subprocess.Popen(
                [sys.executable, "-m", "service.cli", "dispatch"],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )

    def table(self) -> str:
        self.count += 1
        table_id = f"t{self.count}"
        rules = resolve_ruleset("three-card", {"decision_timeout_s": TIMEOUT_S})
        self.tables.execute(table_id, CreateTable(table_id, rules), create=True)
        for p in range(2):
            self.tables.execute(table_id, SeatPlayer(f"p{p}", 100))
        return table_id

    def deal(self, table_id: str) -> datetime:
        result = self.tables.execute(table_id, Deal(os.urandom(32)))
        assert result.state is not None and result.state.hand is not None
        return parse_iso(result.state.hand.deadline)

    def live(self, hands: int = HANDS, ahead: Callable[[float], None] | None = None) -> list[float]:
        """Deal `hands` silent hands, SPACING_S apart; lateness of each close (ms). `ahead`
        is called with the first deadline (epoch s) once the first hand is dealt, to put
        trouble in the index just ahead of it."""
        ids = [self.table() for _ in range(hands)]
        deadlines = {}
        for table_id in ids:
            deadlines[table_id] = self.deal(table_id)
            if ahead is not None and len(deadlines) == 1:
                ahead(deadlines[table_id].timestamp())
            time.sleep(SPACING_S)
        time.sleep(TIMEOUT_S + 2)
        lateness = []
        for table_id in ids:
            closes = [
                e for _, e in self.tables.events(table_id) if getattr(e, "by", "") == "platform"
            ]
            if not closes:
                lateness.append(float("inf"))
                continue
            late = (parse_iso(closes[0].at) - deadlines[table_id]).total_seconds()
            lateness.append(late * 1000)
        return lateness

    def stop(self) -> None:
        for process in self.dispatchers:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.dispatchers:
            process.wait(20)


def _report(name: str, goal_ms: float, lateness: list[float]) -> bool:
    ms = sorted(lateness)
    q = statistics.quantiles(ms, n=100, method="inclusive")
    early = sum(1 for x in ms if x < 0)
    met = q[98] < goal_ms and early == 0
    print(
        f"{name:<34} n={len(ms):<4} p50 {q[49]:7.1f}  p99 {q[98]:7.1f}  max {ms[-1]:7.1f} ms  "
        f"early {early}  goal p99 < {goal_ms:.0f} ms: {'MET' if met else 'NOT MET'}"
    )
    return met


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fsync", choices=["everysec", "always"], default="everysec")
    fsync = parser.parse_args().fsync
    print(
        f"bench_deadlines {datetime.now(UTC):%Y-%m-%d %H:%M}Z: {HANDS} hands per case, "
        f"deadlines {SPACING_S * 1000:.0f} ms apart, 2 dispatchers, Redis AOF fsync {fsync}"
    )
    with tempfile.TemporaryDirectory() as data:
        server = RedisServer(data_dir=data, appendonly=True, appendfsync=fsync).start()
        bench = Bench(server)
        try:
            bench.start_dispatcher()
            bench.start_dispatcher()
            time.sleep(1.0)
            results = [_report("healthy", 50, bench.live())]

            def backlog(first: float) -> None:  # due 1 ms before the first live deadline
                stale = {f"stale-{i}": first - 0.001 for i in range(2000)}
                bench.client.zadd(bench.index.index_key, stale)

            results.append(_report("2,000 stale entries ahead", 1000, bench.live(ahead=backlog)))

            bad = bench.table()
            bench.deal(bad)
            unloadable(bench.client, bad)

            def poison(first: float) -> None:
                bench.client.zadd(bench.index.index_key, {bad: first - 0.001})

            results.append(_report("a corrupt table at the head", 1000, bench.live(ahead=poison)))

            def kill_one(first: float) -> None:
                bench.dispatchers[0].send_signal(signal.SIGKILL)
                bench.dispatchers[0].wait()

            results.append(_report("a dispatcher killed -9", 1000, bench.live(ahead=kill_one)))
            bench.start_dispatcher()

            port = server.port
            assert server.pid is not None
            os.kill(server.pid, signal.SIGKILL)
            time.sleep(0.5)
            server.stop()
            server = RedisServer(port=port, data_dir=data, appendonly=True, appendfsync=fsync)
            server.start()
            bench.server = server
            bench.connect()
            results.append(_report("after Redis killed -9, restarted", 1000, bench.live()))
        finally:
            bench.stop()
            server.stop()
    print("all goals MET" if all(results) else "some goal NOT MET")


if __name__ == "__main__":
    main()
