"""A wallet or a webhook receiver that answers a byte at a time (or never ends its answer), or
whose host name a name server never answers for.

The socket's timeout bounds each read, not the call: such an answer held its caller for as long
as it dripped. The wallet duty's callers, held so, finished no transaction of any tenant (the
duty waits for a tenant's calls before it goes on to the next tenant), and a webhook delivery
held the worker until RQ ended the job. Each call now ends within its timeout, a failed call.
"""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.apiclient import Api
from tests.wallet.conftest import connect, follow, transactions, wallet_of
from tests.wallet_server import TestWallet
from workers.jobs import _post
from workers.wallet_duty import CALLERS, finish_due


class Drip:
    """A server that reads a request and answers it a byte every 0.2 s, headers or body."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/w"
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._drip, args=(conn,), daemon=True).start()

    def _drip(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)
                if self.what == "body":
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
                    answer = b"x" * 100_000
                else:
                    answer = b"HTTP/1.1 200 OK\r\nX-Drip: " + b"a" * 100_000
                for byte in answer:
                    if self.stop.is_set():
                        return
                    conn.sendall(bytes([byte]))
                    time.sleep(0.2)
            except OSError:
                return

    def close(self) -> None:
        self.stop.set()
        self.listener.close()


@pytest.fixture(params=["headers", "body"])
def drip(request: pytest.FixtureRequest) -> Iterator[Drip]:
    server = Drip(request.param)
    yield server
    server.close()


def _in_a_thread(call: object, within_s: float) -> list[object]:
    """`call()` run in a thread; what it returned, once it has (the test fails if it has not
    within `within_s`, many times the call's timeout: held by the drip, it never would)."""
    result: list[object] = []
    thread = threading.Thread(target=lambda: result.append(call()), daemon=True)  # type: ignore[operator]
    thread.start()
    thread.join(within_s)
    assert not thread.is_alive(), "the call is still held by an answer that drips"
    return result


def test_a_webhook_receiver_that_drips_fails_the_attempt_within_its_timeout(drip: Drip) -> None:
    """(Its body is never read: a 200 whose body drips is a delivery.)"""
    (outcome,) = _in_a_thread(lambda: _post(drip.url, b"{}", {}, 0.5, True), within_s=20)
    assert outcome == ((None, "TimeoutError") if drip.what == "headers" else (200, None))


def test_a_wallet_that_drips_holds_the_duty_no_longer_than_its_timeout(
    wallet_api: Api, wallet: TestWallet, drip: Drip
) -> None:
    connect(wallet_api, wallet)
    table = wallet_api.table("three-card")
    seated = wallet_api.post(
        f"/v1/tables/{table}/players", {"player_id": "ann", "buy_in": 30, "funding": "wallet"}
    )
    assert seated.status_code == 201, seated.text
    assert wallet_api.delete(f"/v1/tables/{table}/players/0").status_code == 200
    follow(wallet_api, table)
    moved = wallet_api.call("PUT", "/v1/wallet", {"url": drip.url, "currency": "EUR",
                                                   "chip_value_minor": 100})  # fmt: skip
    assert moved.status_code == 200, moved.text
    duty = wallet_of(wallet_api)  # (its calls time out after 0.5 s)
    with ThreadPoolExecutor(4) as pool:
        (finished,) = _in_a_thread(lambda: finish_due(duty, pool), within_s=20)
    assert finished == 1
    (credit,) = [t for t in transactions(wallet_api) if t["kind"] == "credit"]
    assert credit["status"] == "pending" and credit["attempts"] == 1, credit  # tried again later


def test_a_pass_claims_no_more_of_a_tenants_transactions_than_it_has_callers(
    wallet_api: Api, wallet: TestWallet
) -> None:
    """So that a tenant whose wallet takes its whole timeout holds the pass (and the tenants
    after it) for one timeout, not one per `CALLERS` of its transactions."""
    connect(wallet_api, wallet)
    for n in range(CALLERS // 6 + 1):  # (6 seats a table)
        table = wallet_api.table("three-card")
        for seat in range(6):
            body = {"player_id": f"p{n}-{seat}", "buy_in": 1, "funding": "wallet"}
            wallet.balances[body["player_id"]] = 1_000
            assert wallet_api.post(f"/v1/tables/{table}/players", body).status_code == 201
        assert wallet_api.post(f"/v1/tables/{table}/end").status_code == 200
        follow(wallet_api, table)
    pending = [t for t in transactions(wallet_api, limit=100) if t["kind"] == "credit"]
    assert len(pending) > CALLERS
    with ThreadPoolExecutor(CALLERS) as pool:
        assert finish_due(wallet_of(wallet_api), pool) == CALLERS


SILENT_LOOKUP = """
import time
from service.projections.wallet_messages import call
started = time.monotonic()
answer = call("http://wallet.example.test:8080/w", "credit", "whsec_a2V5", {}, 1.0, private_ok=True)
print(answer.problem, answer.reached, round(time.monotonic() - started, 2))
"""


def test_a_host_whose_name_server_never_answers_fails_the_call_within_its_timeout(
    tmp_path: Path,
) -> None:
    """The system's resolver cannot be interrupted: a wallet's host name that no name server
    answered for held the call for the resolver's own timeout (here 8 s; 8.01 s before), and
    the wallet duty's calls of every tenant with it. The call is run in a process whose
    /etc/resolv.conf names a name server that reads every query and answers none (a mount
    namespace of its own: root only); it fails within its timeout of 1 s."""
    if os.geteuid() != 0 or subprocess.run(["unshare", "-m", "true"]).returncode != 0:
        pytest.skip("needs root and unshare(1) to give a process its own /etc/resolv.conf")
    address = f"127.53.{random.randrange(256)}.{random.randrange(1, 255)}"
    silent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    silent.bind((address, 53))  # (read by nobody: every query waits for the resolver's timeout)
    resolv = tmp_path / "resolv.conf"
    resolv.write_text(f"nameserver {address}\noptions timeout:8 attempts:1\n")
    script = f'mount --bind {resolv} /etc/resolv.conf && exec {sys.executable} -c "$0"'
    try:
        run = subprocess.run(
            ["unshare", "-m", "sh", "-c", script, SILENT_LOOKUP],
            cwd=Path(__file__).resolve().parents[2],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        silent.close()
    assert run.returncode == 0, run.stderr
    problem, reached, took = run.stdout.split()
    assert (problem, reached) == ("TimeoutError", "False")
    assert float(took) < 4, f"the call took {took} s: held by the resolver"
