"""One API node against two, on the same machine, one Redis and one PostgreSQL. Run on purpose:

    .venv/bin/python -m tests.bench.bench_nodes [--seconds 20] [--rounds 2]

Each round runs `guts serve` node(s) (web workers, dispatcher and RQ worker each), sets up 8
tables, and lets 16 clients send random commands (deal, declare, resolve, top-up; each with
its own Idempotency-Key) to random nodes for a fixed time (the load of `tests/test_nodes.py`).
Reported per round: commands/s, the game's refusals (409: wrong phase, already declared),
the version conflicts (appends that lost the race to a command on another node or worker and
were decided again: ``guts_version_conflicts_total``), p50/p99, and the CPU seconds the
node(s)' processes used per 1,000 commands (read from /proc before and after), in all and by
kind (gunicorn, dispatch, worker, serve), and the CPU the host took (steal). The configurations
take turns: one node with 2 web workers (the baseline), two nodes with 1 each (the same web
capacity: what a second node itself costs), two nodes with 2 each, and one node with 4 (to
tell what more web workers cost on 2 cores from what a second node costs). The machine has 2
cores: two nodes cannot be faster; the point is that they are correct (tests/test_nodes.py)
and cost no more per request.
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
import requests

from service.processes.redis_server import RedisServer
from tests.bench.bench_http import CpuTimes
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


def _cpu_s(pids: list[int]) -> dict[str, float]:
    """CPU seconds each kind of process has used (by :func:`_role`)."""
    used: dict[str, float] = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            name = _role(pid)
        except OSError:
            continue
        used[name] = used.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / TICKS
    return used


def _role(pid: int) -> str:
    """What the process is, by its name (`guts serve`'s forks: ``guts dispatch``, ``guts
    worker``), else by its command line."""
    name = Path(f"/proc/{pid}/comm").read_text().strip()
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    for word in ("dispatch", "worker"):
        if name == f"guts {word}":
            return word
    for word in ("gunicorn", "serve"):
        if word in cmdline:
            return word
    return "other"


def _conflicts(nodes: list[Served]) -> float:
    """The appends that lost the race to another command, over all the nodes' web workers
    (``guts_version_conflicts_total`` on /metrics)."""
    total = 0.0
    for node in nodes:
        text = requests.get(node.base + "/metrics", timeout=10).text
        for line in text.splitlines():
            if line.startswith("guts_version_conflicts_total "):
                total += float(line.split()[1])
    return total


def _booted(nodes: list[Served], web: int) -> list[int]:
    """The processes of `nodes` once each has its gunicorn master and `web` workers."""
    deadline = time.monotonic() + 30
    while True:
        pids = [pid for node in nodes for pid in _tree(node.process.pid)]
        names = []
        for pid in pids:
            try:
                names.append(_role(pid))
            except OSError:
                continue  # (gone)
        if names.count("gunicorn") >= len(nodes) * (web + 1):
            time.sleep(1)  # (its app imported)
            return pids
        if time.monotonic() > deadline:
            raise RuntimeError(f"gunicorn did not start {web} workers in 30 s")
        time.sleep(0.1)


def round_(
    count: int, web: int, redis_url: str, database_url: str, seconds: float
) -> dict[str, float]:
    redis.Redis.from_url(redis_url).flushall()
    env = _env(
        REDIS_URL=redis_url,
        GUTS_DATABASE_URL=database_url,
        GUTS_AUDITOR_KEYS=AUDITOR_KEY,
        GUTS_WEB_WORKERS=str(web),
    )
    env["GUTS_LOG_LEVEL"] = "warning"
    with tempfile.TemporaryDirectory() as tmp:
        nodes = [Served(Path(tmp) / f"n{n}", Path(tmp), env) for n in range(count)]
        try:
            for node in nodes:
                node.wait_healthy(said=False)
            load = Load(set_up(nodes, TABLES))
            pids = _booted(nodes, web)  # (gunicorn forks its workers a moment apart)
            before = _cpu_s(pids)
            machine = CpuTimes.now()
            lost = _conflicts(nodes)
            deadline = time.monotonic() + seconds
            started = time.monotonic()

            def client(seed: int) -> None:
                while time.monotonic() < deadline:
                    load.client(nodes, seed, 20)
                    seed += 1000

            with ThreadPoolExecutor(CLIENTS) as pool:
                list(pool.map(client, range(CLIENTS)))
            took = time.monotonic() - started
            after = _cpu_s(pids)
            stolen = CpuTimes.now()
            lost = _conflicts(nodes) - lost
            cpu = {role: after[role] - before.get(role, 0.0) for role in after}
        finally:
            for node in nodes:
                node.kill()
    done = len(load.latencies)
    lat = sorted(load.latencies)
    return {
        "rate": done / took,
        "refused": sum(load.refused.values()) / done,
        "conflicts": lost / done,
        "p50": lat[done // 2] * 1000,
        "p99": lat[int(done * 0.99)] * 1000,
        "cpu_per_1000": sum(cpu.values()) / done * 1000,
        "steal": (stolen - machine).steal_s / (took * (os.cpu_count() or 1))
        if stolen and machine
        else 0.0,
        **{f"{role} cpu_per_1000": used / done * 1000 for role, used in sorted(cpu.items())},
    }


CONFIGS = {
    "one node, 2 web workers": (1, 2),
    "two nodes, 1 web worker each": (2, 1),
    "two nodes, 2 web workers each": (2, 2),
    "one node, 4 web workers": (1, 4),
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=2, help="rounds of each configuration")
    args = parser.parse_args()
    results: dict[str, list[dict[str, float]]] = {name: [] for name in CONFIGS}
    with RedisServer() as server, fresh_database() as database_url:
        for _ in range(args.rounds):
            for name, (count, web) in CONFIGS.items():
                got = round_(count, web, server.url, database_url, args.seconds)
                results[name].append(got)
                roles = ", ".join(
                    f"{k.split()[0]} {v:.2f}" for k, v in got.items() if k.endswith(" cpu_per_1000")
                )
                print(
                    f"{name}: {got['rate']:.0f} commands/s, {got['refused']:.0%} refused (409),"
                    f" {got['conflicts']:.1%} lost a race and were decided again,"
                    f" p50 {got['p50']:.1f} ms, p99 {got['p99']:.1f} ms, "
                    f"{got['cpu_per_1000']:.2f} CPU s per 1,000 commands ({roles}); the host "
                    f"took {got['steal']:.0%} of the CPU",
                    flush=True,
                )
    medians = {
        name: {k: statistics.median(r.get(k, 0.0) for r in rounds) for k in rounds[0]}
        for name, rounds in results.items()
    }
    one = medians["one node, 2 web workers"]
    for name, got in list(medians.items())[1:]:
        print(
            f"{name} / one node (medians): throughput {got['rate'] / one['rate']:.2f}x, "
            f"p99 {got['p99'] / one['p99']:.2f}x, CPU per command "
            f"{got['cpu_per_1000'] / one['cpu_per_1000']:.2f}x"
        )


if __name__ == "__main__":
    main()
