"""Webhook attempts per second: a backlog of due deliveries drained by one RQ worker.

Run from the repository root (not part of pytest; about a minute)::

    .venv/bin/python -m tests.bench.bench_webhook_drain [--deliveries 300] [--cluster]

It makes `--deliveries` webhook deliveries due at once in the store (the webhook projection's
own `apply`, on a Redis Cluster of 3 masters with `--cluster`, as in production and the chaos
run, else on one Redis), queues an attempt of each as the dispatchers do (`queue_due`), and
runs `guts worker --burst` (RQ, a job per attempt, as `guts serve` runs it) against a local
receiver that accepts every POST. It reports the attempts the receiver got per second, from
the first to the last (the worker's start left out), and their median over `--rounds`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import redis
from redis.cluster import RedisCluster

from service.processes.redis_server import RedisServer
from service.projections.follower import Followed
from service.projections.webhooks import Schedule, WebhookStore
from service.rules.events import PlayerSeated
from tests.cluster import LocalCluster


class Receiver:
    """Accepts every POST (204) and keeps when each arrived."""

    def __init__(self) -> None:
        self.arrived: list[float] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                receiver.arrived.append(time.monotonic())
                self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def one_round(store_url: str, cluster: bool, queues: str, deliveries: int, n: int) -> float:
    """Attempts per second of one worker draining `deliveries` due deliveries."""
    client: redis.Redis = (
        RedisCluster.from_url(store_url) if cluster else redis.Redis.from_url(store_url)  # type: ignore[assignment]
    )
    receiver = Receiver()
    hooks = WebhookStore(client, prefix=f"drain{n}", private_ok=True)
    hooks.register("default", receiver.url, ["player_seated"])
    at = "2026-11-26T00:00:00Z"
    events = tuple((v, PlayerSeated(v % 9, f"p{v}", 100, at)) for v in range(1, deliveries + 1))
    hooks.apply(Followed(f"drain-{n}", "default", 0, events))
    queued = hooks.queue_due(
        Schedule(first_retry_s=1, max_wait_s=5),
        limit=deliveries,
        queues=redis.Redis.from_url(queues),
    )
    assert queued == deliveries, queued
    env = {
        **os.environ,
        "REDIS_URL": store_url,
        "GUTS_REDIS_CLUSTER": "1" if cluster else "",
        "GUTS_QUEUE_REDIS_URL": queues,
        "GUTS_LOG_LEVEL": "warning",
        "GUTS_ALLOW_PRIVATE_URLS": "1",  # (the receiver is on 127.0.0.1)
    }
    subprocess.run([sys.executable, "-m", "service.cli", "worker", "--burst"], env=env, check=True)
    got = len(receiver.arrived)
    assert got == deliveries, f"{got} of {deliveries} delivered"
    rate = (got - 1) / (max(receiver.arrived) - min(receiver.arrived))
    receiver.server.shutdown()
    client.close()
    return rate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deliveries", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cluster", action="store_true", help="the store on a Redis Cluster")
    args = parser.parse_args(argv)
    with RedisServer() as queues:
        if args.cluster:
            with LocalCluster() as local:
                rates = [
                    one_round(local.url, True, queues.url, args.deliveries, n)
                    for n in range(args.rounds)
                ]
        else:
            with RedisServer() as store:
                rates = [
                    one_round(store.url, False, queues.url, args.deliveries, n)
                    for n in range(args.rounds)
                ]
    print(
        f"{'cluster' if args.cluster else 'one Redis'}: {args.deliveries} deliveries, attempts/s "
        f"per round {[round(r, 1) for r in rates]}, median {statistics.median(rates):.1f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
