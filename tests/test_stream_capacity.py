"""A node's stream capacity, under `guts serve` (2 gevent workers, real SSE connections): past
it a new stream is 503 problem+json with Retry-After while commands are still served, and a
stream that ends, however it ends (closed, its client killed, its worker killed), gives its
place back; the open-stream gauge says how many are open."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import requests

from tests.sse import Stream, seconds_to_keep_alive
from tests.test_cli import OPERATOR_KEY, Served, _child_pids, _env, _processes
from tests.waiting import eventually

CAPACITY = 6
WITHIN_S = 40.0  # a bound on a busy machine, not a timing
EVERY_S = 0.2  # (each look is a request to the node)

HOLD_A_STREAM = """
import socket, sys, time
host, port, path, key = sys.argv[1:]
sock = socket.create_connection((host, int(port)))
head = f"GET {path}?after=0 HTTP/1.1\\r\\nHost: x\\r\\nAuthorization: Bearer {key}\\r\\n"
sock.sendall((head + "\\r\\n").encode())
assert b" 200 " in sock.recv(4096)
print("open", flush=True)
time.sleep(600)
"""


@pytest.fixture
def node(
    tmp_path: Path, redis_url: str, redis_client: redis.Redis, clean_archive: str
) -> Iterator[Served]:
    env = _env(
        REDIS_URL=redis_url,
        GUTS_DATABASE_URL=clean_archive,
        GUTS_WEB_WORKERS="2",
        GUTS_STREAM_CAPACITY=str(CAPACITY),
        GUTS_STREAM_KEEP_ALIVE_S="1",  # a vanished client's stream is found out within 1 s
    )
    served = Served(tmp_path / "data", tmp_path, env=env)
    try:
        served.wait_healthy()
        yield served
    finally:
        served.kill()


def _open_streams(node: Served) -> float:
    text = requests.get(node.base + "/metrics", timeout=10).text
    found = re.search(r"^guts_open_streams (\S+)$", text, re.MULTILINE)
    assert found, text
    return float(found.group(1))


def _stream(node: Served, table: str) -> Stream:
    return Stream.open(node.base, f"/v1/tables/{table}/stream", token=OPERATOR_KEY, after=0)


def _assert_refused(node: Served, table: str) -> None:
    refused = _stream(node, table)
    with refused:
        response = refused.response
        assert response.status_code == 503
        assert response.headers["Content-Type"] == "application/problem+json"
        assert int(response.headers["Retry-After"]) >= 1
        body = response.json()
        assert body["status"] == 503 and body["title"] == "Unavailable"
        assert "capacity" in body["detail"]


def _fill(node: Served, table: str, already: int = 0) -> list[Stream]:
    streams = [_stream(node, table) for _ in range(CAPACITY - already)]
    assert [s.response.status_code for s in streams] == [200] * len(streams)
    for stream in streams:
        assert stream.next() is not None  # ": connected": the server holds it
    eventually(
        lambda: _open_streams(node) == CAPACITY, WITHIN_S, "every place taken", every_s=EVERY_S
    )
    return streams


def test_past_the_capacity_a_stream_is_refused_and_commands_are_served(node: Served) -> None:
    table = node.call("POST", "/v1/tables", {"preset": "three-card"}).json()["table_id"]
    streams = _fill(node, table)
    try:
        _assert_refused(node, table)
        seated = node.call("POST", f"/v1/tables/{table}/players", {"player_id": "a", "buy_in": 9})
        assert seated.status_code == 201  # a command is served
        assert node.call("GET", f"/v1/tables/{table}").status_code == 200
        for stream in streams:  # and the open streams carry on
            assert [m.id for m in stream.events_until(2)] == [1, 2]
        assert _open_streams(node) == CAPACITY

        streams.pop().close()  # a client closes its stream: its place comes free
        eventually(
            lambda: _open_streams(node) == CAPACITY - 1,
            WITHIN_S,
            "the closed stream's place free",
            every_s=EVERY_S,
        )
        streams.append(_stream(node, table))
        assert streams[-1].response.status_code == 200
        _assert_refused(node, table)
    finally:
        for stream in streams:
            stream.close()
    eventually(lambda: _open_streams(node) == 0, WITHIN_S, "every place free", every_s=EVERY_S)


def test_a_killed_client_or_worker_gives_its_streams_places_back(node: Served) -> None:
    table = node.call("POST", "/v1/tables", {"preset": "three-card"}).json()["table_id"]
    host, port = node.base.removeprefix("http://").split(":")
    path = f"/v1/tables/{table}/stream"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_A_STREAM, host, port, path, OPERATOR_KEY],
        stdout=subprocess.PIPE,
        text=True,
    )
    streams: list[Stream] = []
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "open\n"
        streams = _fill(node, table, already=1)
        _assert_refused(node, table)
        holder.kill()  # the client vanishes: the server finds out at a write
        holder.wait()
        for n in range(3):  # (events for the server to write)
            body = {"player_id": f"p{n}", "buy_in": 9}
            assert node.call("POST", f"/v1/tables/{table}/players", body).status_code == 201
        eventually(
            lambda: _open_streams(node) == CAPACITY - 1,
            WITHIN_S,
            "the killed client's place free",
            every_s=EVERY_S,
        )
        streams.append(_stream(node, table))
        assert streams[-1].response.status_code == 200

        (api,) = _child_pids(node.process.pid, "gunicorn")
        for worker in [pid for pid, ppid, _, _ in _processes() if ppid == api]:
            os.kill(worker, signal.SIGKILL)  # every worker holding streams dies
        eventually(lambda: _gauge_or_none(node) == 0, WITHIN_S, "the gauge at 0", every_s=EVERY_S)
        again = lambda: _opens(node, table, streams)  # noqa: E731
        eventually(again, WITHIN_S, "the dead workers' places given back", every_s=EVERY_S)
        assert len(streams) == CAPACITY * 2
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
        for stream in streams:
            stream.close()


def _gauge_or_none(node: Served) -> float | None:
    try:
        return _open_streams(node)
    except requests.RequestException:
        return None


def _opens(node: Served, table: str, streams: list[Stream]) -> bool:
    """Open streams until the node holds its capacity again; whether it did."""
    while len(streams) < CAPACITY * 2:
        try:
            stream = _stream(node, table)
        except requests.RequestException:
            return False
        if stream.response.status_code != 200:
            stream.close()
            return False
        streams.append(stream)
    return True


def test_the_keep_alive_period_is_the_nodes_setting(node: Served) -> None:
    """The node runs with GUTS_STREAM_KEEP_ALIVE_S=1: a quiet stream's keep-alive comes within
    a few seconds, not the default 10."""
    table = node.call("POST", "/v1/tables", {"preset": "three-card"}).json()["table_id"]
    assert seconds_to_keep_alive(node.base, f"/v1/tables/{table}/stream", OPERATOR_KEY) < 5


@pytest.mark.parametrize("value", ["0", "-1", "15.5", "60"])
def test_a_keep_alive_period_outside_the_contract_is_refused(value: str) -> None:
    from service.config import Settings

    with pytest.raises(ValueError, match="GUTS_STREAM_KEEP_ALIVE_S must be more than 0"):
        Settings.from_env({"GUTS_STREAM_KEEP_ALIVE_S": value})
    assert Settings.from_env({"GUTS_STREAM_KEEP_ALIVE_S": "15"}).stream_keep_alive_s == 15
    assert Settings.from_env({}).stream_keep_alive_s == 10
