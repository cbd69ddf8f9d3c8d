"""Fan-out benchmark: 10,000 live subscribers on one node, against 1,000 in the same run.

Run from the repository root (not part of pytest)::

    .venv/bin/python -m tests.bench.bench_fanout [--rate 50] [--seconds 30]

In one run it starts a private redis-server and the service under gunicorn with the settings
``guts serve`` uses (2 gevent workers; the stream capacity and worker connections are its
defaults, from ``GUTS_WORKER_CONNECTIONS``), creates 1,000 tables with a player each, then
measures two shapes, one after the other on the same node:

- the baseline: 1,000 subscribers, 10 on each of 100 tables;
- the target: 10,000 subscribers, 10 on each of 1,000 tables.

For each shape the subscribers open (``CLIENTS`` processes of raw asyncio sockets,
``tests/bench/fanout_clients.py``, so the client side is not the bottleneck), the workers'
resident memory is taken once they are open and idle (per subscriber: its growth over the
workers' memory before the first stream of the run was opened), then commands are made at a
steady `--rate` (a sit-out or sit-in, round robin over the shape's tables) for `--seconds`,
and every subscriber's delivery time of every event is its receipt's time minus the event's
``at`` (the server's clock when it was decided). Each subscriber counts what it received
against what its table appended (drops) and any version not the one after the last (reorders).
The open-stream gauge of ``/metrics`` is checked to be the number open, then 0 after closing.

Goals for the target shape: delivery p99 <= 100 ms, <= 40 KB per idle subscriber, none
dropped or reordered, none refused (the capacity holds them), commands answered meanwhile.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psutil
import requests

from tests.bench import fanout_clients
from tests.bench.bench_http import OPERATOR_KEY, services

PER_TABLE = 10
CLIENTS = 4
"""Client processes the subscribers are spread over."""


@dataclass
class Figures:
    """One shape's measurements."""

    subscribers: int
    tables: int
    opened: int
    refused: int
    per_subscriber_kb: float
    p50_ms: float
    p99_ms: float
    receipts: int
    dropped: int
    reordered: int
    command_p99_ms: float
    gauge_open: float
    gauge_after: float


class Clients:
    """The client processes, each with a pipe."""

    def __init__(self, base: str, count: int) -> None:
        parts = urlsplit(base)
        context = multiprocessing.get_context("spawn")
        self.pipes = []
        self.processes = []
        for _ in range(count):
            mine, theirs = context.Pipe()
            process = context.Process(
                target=fanout_clients.run,
                args=(theirs, parts.hostname, parts.port, OPERATOR_KEY),
                daemon=True,
            )
            process.start()
            self.pipes.append(mine)
            self.processes.append(process)

    def open(self, subscriptions: list[tuple[str, int]]) -> tuple[list[str], list[str]]:
        for n, pipe in enumerate(self.pipes):
            pipe.send(("open", subscriptions[n :: len(self.pipes)]))
        failed: list[str] = []
        refused: list[str] = []
        for pipe in self.pipes:
            f, r = pipe.recv()
            failed += f
            refused += r
        return failed, refused

    def close(self) -> list[fanout_clients.Received]:
        for pipe in self.pipes:
            pipe.send(("close", None))
        return [got for pipe in self.pipes for got in pipe.recv()]

    def stop(self) -> None:
        for pipe in self.pipes:
            with contextlib.suppress(OSError):
                pipe.send(("exit", None))
        for process in self.processes:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()


def _workers_rss(master_pid: int) -> int:
    """Resident memory of the gunicorn master's workers."""
    return sum(child.memory_info().rss for child in psutil.Process(master_pid).children())


