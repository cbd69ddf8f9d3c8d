"""One API node against two, on the same machine, one Redis and one PostgreSQL. Run on purpose:

    .venv/bin/python -m tests.bench.bench_nodes [--seconds 20]

Each round runs `guts serve` node(s) (2 web workers each, their dispatcher and worker), sets
up 8 tables, and lets 16 clients send random commands (deal, declare, resolve, top-up; each
with its own Idempotency-Key) to random nodes for a fixed time (the load of
`tests/test_nodes.py`). Reported per round: commands/s, the game's refusals (409: wrong phase,
already declared), p50/p99, and the CPU seconds every process of the node(s) used per 1,000
commands (read from /proc before and after), whose ratio two nodes / one node is the
per-request cost of a second node. The machine has 2 cores: two nodes cannot be faster, the
point is that they are correct (tests/test_nodes.py) and cost no more per request. Rounds
alternate one, two, one, two.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import redis

from service.redis_server import RedisServer
from tests.postgres import fresh_database
from tests.test_cli import AUDITOR_KEY, Served, _env
from tests.test_nodes import Load, set_up

CLIENTS, TABLES = 16, 8
TICKS = os.sysconf("SC_CLK_TCK")


def _tree(root: int) -> list[int]:
    """`root` and every process under it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def _cpu_s(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime + stime
    return total / TICKS


def round_(count: int, redis_url: str, database_url: str, seconds: float) -> dict[str, float]:
    redis.Redis.from_url(redis_url).flushall()
    env = _env(REDIS_URL=redis_url, GUTS_DATABASE_URL=database_url, GUTS_AUDITOR_KEYS=AUDITOR_KEY)
    env["GUTS_LOG_LEVEL"] = "warning"
    with tempfile.TemporaryDirectory() as tmp:
        nodes = [Served(Path(tmp) / f"n{n}", Path(tmp), env) for n in range(count)]
        try:
            for node in nodes:
                node.wait_healthy(said=False)
            load = Load(set_up(nodes, TABLES))
            pids = [pid for node in nodes for pid in _tree(node.process.pid)]
            before = _cpu_s(pids)
            deadline = time.monotonic() + seconds
            started = time.monotonic()

            def client(seed: int) -> None:
                while time.monotonic() < deadline:
                    load.client(nodes, seed, 20)
                    seed += 1000

            with ThreadPoolExecutor(CLIENTS) as pool:
                list(pool.map(client, range(CLIENTS)))
            took = time.monotonic() - started
            cpu = _cpu_s(pids) - before
        finally:
            for node in nodes:
                node.kill()
    done = len(load.latencies)
    lat = sorted(load.latencies)
    return {
        "rate": done / took,
        "refused": sum(load.refused.values()) / done,
        "p50": lat[done // 2] * 1000,
        "p99": lat[int(done * 0.99)] * 1000,
        "cpu_per_1000": cpu / done * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    results: dict[int, list[dict[str, float]]] = {1: [], 2: []}
    with RedisServer() as server, fresh_database() as database_url:
        for count in (1, 2, 1, 2):
            got = round_(count, server.url, database_url, args.seconds)
            results[count].append(got)
            print(
                f"{count} node(s): {got['rate']:.0f} commands/s, {got['refused']:.0%} refused "
                f"(409), p50 {got['p50']:.1f} ms, p99 {got['p99']:.1f} ms, "
                f"{got['cpu_per_1000']:.2f} CPU s per 1,000 commands",
                flush=True,
            )
    one = {k: statistics.median(r[k] for r in results[1]) for k in results[1][0]}
    two = {k: statistics.median(r[k] for r in results[2]) for k in results[2][0]}
    print(
        f"two nodes / one (medians): throughput {two['rate'] / one['rate']:.2f}x, "
        f"p99 {two['p99'] / one['p99']:.2f}x, CPU per command "
        f"{two['cpu_per_1000'] / one['cpu_per_1000']:.2f}x"
    )


if __name__ == "__main__":
    main()
