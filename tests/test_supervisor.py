"""The supervisor of `guts serve` (service/processes/supervisor.py): the restart delays on pure
code,
and restarts of real (tiny) child processes driven by a clock the test moves."""

from __future__ import annotations

import itertools
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from service.processes.redis_server import RedisServer
from service.processes.supervisor import (
    HEARTBEAT_ENV,
    Backoff,
    ChildSpec,
    ServerSpec,
    Supervisor,
    describe_exit,
)
from tests.waiting import eventually

BOUND_S = 10.0  # for things that must happen soon; never a measure of speed


def _python(code: str, name: str) -> ChildSpec:
    return ChildSpec(name, (sys.executable, "-c", code), dict(os.environ))


def _ticking(supervisor: Supervisor, found: Callable[[], bool]) -> Callable[[], bool]:
    """`found`, asked each time after a tick of the supervisor (which notices its children's
    ends and acts on them)."""

    def ticked() -> bool:
        supervisor.tick()
        return found()

    return ticked


def _alive(pid: int) -> bool:
    """Running (a zombie, dead but not yet reaped, counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def test_the_delay_doubles_from_the_first_up_to_the_cap() -> None:
    backoff = Backoff(first_s=0.5, cap_s=10.0, stable_s=30.0)
    assert [backoff.delay(n) for n in range(1, 8)] == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_a_child_that_stayed_up_long_enough_starts_over_from_the_first_delay() -> None:
    backoff = Backoff(first_s=0.5, cap_s=10.0, stable_s=30.0)
    assert backoff.failures_after(5, uptime_s=29.9) == 6
    assert backoff.failures_after(5, uptime_s=30.0) == 1
    assert backoff.failures_after(0, uptime_s=0.0) == 1


@pytest.mark.parametrize(
    ("returncode", "said"),
    [(0, "exited with code 0"), (3, "exited with code 3"), (-9, "was killed by SIGKILL")],
)
def test_a_death_is_described_by_its_code_or_signal(returncode: int, said: str) -> None:
    assert describe_exit(returncode) == said


class Clock:
    """A clock that moves only when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


_LOGGERS = itertools.count()


