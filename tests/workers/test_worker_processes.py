"""Real `guts dispatch` and `guts worker` processes: deadlines close with nobody but them, a
dispatcher killed with -9 leaves nothing stranded, and Redis killed with -9 and restarted is
waited out with no restart by hand."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from service.processes.redis_server import RedisServer
from service.rules.times import parse_iso
from tests.apiclient import Api, _serve, _settings
from tests.waiting import eventually

Start = Callable[..., subprocess.Popen]


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Start]:
    """Start `guts <command>` against a Redis URL (the followers' lease lasting 2 s, so a
    dispatcher killed with -9 is replaced soon); every one still running is stopped."""
    started: list[subprocess.Popen] = []

    def run(command: str, redis_url: str) -> subprocess.Popen:
        env = {**os.environ, "REDIS_URL": redis_url, "GUTS_FOLLOW_LEASE_S": "2"}
        log = open(tmp_path / f"{command}-{len(started)}.log", "wb")  # noqa: SIM115
        process = subprocess.Popen(
            [sys.executable, "-m", "service.cli", command], env=env, stdout=log, stderr=log
        )
        log.close()
        started.append(process)
        return process

    yield run
    for process in started:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _platform_outs(api: Api, table: str) -> list[dict]:
    events = api.get(f"/v1/tables/{table}/events?limit=1000").json()["events"]
    return [e["data"] for e in events if e["data"].get("by") == "platform"]


def _silent_hand(api: Api, timeout_s: int = 1) -> tuple[str, dict]:
    table = api.table("three-card", decision_timeout_s=timeout_s)
    for i in range(3):
        api.seat(table, f"p{i}")
    return table, api.post(f"/v1/tables/{table}/deal").json()


def _closed_in_time(api: Api, hands: list[tuple[str, dict]], within_s: float) -> None:
    for table, dealt in hands:
        outs = lambda t=table: len(_platform_outs(api, t)) == 3  # noqa: E731
        eventually(outs, within_s, f"every seat at {table} made out by the platform")
        closed = parse_iso(_platform_outs(api, table)[0]["at"])
        assert closed >= parse_iso(dealt["deadline"])  # never early


def test_a_dispatcher_process_makes_silent_players_out_at_the_deadline(
    api: Api, redis_url: str, start: Start
):
    start("dispatch", redis_url)
    hands = [_silent_hand(api) for _ in range(3)]
    _closed_in_time(api, hands, 10)


def test_a_table_claimed_by_a_dispatcher_that_died_comes_due_again(
    api: Api, redis_client, redis_url: str, start: Start
):
    """A dispatcher claims a due table and dies before acting (the claim is made here, as the
    dead one's last step): another dispatcher process closes the hand once the lease ends,
    exactly once."""
    from service.eventlog.due_index import DueIndex

    table, dealt = _silent_hand(api)
    deadline = parse_iso(dealt["deadline"]).timestamp()
    time.sleep(max(0.0, deadline - time.time()) + 0.01)
    assert DueIndex(redis_client).claim(time.time(), lease_s=2.0, limit=10) == [table]
    lease_end = time.time() + 2.0
    start("dispatch", redis_url)
    eventually(
        lambda: len(_platform_outs(api, table)) == 3, 20, "every seat made out by the platform"
    )
    outs = _platform_outs(api, table)
    assert sorted(o["seat"] for o in outs) == [0, 1, 2]
    assert parse_iso(outs[0]["at"]).timestamp() >= lease_end - 0.1


def test_a_dispatcher_killed_with_minus_9_is_replaced_by_another(
    api: Api, redis_url: str, start: Start
):
    first = start("dispatch", redis_url)
    hands = [_silent_hand(api) for _ in range(2)]
    first.send_signal(signal.SIGKILL)
    first.wait()
    start("dispatch", redis_url)
    _closed_in_time(api, hands, 15)


def test_deadlines_resume_after_redis_is_killed_and_restarted(
    tmp_path: Path, start: Start, pytestconfig: pytest.Config
):
    """Redis dies with -9 under a dispatcher and comes back on the same port with its
    append-only file: hands dealt before and after close, and nobody restarts the dispatcher."""
    data = tmp_path / "redis"
    server = RedisServer(data_dir=data, appendonly=True, appendfsync="always").start()
    port = server.port
    settings = _settings(server.url, sandbox=True)
    try:
        dispatcher = start("dispatch", server.url)
        with contextlib.contextmanager(_serve)(settings, pytestconfig) as base:
            api = Api(base)
            before = [_silent_hand(api, timeout_s=3) for _ in range(2)]
            os.kill(server.pid, signal.SIGKILL)
            time.sleep(0.5)
            server.stop()
            server = RedisServer(port=port, data_dir=data, appendonly=True, appendfsync="always")
            server.start()
            after = [_silent_hand(api, timeout_s=1) for _ in range(2)]
            _closed_in_time(api, before + after, 15)
        assert dispatcher.poll() is None  # the same process throughout
    finally:
        server.stop()
