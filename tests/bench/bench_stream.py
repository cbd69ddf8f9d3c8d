"""Live feed benchmark: 1,000 subscribers on 100 tables, against a bare Redis reader.

Run from the repository root (not part of pytest; needs ``wrk`` for the throughput part)::

    .venv/bin/python -m tests.bench.bench_stream

In one run it starts what ``bench_http`` starts (a private redis-server, the service under
gunicorn with the settings ``guts serve`` uses, the baseline app), creates 100 tables and opens
10 streams on each (1,000 in all, from one asyncio loop in this process), plus one bare Redis
reader: a single connection doing ``XREAD BLOCK`` on the 100 tables' streams. It then makes
commands on the tables (a sit-out or sit-in, round robin, a few per second) and for every event
takes the time from just before its command was sent to its receipt, by each subscriber and by
the bare reader: p50 and p99 of both, in the same run.

Then memory: the service workers' resident memory before the streams were opened and with
them open and idle, per subscriber. And command throughput: ``bench_http``'s declare load
with the 1,000 streams open and with them closed, in alternating rounds.

Goals: stream p99 <= 100 ms and <= 3x the bare reader's; throughput with the streams open >=
0.8x without; memory per idle subscriber < 50 KB.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import redis
import redis.asyncio as aioredis
import requests

from service.eventlog.redis_store import RedisEventStore
from tests.bench.bench_http import OPERATOR_KEY, run_wrk, setup_tables, targets

TABLES = 100
PER_TABLE = 10
COMMANDS = 400
RATE_PER_S = 8.0


class Fleet:
    """The subscribers and the bare reader, on one asyncio loop in a thread of their own;
    each receipt is kept as (who, table, version) -> time."""

    def __init__(self, base: str, redis_url: str, tables: list[str], after: dict[str, int]):
        self.base = base
        self.redis_url = redis_url
        self.tables = tables
        self.after = after
        self.received: dict[tuple[str, str, int], float] = {}
        self.opened = 0
        self.refused: list[str] = []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.tasks: list[asyncio.Future[Any]] = []

    def start(self) -> None:
        self.thread.start()
        for table in self.tables:
            for n in range(PER_TABLE):
                self.tasks.append(
                    asyncio.run_coroutine_threadsafe(self.subscriber(f"s{n}", table), self.loop)
                )
        self.tasks.append(asyncio.run_coroutine_threadsafe(self.bare_reader(), self.loop))

    async def subscriber(self, name: str, table: str) -> None:
        host, port = self.base.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(
            f"GET /v1/tables/{table}/stream?after={self.after[table]} HTTP/1.1\r\n"
            f"Host: bench\r\nAuthorization: Bearer {OPERATOR_KEY}\r\n"
            "Accept: text/event-stream\r\n\r\n".encode()
        )
        await writer.drain()
        self.opened += 1
        status = await reader.readline()
        if b" 200 " not in status:
            body = await reader.read(2000)
            self.refused.append((status + body).decode(errors="replace")[-300:])
            return
        while line := await reader.readline():
            if line.startswith(b"id: "):
                self.received[(name, table, int(line[4:]))] = time.time()

    async def bare_reader(self) -> None:
        client = aioredis.Redis.from_url(self.redis_url)
        store = RedisEventStore(redis.Redis.from_url(self.redis_url))
        keys = {store.events_key(t): f"{self.after[t]}-0".encode() for t in self.tables}
        names = {store.events_key(t): t for t in self.tables}
        while True:
            replies = await client.xread(keys, block=1000)  # type: ignore[arg-type]
            now = time.time()
            for key, entries in replies or []:
                for entry_id, _ in entries:
                    version = int(entry_id.split(b"-")[0])
                    self.received[("bare", names[key], version)] = now
                    keys[key] = entry_id

    @property
    def running(self) -> bool:
        """Whether the subscribers are open (started and not stopped)."""
        return self.thread.is_alive()

    def stop(self) -> None:
        """Cancel every subscriber and the reader, wait until they are done, stop the loop."""
        if not self.running:
            return

        async def cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(cancel_all(), self.loop).result(timeout=60)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)


def _workers_rss(port: str) -> int:
    """Resident memory of the service's gunicorn workers (the children of its master)."""
    total = 0
    for process in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(process.info["cmdline"] or [])
        if "service.wsgi:app" in cmdline and f":{port}" in cmdline:
            total += sum(child.memory_info().rss for child in process.children())
    return total


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2, help="throughput rounds (each pair)")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="guts-bench-stream-"))
    try:
        redis_urls: list[str] = []
        with targets(workdir, redis_urls) as (service_url, _baseline_url):
            (redis_url,) = redis_urls
            session = requests.Session()
            session.headers["Authorization"] = f"Bearer {OPERATOR_KEY}"
            tables, after = [], {}
            for _ in range(TABLES):
                made = session.post(f"{service_url}/v1/tables", json={"preset": "three-card"})
                table = made.json()["table_id"]
                session.post(
                    f"{service_url}/v1/tables/{table}/players",
                    json={"player_id": "a", "buy_in": 100},
                )
                tables.append(table)
                after[table] = int(
                    session.get(f"{service_url}/v1/tables/{table}").json()["version"]
                )
            port = service_url.rsplit(":", 1)[1]
            rss_before = _workers_rss(port)
            fleet = Fleet(service_url, redis_url, tables, after)
            fleet.start()
            deadline = time.monotonic() + 60
            while fleet.opened < TABLES * PER_TABLE and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(3)  # connected and idle
            rss_open = _workers_rss(port)
            sent: dict[tuple[str, int], float] = {}
            out = dict.fromkeys(tables, False)
            for n in range(COMMANDS):
                table = tables[n % TABLES]
                action = "sit-in" if out[table] else "sit-out"
                started = time.time()
                answer = session.post(f"{service_url}/v1/tables/{table}/players/0/{action}")
                answer.raise_for_status()
                sent[(table, int(answer.json()["version"]))] = started
                out[table] = not out[table]
                time.sleep(max(0.0, started + 1 / RATE_PER_S - time.time()))
            time.sleep(2)
            failed = [t.exception() for t in fleet.tasks if t.done()]
            print(f"streams ended early: {len(failed)}; refused: {len(fleet.refused)}")
            for answer in fleet.refused[:1]:
                print(answer)
            log = (workdir / "service.log").read_text(errors="replace").splitlines()
            for line in [x for x in log if "store unavailable" in x or "Traceback" in x][:3]:
                print(line[:400])
            heard = {(name, table) for name, table, _ in fleet.received if name != "bare"}
            print(f"subscribers that received events: {len(heard)} of {TABLES * PER_TABLE}")
            stream_ms, bare_ms, missing = [], [], 0
            for (table, version), started in sent.items():
                for name in [f"s{n}" for n in range(PER_TABLE)] + ["bare"]:
                    got = fleet.received.get((name, table, version))
                    if got is None:
                        missing += 1
                        continue
                    (bare_ms if name == "bare" else stream_ms).append((got - started) * 1000)
            throughput = []
            for number in range(1, args.rounds + 1):
                for label in ("open", "closed") if number % 2 else ("closed", "open"):
                    if label == "closed" and fleet.running:
                        fleet.stop()
                        time.sleep(12)  # the server notices at its next keep-alive
                    if label == "open" and not fleet.running:
                        fleet = Fleet(service_url, redis_url, tables, after)
                        fleet.start()
                        time.sleep(5)
                    wrk_tables = setup_tables(service_url)
                    m = run_wrk(f"{label}{number}", service_url, "hands", wrk_tables, workdir)
                    throughput.append((label, m))
            fleet.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return _report(stream_ms, bare_ms, missing, rss_before, rss_open, throughput)