class Lines(logging.Handler):
    """The messages a logger got, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def supervised() -> Iterator[Callable[..., tuple[Supervisor, Clock, list[str]]]]:
    made: list[Supervisor] = []

    def make(
        *specs: ChildSpec, servers: tuple[ServerSpec, ...] = ()
    ) -> tuple[Supervisor, Clock, list[str]]:
        clock, caught = Clock(), Lines()
        log = logging.getLogger(f"tests.supervisor.{next(_LOGGERS)}")
        log.addHandler(caught)
        log.propagate = False
        log.setLevel(logging.INFO)
        supervisor = Supervisor(specs, servers=servers, clock=clock, log=log, stop_timeout_s=5.0)
        made.append(supervisor)
        supervisor.start()
        return supervisor, clock, caught.lines

    yield make
    for supervisor in made:
        supervisor.stop()


def test_a_child_that_exits_is_restarted_after_a_delay_that_doubles(supervised) -> None:
    supervisor, clock, lines = supervised(_python("raise SystemExit(3)", "quitter"))
    first = supervisor.pids()["quitter"]
    eventually(_ticking(supervisor, lambda: bool(lines)), BOUND_S, "the exit logged")
    assert lines == [
        f"quitter (pid {first}) exited with code 3 after 0.0 s; restarting it in 0.5 s"
    ]
    clock.now += 0.4
    supervisor.tick()
    assert supervisor.pids()["quitter"] is None and len(lines) == 1  # not yet
    clock.now += 0.1
    supervisor.tick()
    second = supervisor.pids()["quitter"]
    assert second is not None and second != first
    assert lines[1] == f"quitter restarted (pid {second})"
    eventually(_ticking(supervisor, lambda: len(lines) == 3), BOUND_S, "the next exit logged")
    assert lines[2].endswith("exited with code 3 after 0.0 s; restarting it in 1.0 s")


def test_a_killed_child_is_restarted_and_the_others_are_left_alone(supervised) -> None:
    sleep = "import time; time.sleep(60)"
    supervisor, clock, lines = supervised(_python(sleep, "victim"), _python(sleep, "bystander"))
    before = supervisor.pids()
    os.kill(before["victim"], signal.SIGKILL)
    eventually(_ticking(supervisor, lambda: bool(lines)), BOUND_S, "the kill logged")
    assert lines == [
        f"victim (pid {before['victim']}) was killed by SIGKILL after 0.0 s; restarting it in 0.5 s"
    ]
    clock.now += 0.5
    supervisor.tick()
    after = supervisor.pids()
    assert after["victim"] not in (None, before["victim"])
    assert after["bystander"] == before["bystander"]
    assert supervisor.stop()  # SIGTERM to each, which ends them
    assert not _alive(after["victim"]) and not _alive(after["bystander"])


def test_what_a_dead_child_left_in_its_process_group_is_killed(supervised, tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    code = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(60)\n"
    )
    supervisor, _, lines = supervised(_python(code, "parent"))
    eventually(
        lambda: pid_file.exists() and pid_file.read_text() != "",
        BOUND_S,
        "the grandchild's pid written",
    )
    grandchild = int(pid_file.read_text())
    assert _alive(grandchild)
    os.kill(supervisor.pids()["parent"], signal.SIGKILL)  # the grandchild is left behind
    eventually(_ticking(supervisor, lambda: bool(lines)), BOUND_S, "the kill logged")
    eventually(lambda: not _alive(grandchild), BOUND_S, "the grandchild killed")


def _beating(name: str, hang_s: float, beats: bool) -> ChildSpec:
    """A child that touches its heartbeat file every 20 ms (`beats`) or never."""
    code = (
        "import os, time\n"
        f"path = os.environ[{HEARTBEAT_ENV!r}]\n"
        "while True:\n"
        f"    {'os.utime(path)' if beats else 'pass'}\n"
        "    time.sleep(0.02)\n"
    )
    return ChildSpec(name, (sys.executable, "-c", code), dict(os.environ), hang_s=hang_s)


def _beat_of(supervisor: Supervisor, name: str) -> Path:
    (child,) = [c for c in supervisor._children if c.spec.name == name]
    assert child.heartbeat is not None
    return child.heartbeat


def test_a_child_whose_heartbeat_stops_is_killed_as_hung_and_replaced(supervised) -> None:
    supervisor, clock, lines = supervised(_beating("stuck", hang_s=30.0, beats=False))
    first = supervisor.pids()["stuck"]
    supervisor.tick()
    clock.now += 29.0
    supervisor.tick()
    assert lines == [] and _alive(first)  # still within its hang_s
    clock.now += 2.0
    eventually(
        _ticking(supervisor, lambda: len(lines) >= 2), BOUND_S, "the hang and the kill logged"
    )
    assert lines[0] == f"stuck (pid {first}) hung: no heartbeat for 31.0 s; killing it"
    assert lines[1].startswith(f"stuck (pid {first}) was killed by SIGKILL after 31.0 s")
    assert not _alive(first)
    clock.now += 10.0
    supervisor.tick()
    assert supervisor.pids()["stuck"] not in (None, first)


def test_a_child_that_beats_is_left_alone_however_long_it_runs(supervised) -> None:
    supervisor, clock, lines = supervised(_beating("busy", hang_s=1.0, beats=True))
    pid = supervisor.pids()["busy"]
    beat = _beat_of(supervisor, "busy")
    for _ in range(5):  # five times its hang_s, each step after a beat the supervisor saw
        seen = beat.stat().st_mtime_ns
        eventually(lambda: beat.stat().st_mtime_ns != seen, BOUND_S, "a beat")  # noqa: B023
        supervisor.tick()
        clock.now += 0.9
        supervisor.tick()
    assert lines == [] and supervisor.pids()["busy"] == pid


def test_an_embedded_server_that_dies_is_restarted_with_the_backoff(
    supervised, tmp_path: Path
) -> None:
    import redis

    with RedisServer(data_dir=tmp_path / "redis", appendonly=True) as server:
        client = redis.Redis.from_url(server.url)
        client.set("kept", "yes")
        supervisor, clock, lines = supervised(servers=(ServerSpec("Redis", server),))
        supervisor.tick()
        assert lines == []
        assert server.pid is not None
        os.kill(server.pid, signal.SIGKILL)
        eventually(_ticking(supervisor, lambda: bool(lines)), BOUND_S, "the death logged")
        assert lines == ["the embedded Redis died; restarting it in 0.5 s"]
        clock.now += 0.5
        supervisor.tick()
        assert lines[1] == "the embedded Redis restarted"
        assert server.running and client.get("kept") == b"yes"  # on its port, with its data
        client.close()


_FORKS = """
import os, signal, sys, time
from service.processes.forked import Forked

signal.signal(signal.SIGTERM, lambda *_: None)  # (the parent's handler: not the fork's)

def fails() -> int:
    raise ValueError("the entry failed")

def sleeps() -> int:
    time.sleep(60)
    return 0

def tells() -> int:
    print(os.environ.get("ONLY"), os.environ.get("HOME"), open("/proc/self/comm").read().strip())
    return 5

print("fails", Forked(fails, {}, "fork-a").wait(10))
print("exits", Forked(lambda: sys.exit(4), {}, "fork-b").wait(10))
asleep = Forked(sleeps, {}, "fork-c")
print("polled", asleep.poll())
asleep.send_signal(signal.SIGTERM)
print("terminated", asleep.wait(10))
told = Forked(tells, {"ONLY": "this"}, "a-name-longer-than-fifteen")
print("told", told.wait(10))
"""


def test_a_forked_child_exits_with_its_entry_s_code_and_is_set_up_as_a_new_process() -> None:
    """service/processes/forked.py, in a process of its own (a fork of pytest's, which runs
    threads, could inherit a lock held by one of them)."""
    done = subprocess.run(
        [sys.executable, "-c", _FORKS], capture_output=True, text=True, timeout=60, check=True
    )
    lines = done.stdout.splitlines()
    assert lines == [
        "fails 1",
        "exits 4",
        "polled None",
        f"terminated {-signal.SIGTERM}",  # (SIGTERM's default: the parent's handler is not kept)
        "this None a-name-longer-t",  # (its environment alone; the kernel keeps 15 bytes)
        "told 5",
    ], done.stderr
    assert "ValueError: the entry failed" in done.stderr
