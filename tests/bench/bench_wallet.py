"""Casino wallet benchmark: what a wallet-funded seat costs, and credits through an outage.

Run from the repository root (not part of pytest; about 6 minutes with the defaults)::

    .venv/bin/python -m tests.bench.bench_wallet [--seats 1000] [--credits 10000] [--down 120]

It starts `guts serve` (its own redis-server, the production wallet schedule: a credit retried
after 5 s, doubling, up to 1 h) and a local wallet that answers at once (the tests' wallet,
`tests/wallet_server.py`, made not idempotent so that a credit paid twice would show).

1. Seats: `--seats` plain seats and as many wallet-funded ones, interleaved, one at a time
   (in pairs, each kind first in every other pair: a seat made right after another finds the
   dispatchers' followers at work on that one, and is slower for it);
   p50, p90 and p99 of each; and one wallet round trip, measured three ways: the p50 of a
   signed wallet call made from this process after each pair of seats (the machine as busy as
   the seats' debits find it: the dispatcher's followers react to each seat), the p50 of as
   many made after the seats (quiet), and the mean of the seats' debits as the service timed
   them (``guts_wallet_call_seconds`` in its /metrics); each over a kept connection, as the
   API's calls are; and how many connections the wallet accepted for the seats' debits. Goal:
   a wallet-funded seat costs one wallet round trip more than a plain seat (the debit: its
   record rides the round trip that reads the player's protections, which a plain seat makes
   too; the seat is decided while the wallet answers; and the wallet's projection confirms
   the debit after the seat's append).
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
from tests.metrics import samples, total
from tests.wallet_server import TestWallet

KEY = "bench-operator-key"
SEATS_PER_TABLE = 6


class Bench:
    """`guts serve` on its own Redis, and a client of it."""

    def __init__(self, redis_url: str, workdir: Path) -> None:
        self.port = free_port()
        env = {k: v for k, v in os.environ.items() if k not in ("GUNICORN_CMD_ARGS",)}
        env.update(
            GUTS_ALLOW_PRIVATE_URLS="1",  # (the wallet is on 127.0.0.1)
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

    def debits_timed(self) -> tuple[float, float]:
        """(count, seconds) of the debits answered ok, as the service timed them."""
        found = samples(self.session.get(f"{self.base}/metrics", timeout=30).text)
        ok = {"call": "debit", "outcome": "ok"}
        name = "guts_wallet_call_seconds"
        return total(found, f"{name}_count", **ok), total(found, f"{name}_sum", **ok)

    def stop(self) -> None:
        self.served.send_signal(signal.SIGTERM)
        self.served.wait(timeout=60)
        self.log.close()


def _ms(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] * 1000 if len(values) > 1 else 0.0


def _trip(wallet: TestWallet, transaction_id: str) -> float:
    """One signed wallet call made from this process (a credit), in seconds."""
    payload = {"transaction_id": transaction_id, "player_id": "rt", "table_id": "t",
               "amount": 1, "currency": "EUR", "reason": "cash_out"}  # fmt: skip
    started = time.perf_counter()
    assert call(wallet.url, "credit", wallet.secret, payload, 5.0, private_ok=True).status == "ok"
    return time.perf_counter() - started


def seats(bench: Bench, wallet: TestWallet, count: int) -> None:
    plain: list[float] = []
    funded: list[float] = []
    between: list[float] = []  # a call after each pair of seats, as busy as the seats find it
    tables = {"chips": bench.table(), "wallet": bench.table()}
    _trip(wallet, "between-first")  # (this process's connection, kept: not counted below)
    connections = wallet.connections
    timed = bench.debits_timed()
    pair = (("chips", plain), ("wallet", funded))
    for n in range(count):
        for funding, times in pair if n % 2 else pair[::-1]:  # (each kind first in half the
            # pairs: a seat right after another meets the dispatchers at work on that one)
            if n and n % SEATS_PER_TABLE == 0:
                tables[funding] = bench.table()
            times.append(bench.seat(tables[funding], f"s{funding}{n}", funding))
        between.append(_trip(wallet, f"between-{n}"))
    connections = wallet.connections - connections
    debits, debit_s = (
        after - before for after, before in zip(bench.debits_timed(), timed, strict=True)
    )
    quiet = [_trip(wallet, f"trip-{n}") for n in range(count)]
    p50_plain, p50_funded = _ms(plain, 50), _ms(funded, 50)
    p50_between, p50_quiet = _ms(between, 50), _ms(quiet, 50)
    mean_debit = debit_s / debits * 1000 if debits else float("nan")
    print(f"seats: {count} plain, {count} wallet-funded (interleaved, one at a time)")
    for name, times in (("plain seat        ", plain), ("wallet-funded seat", funded)):
        spread = " ".join(f"p{q} {_ms(times, q):.2f} ms" for q in (90, 99))
        print(f"  {name}  p50 {_ms(times, 50):.2f} ms  {spread}")
    print(f"  one wallet call     p50 {p50_between:.2f} ms from this process between the seats, "
          f"{p50_quiet:.2f} ms after them (quiet); {mean_debit:.2f} ms the mean of the seats' "
          f"{debits:.0f} debits as the service timed them; the debits took {connections} "
          "connection(s)")  # fmt: skip
    extra = p50_funded - p50_plain
    print(f"  a wallet-funded seat costs {extra:.2f} ms more = {extra / p50_between:.2f} wallet "
          f"calls made between the seats ({extra / mean_debit:.2f} as the service times them, "
          f"{extra / p50_quiet:.2f} quiet calls; {p50_funded / p50_plain:.2f}x a plain "
          "seat)")  # fmt: skip


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