def _report(
    stream_ms: list[float],
    bare_ms: list[float],
    missing: int,
    rss_before: int,
    rss_open: int,
    throughput: list[tuple[str, Any]],
) -> int:
    p50, p99 = _percentile(stream_ms, 0.5), _percentile(stream_ms, 0.99)
    b50, b99 = _percentile(bare_ms, 0.5), _percentile(bare_ms, 0.99)
    per_sub = (rss_open - rss_before) / (TABLES * PER_TABLE)
    print(
        f"receipts: {len(stream_ms)} by subscribers, {len(bare_ms)} by the bare reader, "
        f"{missing} missing"
    )
    print(f"stream latency: p50 {p50:.1f} ms, p99 {p99:.1f} ms")
    print(
        f"bare XREAD:     p50 {b50:.1f} ms, p99 {b99:.1f} ms  (stream p99 / bare p99 = "
        f"{p99 / b99:.2f})"
    )
    print(
        f"memory per idle subscriber: {per_sub / 1024:.1f} KB "
        f"(workers {rss_before / 2**20:.1f} MB -> {rss_open / 2**20:.1f} MB)"
    )
    rates: dict[str, list[float]] = {"open": [], "closed": []}
    for label, m in throughput:
        rates[label].append(m.rate)
        print(f"declare throughput with the streams {label}: {m.rate:.0f}/s")
    ratio = 1.0
    if throughput:
        ratio = statistics.median(rates["open"]) / statistics.median(rates["closed"])
    print(f"throughput open / closed = {ratio:.2f}")
    met = p99 <= 100 and p99 <= 3 * b99 and ratio >= 0.8 and per_sub < 50 * 1024 and not missing
    print("goals met" if met else "goals MISSED")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
