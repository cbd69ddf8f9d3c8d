"""Real worker processes (`guts worker`, RQ with its scheduler, and the backstop thread)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from service.rules.times import parse_iso
from tests.apiclient import Api

LOCK = b"rq:scheduler-lock:guts-deadlines"


@pytest.fixture
def start_worker(redis_url: str) -> Iterator:
    started: list[subprocess.Popen] = []

    def start() -> subprocess.Popen:
        env = {**os.environ, "REDIS_URL": redis_url}
        process = subprocess.Popen(
            [sys.executable, "-m", "service.cli", "worker"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_for(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def _platform_outs(api: Api, table: str) -> list[dict]:
    events = api.get(f"/v1/tables/{table}/events?limit=1000").json()["events"]
    return [e["data"] for e in events if e["data"].get("by") == "platform"]


def _silent_hand(api: Api) -> tuple[str, dict]:
    table = api.table("three-card", decision_timeout_s=2)
    for i in range(3):
        api.seat(table, f"p{i}")
    return table, api.post(f"/v1/tables/{table}/deal").json()


def test_a_worker_with_the_scheduler_makes_silent_players_out_at_the_deadline(
    api: Api, redis_client, start_worker
):
    start_worker()
    assert _wait_for(lambda: redis_client.exists(LOCK), 15), "the worker took no scheduler lock"
    table, dealt = _silent_hand(api)
    assert _wait_for(lambda: len(_platform_outs(api, table)) == 3, 10)
    outs = _platform_outs(api, table)
    assert {o["seat"] for o in outs} == {0, 1, 2}
    closed_at = parse_iso(outs[0]["at"])
    assert closed_at >= parse_iso(dealt["deadline"])  # never early


def test_the_backstop_closes_hands_when_the_scheduler_worker_is_killed(
    api: Api, redis_client, start_worker
):
    holder = start_worker()
    assert _wait_for(lambda: redis_client.exists(LOCK), 15)
    holder.kill()  # SIGKILL: its scheduler lock stays until it expires (about a minute)
    holder.wait()
    start_worker()  # cannot take the scheduler over yet; only its backstop can act
    table, dealt = _silent_hand(api)
    assert _wait_for(lambda: len(_platform_outs(api, table)) == 3, 10)
    late = parse_iso(_platform_outs(api, table)[0]["at"]) - parse_iso(dealt["deadline"])
    assert late.total_seconds() >= 0
    assert redis_client.exists(LOCK)  # the dead worker's lock was still there: no scheduler ran
