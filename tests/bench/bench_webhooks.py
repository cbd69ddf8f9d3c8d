"""Webhook outage demonstration: a receiver down for 2 minutes, then back.

Run from the repository root (not part of pytest; it takes about 4 minutes)::

    .venv/bin/python -m tests.bench.bench_webhooks [--down 120] [--hands 20]

It starts `guts serve` (its own redis-server, the production webhook schedule: first retry
after 5 s, doubling, up to 1 h, for 25 h) and a local HTTP receiver, registers a webhook for
`hand_finished` and `player_seated`, and takes the receiver down (nothing listens on its
port). While it is down, hands are played on a table, spread over the outage. Then the
receiver comes back, and the run waits until every delivery is `delivered` (or 5 minutes).

It reports the events made, the deliveries the receiver accepted (distinct `webhook-id`s,
each signature checked), the attempts (retries = attempts - deliveries), deliveries lost (made
but never accepted) and the worst and median delay from an event to its receipt.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import http.server
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import requests

from service.processes.redis_server import RedisServer, free_port
from service.rules.times import parse_iso

KEY = "bench-operator-key"


class Receiver:
    """Accepts every POST when up (204), keeps (receipt time, headers, body)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.received: list[tuple[float, dict[str, str], bytes]] = []
        self.server: http.server.ThreadingHTTPServer | None = None

    def up(self) -> None:
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                headers = {k.lower(): v for k, v in self.headers.items()}
                receiver.received.append((time.time(), headers, body))
                self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def down(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None


def _signed(secret: str, headers: dict[str, str], body: bytes) -> bool:
    key = base64.b64decode(secret.split("_", 1)[1])
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    return f"v1,{expected}" in headers["webhook-signature"].split(" ")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--down", type=float, default=120.0, help="seconds the receiver is down")
    parser.add_argument("--hands", type=int, default=20)
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="guts-bench-hooks-"))
    with RedisServer() as redis_server:
        port = free_port()
        env = {k: v for k, v in os.environ.items() if k not in ("GUNICORN_CMD_ARGS",)}
        env.update(
            GUTS_ALLOW_PRIVATE_URLS="1",  # (the receivers are on 127.0.0.1)
            REDIS_URL=redis_server.url,
            GUTS_OPERATOR_KEYS=KEY,
            GUTS_SANDBOX="",
            GUTS_LOG_LEVEL="warning",
            GUTS_DATA_DIR=str(workdir),
        )
        log = (workdir / "serve.log").open("w")
        command = [sys.executable, "-m", "service.cli", "serve", "--port", str(port)]
        served = subprocess.Popen(command, env=env, stdout=log, stderr=log)
        base = f"http://127.0.0.1:{port}"
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {KEY}"
        try:
            for _ in range(300):
                try:
                    if session.get(f"{base}/livez", timeout=1).ok:
                        break
                except requests.RequestException:
                    pass
                time.sleep(0.1)
            receiver = Receiver(free_port())
            hook = session.post(
                f"{base}/v1/webhooks",
                json={
                    "url": f"http://127.0.0.1:{receiver.port}/hook",
                    "events": ["hand_finished", "player_seated"],
                },
            ).json()
            table = session.post(f"{base}/v1/tables", json={"preset": "three-card"}).json()
            table_id = table["table_id"]
            tokens = [
                session.post(
                    f"{base}/v1/tables/{table_id}/players",
                    json={"player_id": f"p{i}", "buy_in": 1000},
                ).json()["token"]
                for i in range(3)
            ]
            outage_started = time.time()
            print(f"receiver down for {args.down:.0f} s; playing {args.hands} hands meanwhile")
            for n in range(args.hands):
                dealt = session.post(f"{base}/v1/tables/{table_id}/deal").json()
                for seat in dealt["order"]:
                    session.post(
                        f"{base}/v1/tables/{table_id}/declare",
                        json={"decision": "in" if seat != 2 else "out"},
                        headers={"Authorization": f"Bearer {tokens[seat]}"},
                    )
                session.post(f"{base}/v1/tables/{table_id}/resolve")
                time.sleep(
                    max(0.0, outage_started + (n + 1) * args.down / args.hands - time.time())
                )
            receiver.up()
            back = time.time()
            print(f"receiver back after {back - outage_started:.0f} s")
            deadline = time.time() + 300
            while time.time() < deadline:
                found = session.get(
                    f"{base}/v1/webhooks/{hook['webhook_id']}/deliveries?limit=1000"
                ).json()["deliveries"]
                if found and all(d["status"] == "delivered" for d in found):
                    break
                time.sleep(1)
            made = 3 + args.hands
            ids = {h["webhook-id"] for _, h, _ in receiver.received}
            signed = all(_signed(hook["secret"], h, b) for _, h, b in receiver.received)
            attempts = sum(d["attempts"] for d in found)
            delays = []
            first_receipt: dict[str, float] = {}
            for at, headers, _ in receiver.received:
                first_receipt.setdefault(headers["webhook-id"], at)
            for at, headers, body in receiver.received:
                if first_receipt[headers["webhook-id"]] == at:
                    event_at = parse_iso(json.loads(body)["timestamp"]).timestamp()
                    delays.append(at - event_at)
            print(f"events made: {made}; deliveries recorded: {len(found)}")
            print(f"accepted: {len(ids)} distinct webhook-ids, signatures ok: {signed}")
            print(f"attempts: {attempts} (retries: {attempts - len(found)})")
            print(
                f"lost: {made - len(ids)}; duplicates received: {len(receiver.received) - len(ids)}"
            )
            print(
                f"delay from event to receipt: median {statistics.median(delays):.1f} s, "
                f"worst {max(delays):.1f} s (receiver back {back - outage_started:.0f} s "
                "after the outage began)"
            )
            return 0 if made == len(ids) and signed else 1
        finally:
            served.send_signal(signal.SIGTERM)
            served.wait(timeout=60)
            log.close()


if __name__ == "__main__":
    raise SystemExit(main())
