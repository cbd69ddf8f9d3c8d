"""The webhook receiver the chaos run registers: a real HTTP server in the harness that keeps
every delivery attempt (its `webhook-id` and body) and fails one attempt in `fail_one_in`, so
retries happen too."""

from __future__ import annotations

import json
import random
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Receiver:
    """`url` receives webhooks; `received` holds (webhook-id, body) of every 2xx-answered one."""

    def __init__(self, fail_one_in: int = 20, seed: int = 0) -> None:
        self.received: list[tuple[str, dict[str, Any]]] = []
        self.lock = threading.Lock()
        rng = random.Random(seed)
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                with receiver.lock:
                    fail = rng.randrange(fail_one_in) == 0
                    if not fail:
                        body = json.loads(raw)
                        receiver.received.append((self.headers.get("webhook-id", ""), body))
                self.send_response(500 if fail else 200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def snapshot(self) -> list[tuple[str, dict[str, Any]]]:
        with self.lock:
            return list(self.received)