def _gauge(base: str) -> float:
    text = requests.get(f"{base}/metrics", timeout=10).text
    found = re.search(r"^guts_open_streams (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else -1.0


def _wait_gauge(base: str, expected: int, within_s: float) -> float:
    deadline = time.monotonic() + within_s
    while (value := _gauge(base)) != expected and time.monotonic() < deadline:
        time.sleep(0.5)
    return value


def _percentile(values: list[float], share: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


class Tables:
    """The run's tables, their current versions, and whether their player sits out."""

    def __init__(self, base: str, count: int) -> None:
        self.base = base
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {OPERATOR_KEY}"
        with ThreadPoolExecutor(8) as pool:
            made = list(pool.map(lambda _: self._make(), range(count)))
        self.ids = [table for table, _ in made]
        self.version = dict(made)
        self.out = dict.fromkeys(self.ids, False)

    def _make(self) -> tuple[str, int]:
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {OPERATOR_KEY}"
        made = session.post(f"{self.base}/v1/tables", json={"preset": "three-card"})
        made.raise_for_status()
        table = made.json()["table_id"]
        seated = session.post(
            f"{self.base}/v1/tables/{table}/players", json={"player_id": "a", "buy_in": 100}
        )
        seated.raise_for_status()
        return table, int(session.get(f"{self.base}/v1/tables/{table}").json()["version"])

    def command(self, table: str) -> float:
        """Sit the table's player out or in; the command's time, ms."""
        action = "sit-in" if self.out[table] else "sit-out"
        started = time.monotonic()
        answer = self.session.post(f"{self.base}/v1/tables/{table}/players/0/{action}")
        answer.raise_for_status()
        self.version[table] = int(answer.json()["version"])
        self.out[table] = not self.out[table]
        return (time.monotonic() - started) * 1000


def measure(
    shape: str, tables: Tables, count: int, clients: Clients, master: int, rss0: int, args: Any
) -> Figures:
    """Open `PER_TABLE` streams on each of the first `count` tables, drive events, close."""
    chosen = tables.ids[:count]
    subscriptions = [(t, tables.version[t]) for t in chosen for _ in range(PER_TABLE)]
    started = time.monotonic()
    failed, refused = clients.open(subscriptions)
    print(
        f"[{shape}] {len(subscriptions)} streams opened in {time.monotonic() - started:.1f} s; "
        f"failed {len(failed)} {failed[:1]}, refused {len(refused)} {refused[:1]}"
    )
    gauge_open = _wait_gauge(tables.base, len(subscriptions) - len(refused) - len(failed), 30)
    time.sleep(3)  # open and idle
    rss = _workers_rss(master)
    per_sub = (rss - rss0) / len(subscriptions) / 1024
    print(f"[{shape}] workers {rss0 / 2**20:.1f} MB -> {rss / 2**20:.1f} MB idle")
    command_ms = []
    period = 1 / args.rate
    next_at = time.monotonic()
    for n in range(int(args.rate * args.seconds)):
        command_ms.append(tables.command(chosen[n % len(chosen)]))
        next_at += period
        time.sleep(max(0.0, next_at - time.monotonic()))
    time.sleep(2)
    print(f"[{shape}] workers {_workers_rss(master) / 2**20:.1f} MB after the deliveries")
    received = clients.close()
    delays = [d for got in received for d in got.delays_ms]
    dropped = sum(
        max(0, tables.version[got.table] - got.after - got.count) for got in received if got.opened
    )
    gauge_after = _wait_gauge(tables.base, 0, 60)
    return Figures(
        subscribers=len(subscriptions),
        tables=count,
        opened=sum(got.opened for got in received),
        refused=len(refused),
        per_subscriber_kb=per_sub,
        p50_ms=_percentile(delays, 0.5),
        p99_ms=_percentile(delays, 0.99),
        receipts=len(delays),
        dropped=dropped,
        reordered=sum(got.disorder for got in received),
        command_p99_ms=_percentile(command_ms, 0.99),
        gauge_open=gauge_open,
        gauge_after=gauge_after,
    )


@contextlib.contextmanager
def _node(workdir: Path) -> Iterator[tuple[str, int]]:
    pids: dict[str, int] = {}
    with services(workdir, {"service": ""}, pids=pids) as (urls, _baseline):
        yield urls["service"], pids["service"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=50.0, help="events a second (default 50)")
    parser.add_argument("--seconds", type=float, default=30.0, help="of events per shape")
    parser.add_argument("--tables", type=int, default=1000, help="of the target shape")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="guts-bench-fanout-"))
    clients = None
    try:
        with _node(workdir) as (base, master):
            started = time.monotonic()
            tables = Tables(base, args.tables)
            print(f"{args.tables} tables made in {time.monotonic() - started:.1f} s")
            clients = Clients(base, CLIENTS)
            rss0 = _workers_rss(master)
            baseline = measure("1,000", tables, args.tables // 10, clients, master, rss0, args)
            _print("baseline", baseline)
            target = measure("10,000", tables, args.tables, clients, master, rss0, args)
            _print("target", target)
            log = (workdir / "service.log").read_text(errors="replace").splitlines()
            for line in [x for x in log if "Traceback" in x or '"level":"error"' in x][:3]:
                print(line[:400])
    finally:
        if clients is not None:
            clients.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return _verdict(baseline, target)


def _print(label: str, f: Figures) -> None:
    print(
        f"{label}: {f.subscribers} subscribers on {f.tables} tables ({f.opened} opened, "
        f"{f.refused} refused): delivery p50 {f.p50_ms:.1f} ms, p99 {f.p99_ms:.1f} ms over "
        f"{f.receipts} receipts; {f.per_subscriber_kb:.1f} KB per idle subscriber; dropped "
        f"{f.dropped}, reordered {f.reordered}; command p99 {f.command_p99_ms:.1f} ms; "
        f"open-stream gauge {f.gauge_open:g} open, {f.gauge_after:g} after closing"
    )


def _verdict(baseline: Figures, target: Figures) -> int:
    print(
        f"target / baseline: p99 {target.p99_ms / baseline.p99_ms:.2f}x, memory per idle "
        f"subscriber {target.per_subscriber_kb / baseline.per_subscriber_kb:.2f}x"
    )
    met = (
        target.p99_ms <= 100
        and target.per_subscriber_kb <= 40
        and target.dropped == target.reordered == target.refused == 0
        and target.opened == target.subscribers
    )
    print("goals met" if met else "goals MISSED")
    return 0 if met else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    raise SystemExit(main())
