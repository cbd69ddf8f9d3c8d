"""kill -9 at every step of a money movement, with real processes: an API process (gunicorn)
killed after its debit reached the wallet, or after the wallet confirmed it but before the
seat was appended; a debit left pending after its seat was appended; a dispatcher killed
during a credit's retries. On restart every pending transaction finishes (seated or rolled
back; the credit retried), with no money created, lost or paid twice, while two dispatchers
race on the same transactions."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
import requests

from tests.apiclient import OPERATOR, Api
from tests.waiting import eventually
from tests.wallet.conftest import PLAYERS, connect, transactions
from tests.wallet.test_credits import _append_seat, _funded, _pending_debit
from tests.wallet_server import TestWallet

FAST_ENV = {
    "GUTS_FOLLOW_LEASE_S": "2",
    "GUTS_WALLET_TIMEOUT_S": "0.5",
    "GUTS_WALLET_FIRST_RETRY_S": "0.1",
    "GUTS_WALLET_MAX_WAIT_S": "0.3",
    "GUTS_WALLET_DEBIT_GRACE_S": "1",
    "GUTS_OPERATOR_KEYS": OPERATOR,
    "GUTS_TOKEN_SECRET": "test-token-secret",
}

Start = Callable[..., subprocess.Popen]


@pytest.fixture
def start(tmp_path: Path, redis_url: str) -> Iterator[Start]:
    """Start `guts dispatch`, or the API under gunicorn (`api=port`), on the suite's Redis,
    each in a process group of its own (so kill -9 reaches gunicorn's worker too)."""
    started: list[subprocess.Popen] = []

    def run(api: int | None = None) -> subprocess.Popen:
        env = {k: v for k, v in os.environ.items() if k != "GUTS_DATABASE_URL"}
        env.update(FAST_ENV, REDIS_URL=redis_url)
        command = [sys.executable, "-m", "service.cli", "dispatch"]
        if api is not None:
            bind = f"127.0.0.1:{api}"
            gunicorn = [sys.executable, "-m", "gunicorn", "--no-control-socket", "-w", "1"]
            command = [*gunicorn, "-b", bind, "service.wsgi:app"]
        log = open(tmp_path / f"process-{len(started)}.log", "wb")  # noqa: SIM115
        process = subprocess.Popen(command, env=env, stdout=log, stderr=log, start_new_session=True)
        log.close()
        started.append(process)
        return process

    yield run
    for process in started:
        _stop(process)


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM, and SIGKILL when it has not stopped within 15 s."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            _kill(process)


def _kill(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _api_process(start: Start) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    process = start(api=port)
    base = f"http://127.0.0.1:{port}"

    def up() -> bool:
        try:
            return requests.get(base + "/livez", timeout=2).status_code == 200
        except requests.RequestException:
            return False

    eventually(up, 30, "the API process up")
    return process, base


def _seat_in_background(base: str, table: str) -> threading.Thread:
    body = {"player_id": "ann", "buy_in": 30, "funding": "wallet"}

    def post() -> None:
        try:
            Api(base).post(f"/v1/tables/{table}/players", body)
        except requests.RequestException:
            pass  # its process was killed

    sender = threading.Thread(target=post, daemon=True)
    sender.start()
    return sender


def _seat_held_by_the_wallet(
    api: Api, wallet: TestWallet, start: Start
) -> tuple[str, subprocess.Popen]:
    """A table, and an API process whose wallet-funded seat of it the wallet holds: the
    debit received, not answered yet."""
    connect(api, wallet)
    table = api.table("three-card")
    process, base = _api_process(start)
    wallet.fail("debit", "hold")
    _seat_in_background(base, table)
    assert wallet.held.wait(20)
    return table, process


def _rolled_back(api: Api) -> Callable[[], bool]:
    def done() -> bool:
        kinds = {t["kind"]: t["status"] for t in transactions(api)}
        return kinds == {"debit": "rolled_back", "rollback": "confirmed"}

    return done


def _no_seat(api: Api, table: str) -> bool:
    return api.get(f"/v1/tables/{table}").json()["seats"] == []


def test_an_api_process_killed_after_its_debit_reached_the_wallet(
    wallet_api: Api, wallet: TestWallet, start: Start
):
    table, process = _seat_held_by_the_wallet(wallet_api, wallet, start)
    _kill(process)  # the debit is with the wallet, which has not answered
    wallet.release.set()  # it takes the debit now: nobody hears it
    eventually(lambda: wallet.effects["debit"] == 1, 10, "the debit taken by the wallet")
    start()
    start()  # two dispatchers race on the pending debit
    eventually(
        _rolled_back(wallet_api),
        30,
        "the debit rolled back",
        detail=lambda: transactions(wallet_api),
    )
    assert wallet.balances["ann"] == PLAYERS["ann"] and wallet.effects["rollback"] == 1
    assert _no_seat(wallet_api, table)


def test_an_api_process_killed_after_the_wallet_confirmed_before_the_seat(
    wallet_api: Api, wallet: TestWallet, start: Start, redis_url: str
):
    table, process = _seat_held_by_the_wallet(wallet_api, wallet, start)
    pauser = redis.Redis.from_url(redis_url)
    pauser.execute_command("CLIENT", "PAUSE", 20_000, "WRITE")  # the API cannot append now
    try:
        wallet.release.set()  # the wallet takes the debit and answers ok
        eventually(lambda: wallet.effects["debit"] == 1, 10, "the debit taken by the wallet")
        _kill(process)  # with the confirmation in hand, its append not done
    finally:
        pauser.execute_command("CLIENT", "UNPAUSE")  # (Redis may still run what it was sent)
    start()
    start()

    def finished() -> bool:
        return all(t["status"] != "pending" for t in transactions(wallet_api))

    eventually(finished, 30, "no transaction pending", detail=lambda: transactions(wallet_api))
    debit = next(t for t in transactions(wallet_api) if t["kind"] == "debit")
    seats = wallet_api.get(f"/v1/tables/{table}").json()["seats"]
    if debit["status"] == "confirmed":  # the append reached Redis before the process died
        assert [s["player_id"] for s in seats] == ["ann"] and wallet.count("rollback") == 0
        assert wallet.balances["ann"] == PLAYERS["ann"] - 3000
    else:  # it did not: rolled back, the money back
        assert debit["status"] == "rolled_back" and seats == []
        assert wallet.balances["ann"] == PLAYERS["ann"]


def test_a_debit_pending_after_its_seat_was_appended_is_confirmed_by_a_dispatcher(
    wallet_api: Api, wallet: TestWallet, start: Start
):
    connect(wallet_api, wallet)
    table = wallet_api.table("three-card")
    _append_seat(wallet_api, _pending_debit(wallet_api, wallet, table))  # then the sender died
    start()
    start()

    def confirmed() -> bool:
        return [t["status"] for t in transactions(wallet_api)] == ["confirmed"]

    eventually(confirmed, 30, "the debit confirmed", detail=lambda: transactions(wallet_api))
    assert wallet.count("rollback") == 0 and wallet.balances["ann"] == PLAYERS["ann"] - 3000
    seats = wallet_api.get(f"/v1/tables/{table}").json()["seats"]
    assert [s["player_id"] for s in seats] == ["ann"]


def test_a_dispatcher_killed_during_a_credits_retries(
    wallet_api: Api, wallet: TestWallet, start: Start
):
    connect(wallet_api, wallet)
    table = wallet_api.table("three-card")
    _funded(wallet_api, table, "ann", 30)
    wallet.always["credit"] = "500"
    first = start()
    assert wallet_api.delete(f"/v1/tables/{table}/players/0").status_code == 200

    def retried() -> bool:
        return any(t["kind"] == "credit" and t["attempts"] >= 2 for t in transactions(wallet_api))

    eventually(retried, 30, "the credit tried twice", detail=lambda: transactions(wallet_api))
    _kill(first)
    del wallet.always["credit"]
    start()
    start()

    def confirmed() -> bool:
        return [t["status"] for t in transactions(wallet_api) if t["kind"] == "credit"] == [
            "confirmed"
        ]

    eventually(confirmed, 30, "the credit confirmed", detail=lambda: transactions(wallet_api))
    assert wallet.effects["credit"] == 1 and wallet.balances["ann"] == PLAYERS["ann"]
