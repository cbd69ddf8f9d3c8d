"""Casino wallet benchmark: what a wallet-funded seat costs, and credits through an outage.

Run from the repository root (not part of pytest; about 6 minutes with the defaults)::

    .venv/bin/python -m tests.bench.bench_wallet [--seats 1000] [--credits 10000] [--down 120]

It starts `guts serve` (its own redis-server, the production wallet schedule: a credit retried
after 5 s, doubling, up to 1 h) and a local wallet that answers at once (the tests' wallet,
`tests/wallet_server.py`, made not idempotent so that a credit paid twice would show).

1. Seats: `--seats` plain seats and as many wallet-funded ones, interleaved, one at a time;
   p50, p90 and p99 of each, and the p50 of a signed wallet call made from this process (one wallet
   round trip, over a kept connection as the API's calls are), and how many connections the
   wallet accepted for the seats' debits. Goal: a wallet-funded seat costs one wallet round trip
   more than a plain seat (the debit; the records it writes are a few Redis round trips more).
2. Credits: `--credits` wallet-funded seats on tables of 6, then the wallet goes down (nothing
   listens on its port) and every table is ended (a credit per seat); after `--down` seconds
   the wallet comes back, and the run waits until no credit is pending (or 5 minutes). Goal:
   every credit confirmed within 5 minutes of the wallet's return, none paid twice.
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
from pathlib import Path
from typing import Any

import redis
import requests

from service.processes.redis_server import RedisServer, free_port
from service.projections.wallet_messages import call
from tests.wallet_server import TestWallet

KEY = "bench-operator-key"
SEATS_PER_TABLE = 6


class Bench:
    """`guts serve` on its own Redis, and a client of it."""

    def __init__(self, redis_url: str, workdir: Path) -> None:
        self.port = free_port()
        env = {k: v for k, v in os.environ.items() if k not in ("GUNICORN_CMD_ARGS",)}
        env.update(
            REDIS_URL=redis_url,
            GUTS_OPERATOR_KEYS=KEY,
            GUTS_LOG_LEVEL="warning",
            GUTS_DATA_DIR=str(workdir),
            GUTS_RATE_LIMIT_COMMANDS="",
            GUTS_RATE_LIMIT_KEYS="",
        )
        self.log = (workdir / "serve.log").open("w")
        command = [sys.executable, "-m", "service.cli", "serve", "--port", str(self.port)]
        self.served = subprocess.Popen(command, env=env, stdout=self.log, stderr=self.log)
        self.base = f"http://127.0.0.1:{self.port}"
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {KEY}"
        for _ in range(600):
            try:
                if self.session.get(f"{self.base}/livez", timeout=1).ok:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.1)
        raise SystemExit("guts serve did not start")

    def post(self, path: str, body: Any = None) -> requests.Response:
        return self.session.post(self.base + path, json=body, timeout=30)

    def table(self) -> str:
        made = self.post(
            "/v1/tables", {"preset": "three-card", "rules": {"seats": SEATS_PER_TABLE}}
        )
        assert made.status_code == 201, made.text
        return str(made.json()["table_id"])

    def seat(self, table: str, player: str, funding: str) -> float:
        body = {"player_id": player, "buy_in": 10, "funding": funding}
        started = time.perf_counter()
        seated = self.post(f"/v1/tables/{table}/players", body)
        took = time.perf_counter() - started
        assert seated.status_code == 201, seated.text
        return took

    def stop(self) -> None:
        self.served.send_signal(signal.SIGTERM)
        self.served.wait(timeout=60)
        self.log.close()


def _ms(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] * 1000 if len(values) > 1 else 0.0


def seats(bench: Bench, wallet: TestWallet, count: int) -> None:
    plain: list[float] = []
    funded: list[float] = []
    tables = {"chips": bench.table(), "wallet": bench.table()}
    connections = wallet.connections
    for n in range(count):
        for funding, times in (("chips", plain), ("wallet", funded)):
            if n and n % SEATS_PER_TABLE == 0:
                tables[funding] = bench.table()
            times.append(bench.seat(tables[funding], f"s{funding}{n}", funding))
    connections = wallet.connections - connections
    trips = []
    for n in range(count):
        payload = {"transaction_id": f"trip-{n}", "player_id": "rt", "table_id": "t",
                   "amount": 1, "currency": "EUR", "reason": "cash_out"}  # fmt: skip
        started = time.perf_counter()
        assert call(wallet.url, "credit", wallet.secret, payload, 5.0).status == "ok"
        trips.append(time.perf_counter() - started)
    p50_plain, p50_funded, p50_trip = (_ms(v, 50) for v in (plain, funded, trips))
    print(f"seats: {count} plain, {count} wallet-funded (interleaved, one at a time)")
    for name, times in (("plain seat        ", plain), ("wallet-funded seat", funded)):
        spread = " ".join(f"p{q} {_ms(times, q):.2f} ms" for q in (90, 99))
        print(f"  {name}  p50 {_ms(times, 50):.2f} ms  {spread}")
    print(f"  one wallet call     p50 {p50_trip:.2f} ms (from this process); the seats' "
          f"{count} debits took {connections} connection(s)")  # fmt: skip
    extra = p50_funded - p50_plain
    print(f"  a wallet-funded seat costs {extra:.2f} ms more = {extra / p50_trip:.2f} wallet "
          f"round trips ({p50_funded / p50_plain:.2f}x a plain seat)")  # fmt: skip


def credits(bench: Bench, wallet: TestWallet, client: redis.Redis, count: int, down: float) -> int:
    tables = []
    for n in range(count):
        if n % SEATS_PER_TABLE == 0:
            tables.append(bench.table())
        bench.seat(tables[-1], f"c{n}", "wallet")
    applied_before = wallet.effects["credit"]
    wallet.close()
    went_down = time.time()
    print(f"credits: {count} wallet-funded seats on {len(tables)} tables; wallet down")
    for table in tables:
        assert bench.post(f"/v1/tables/{table}/end").status_code == 200
    print(f"  {len(tables)} tables ended {time.time() - went_down:.0f} s into the outage")
    time.sleep(max(0.0, went_down + down - time.time()))
    pending_key = "guts:{%wallet:default}:due"
    print(f"  pending when the wallet comes back: {client.zcard(pending_key)}")
    wallet.up()
    back = time.time()
    while client.zcard(pending_key) and time.time() < back + 300:
        time.sleep(0.5)
    settled = time.time() - back
    pending = client.zcard(pending_key)
    applied = wallet.effects["credit"] - applied_before
    distinct = {c["transaction_id"] for p, c in wallet.calls if p == "credit"
                and c["transaction_id"].startswith("c-")}  # fmt: skip
    print(f"  wallet back after {back - went_down:.0f} s; all settled {settled:.1f} s later; "
          f"{pending} still pending")  # fmt: skip
    print(f"  credits applied: {applied} for {len(distinct)} distinct transactions "
          f"(paid twice: {applied - len(distinct)}); calls: {wallet.count('credit')}")  # fmt: skip
    ok = pending == 0 and applied == len(distinct) == count and settled <= 300
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seats", type=int, default=1000)
    parser.add_argument("--credits", type=int, default=10_000)
    parser.add_argument("--down", type=float, default=120.0, help="seconds the wallet is down")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="guts-bench-wallet-"))
    players = {f"s{f}{n}": 10**9 for f in ("wallet",) for n in range(args.seats)}
    players |= {f"c{n}": 10**9 for n in range(args.credits)} | {"rt": 10**9}
    wallet = TestWallet(balances=players)
    wallet.not_idempotent = True  # (a credit paid twice shows as applied twice)
    with RedisServer() as redis_server:
        bench = Bench(redis_server.url, workdir)
        try:
            made = bench.session.put(
                f"{bench.base}/v1/wallet",
                json={"url": wallet.url, "currency": "EUR", "chip_value_minor": 100},
            )
            wallet.secret = made.json()["secret"]
            seats(bench, wallet, args.seats)
            client = redis.Redis.from_url(redis_server.url)
            return credits(bench, wallet, client, args.credits, args.down)
        finally:
            bench.stop()
            wallet.close()


if __name__ == "__main__":
    raise SystemExit(main())
