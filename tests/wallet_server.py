"""A casino wallet for the tests: a real HTTP server (in a thread of the test process) that
keeps balances and applies debits, credits and rollbacks as the contract says (a repeated
`transaction_id` is the same transaction; a rollback of a debit it never saw is 200), signs
its answers with the secret, and counts what it applied.

Faults, for the next calls of a path (`fail(path, *modes)`) or for every call (`always`):
"slow" (answers after `slow_s`), "down" (closes the connection without an answer), "500",
"garbage" (200 with a body that is not JSON), "bad_signature", "unsigned", "applied_500"
(applies the call, then answers 500: an unknown outcome after the effect), "hold" (sets
`held` on receipt, and carries on once the test sets `release`).
`connections` counts the connections it accepted; `hang_up()` closes those open (as a server
ends idle keep-alive connections).
Broken wallets, for `guts wallet-check`: `not_idempotent` (a repeated transaction applied
again), `ignores_signatures` (an unsigned call accepted), `refuses_unknown_rollback` (a
rollback of a debit it never saw answered 404).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import http.server
import json
import socket
import threading
import time
from collections import Counter
from typing import Any
from urllib.parse import urlsplit

from service.projections.wallet_messages import signed_headers, verify_signature

BASE_PATH = "/guts"
TOKEN_QUERY = "token=casino-t0ken"
"""The wallet's URL is ``http://127.0.0.1:<port>/guts?token=casino-t0ken``: calls go to
``/guts/<debit|credit|rollback>`` with the query kept (anything else is a 404)."""


def _check(secret: str, headers: Any, body: bytes) -> bool:
    msg_id = headers.get("webhook-id") or ""
    return verify_signature(secret, msg_id, headers, body, time.time()) is None


class TestWallet:
    """See the module doc. `balances` are in minor units, by player."""

    __test__ = False  # (not a test class)

    def __init__(
        self, secret: str = "", balances: dict[str, int] | None = None, port: int = 0
    ) -> None:
        self.secret = secret
        self.balances: dict[str, int] = dict(balances or {})
        self.lock = threading.Lock()
        self.applied: dict[str, dict[str, Any]] = {}  # transaction id -> the first call
        self.effects: Counter[str] = Counter()  # kind -> times money moved
        self.rolled_back: set[str] = set()
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.connections = 0
        self.open: set[Any] = set()  # the connections accepted and not yet closed
        self.faults: dict[str, list[str]] = {}
        self.always: dict[str, str] = {}
        self.slow_s = 1.0
        self.held, self.release = threading.Event(), threading.Event()
        self.not_idempotent = self.ignores_signatures = self.refuses_unknown_rollback = False
        wallet = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # (keep-alive: a connection serves many calls)
            disable_nagle_algorithm = True  # (as web servers do: on a kept connection, the
            # answer's body, written after its headers, would wait for the caller's delayed
            # acknowledgement of them, 40 ms)

            def setup(self) -> None:
                super().setup()
                with wallet.lock:
                    wallet.connections += 1
                    wallet.open.add(self.connection)

            def finish(self) -> None:
                with wallet.lock:
                    wallet.open.discard(self.connection)
                super().finish()

            def do_POST(self) -> None:  # noqa: N802 - the library's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                where = urlsplit(self.path)
                if where.query != TOKEN_QUERY or not where.path.startswith(BASE_PATH + "/"):
                    self.send_error(404)  # (the casino's token, in the query, is required)
                    return
                wallet.handle(self, where.path.removeprefix(BASE_PATH + "/"), body)

            def log_message(self, *args: Any) -> None:
                pass

        self.handler = Handler
        self.port = port
        self.up()
        self.url = f"http://127.0.0.1:{self.port}{BASE_PATH}?{TOKEN_QUERY}"

    def up(self) -> None:
        """Listen (again, on the same port)."""
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), self.handler)
        self.server.daemon_threads = True
        self.port = self.server.server_port
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        """Stop listening and hang up: calls are refused (down)."""
        self.server.shutdown()
        self.server.server_close()
        self.hang_up()

    def hang_up(self) -> None:
        """Close every connection open (their callers see them end)."""
        with self.lock:
            for connection in self.open:
                with contextlib.suppress(OSError):  # (one its caller closed meanwhile)
                    connection.shutdown(socket.SHUT_RDWR)

    def fail(self, path: str, *modes: str) -> None:
        with self.lock:
            self.faults.setdefault(path, []).extend(modes)

    def count(self, path: str) -> int:
        return sum(1 for p, _ in self.calls if p == path)

    # --- the contract ----------------------------------------------------------------------

    def handle(self, handler: Any, path: str, body: bytes) -> None:
        with self.lock:
            planned = self.faults.get(path) or []
            mode = planned.pop(0) if planned else self.always.get(path, "")
        if mode == "slow":
            time.sleep(self.slow_s)
        if mode == "hold":  # received; answered when the test releases it
            self.held.set()
            self.release.wait(30)
        if mode == "down":
            handler.close_connection = True
            handler.connection.close()
            return
        if not self.ignores_signatures and not _check(self.secret, handler.headers, body):
            self._send(handler, 401, b'{"error": "bad signature"}', mode)
            return
        call = json.loads(body)
        with self.lock:
            self.calls.append((path, call))
            status, answer = (500, {}) if mode == "500" else self._apply(path, call)
        if mode == "applied_500":
            status = 500
        out = b"not json at all" if mode == "garbage" else json.dumps(answer).encode()
        self._send(handler, status, out, mode, call.get("request_id", ""))

    def _apply(self, path: str, call: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        txid, player, amount = call["transaction_id"], call["player_id"], call["amount"]
        key = f"{path}:{txid}"
        if key in self.applied and not self.not_idempotent:
            return 200, self.applied[key]["answer"]
        if player not in self.balances:
            return 200, {"status": "unknown_player", "balance": 0}
        if path == "rollback":
            debit = self.applied.get(f"debit:{txid}")
            if debit is None and self.refuses_unknown_rollback:
                return 404, {"status": "unknown_transaction"}
            self.rolled_back.add(txid)
            if debit is not None and debit["answer"]["status"] == "ok":
                self.balances[player] += debit["amount"]
                self.effects["rollback"] += 1
        elif path == "debit":
            if txid in self.rolled_back:
                return 409, {"status": "rolled_back"}
            if self.balances[player] < amount:
                return 200, {"status": "insufficient_funds", "balance": self.balances[player]}
            self.balances[player] -= amount
            self.effects["debit"] += 1
        elif path == "credit":
            self.balances[player] += amount
            self.effects["credit"] += 1
        else:
            return 404, {"status": "no such call"}
        answer = {"status": "ok", "balance": self.balances[player]}
        self.applied[key] = {"amount": amount, "answer": answer}
        return 200, answer

    def _send(
        self, handler: Any, status: int, body: bytes, mode: str, request_id: str = ""
    ) -> None:
        handler.send_response(status)
        if mode != "unsigned" and request_id:
            headers = signed_headers(self.secret, request_id, body, time.time())
            if mode == "bad_signature":
                other = "whsec_" + base64.b64encode(hashlib.sha256(b"x").digest()).decode()
                headers = signed_headers(other, request_id, body, time.time())
            for name, value in headers.items():
                handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)
