"""Keep a few child processes and embedded servers running until a signal, after gunicorn's
``Arbiter``: the one restart mechanism of ``guts serve``.

The parent starts each child (a :class:`ChildSpec`: a program, or a fork of this process
that runs a function, ``service.processes.forked``), reaps one that dies and starts a
replacement after a delay that doubles with each quick death (:class:`Backoff`), and stops
them all only when SIGTERM or SIGINT comes (:class:`StopSignal`): SIGTERM to each, a wait,
then SIGKILL to the process groups of those still running.

A child given a ``hang_s`` beats a heartbeat (:class:`Heartbeat`: it touches a file the
supervisor names in its environment, as gunicorn's workers touch theirs); one whose
heartbeat stops for ``hang_s`` is hung, and is killed and replaced (gunicorn's
``murder_workers``). An embedded server (a :class:`ServerSpec`: the embedded Redis, the
embedded PostgreSQL, which are not our children) found not running is restarted with the
same backoff.

Each child runs in a process group of its own, so a Ctrl-C in a terminal reaches only the
parent, which then stops the children in the graceful way (gunicorn reads SIGINT as "quit
now" and SIGTERM as "finish what you are doing"). On Linux a child also gets SIGTERM if the
parent is killed outright. When a child dies, what it left in its group (gunicorn's workers,
RQ's scheduler process) is killed before the replacement starts: orphans would hold its
port or its locks.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from service.pacing import HEARTBEAT_ENV, Backoff, Heartbeat

from .forked import Forked
from .signals import ChildProcess, StopSignal, describe_exit, die_with_parent, reap

__all__ = [
    "HEARTBEAT_ENV",
    "Backoff",
    "ChildSpec",
    "Heartbeat",
    "ServerSpec",
    "StopSignal",
    "Supervisor",
    "describe_exit",
]

STOP_TIMEOUT_S = 35.0  # above gunicorn's default graceful timeout (30 s)
_LOG = logging.getLogger("guts.supervisor")


@dataclass(frozen=True)
class ChildSpec:
    """One process the supervisor keeps running: its name (in logs), command line and
    environment."""

    name: str
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(hash=False)
    hang_s: float | None = None
    """When set, the child beats a :class:`Heartbeat` (the file named by ``HEARTBEAT_ENV`` in
    its environment) at least this often, and one that stops is killed and replaced."""
    entry: Callable[[], int] | None = field(default=None, hash=False, compare=False)
    """When set, the child is a fork of this process that runs ``entry()`` (a
    :class:`Forked`, named `title`), where `argv` says what it runs without running it: the
    code is imported once, here, for every child and restart."""
    title: str = ""


class Restartable(Protocol):
    """An embedded server the supervisor keeps running (not a child of ours: it is asked)."""

    @property
    def running(self) -> bool: ...

    def restart(self) -> object: ...


@dataclass(frozen=True)
class ServerSpec:
    """An embedded server to keep running: its name (in logs) and the server."""

    name: str
    server: Restartable = field(hash=False)


DEFAULT_BACKOFF = Backoff()


class _Child:
    """A spec and its current process (None while it waits for its restart)."""

    def __init__(self, spec: ChildSpec, heartbeat: Path | None) -> None:
        self.spec = spec
        self.heartbeat = heartbeat
        self.process: ChildProcess | None = None
        self.started_at = 0.0
        self.failures = 0
        self.restart_at: float | None = None
        self.beat_seen: int | None = None  # the heartbeat file's last modification seen
        self.beat_at = 0.0  # when it was seen to change
        self.hang_killed = False  # killed as hung, not reaped yet

    def hung(self, now: float) -> float | None:
        """How long its heartbeat has been still, when that is longer than its `hang_s`."""
        if self.heartbeat is None or self.spec.hang_s is None or self.hang_killed:
            return None
        try:
            beat = self.heartbeat.stat().st_mtime_ns
        except OSError:
            beat = None
        if beat != self.beat_seen:
            self.beat_seen, self.beat_at = beat, now
            return None
        still = now - self.beat_at
        return still if still > self.spec.hang_s else None


class _Server:
    """An embedded server and its restart schedule."""

    def __init__(self, spec: ServerSpec) -> None:
        self.spec = spec
        self.failures = 0
        self.restart_at: float | None = None
        self.started_at = 0.0


class Supervisor:
    """Runs the children of `specs` and restarts each one that dies (see the module
    docstring), saying so on `log`. `clock` is there for tests; `poll_s` is how often
    :meth:`run` looks for dead children."""

    def __init__(
        self,
        specs: Sequence[ChildSpec],
        *,
        servers: Sequence[ServerSpec] = (),
        backoff: Backoff = DEFAULT_BACKOFF,
        stop_timeout_s: float = STOP_TIMEOUT_S,
        poll_s: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
        log: logging.Logger = _LOG,
    ) -> None:
        names = [spec.name for spec in specs]
        if len(set(names)) != len(names):
            raise ValueError(f"child names must differ: {names}")
        self.backoff = backoff
        self.stop_timeout_s = stop_timeout_s
        self.poll_s = poll_s
        self.clock = clock
        self.log = log
        self._beats = (
            Path(tempfile.mkdtemp(prefix="guts-heartbeats-"))
            if any(spec.hang_s for spec in specs)
            else None
        )
        self._children = [
            _Child(spec, self._beats / spec.name if self._beats and spec.hang_s else None)
            for spec in specs
        ]
        self._servers = [_Server(spec) for spec in servers]

    def start(self) -> None:
        """Start every child."""
        for child in self._children:
            self._spawn(child)

    def pids(self) -> dict[str, int | None]:
        """Each child's current pid (None while it waits for its restart)."""
        return {c.spec.name: c.process.pid if c.process else None for c in self._children}

    def first_exited(self) -> tuple[str, int] | None:
        """The name and exit code of a child that has exited, if any (reaped, not restarted:
        for the start, when a child that dies at once means a mistake, not bad luck)."""
        for child in self._children:
            if child.process is not None:
                code = reap(child.process)
                if code is not None:
                    child.process = None
                    return child.spec.name, code
        return None

    def wait_ready(self, ready: Callable[[], bool], stop: StopSignal, timeout_s: float) -> bool:
        """Wait until `ready()`; False (and a line on stderr) if a child exits, a signal
        comes or `timeout_s` passes first."""
        deadline = time.monotonic() + timeout_s
        while stop.signum is None:
            exited = self.first_exited()
            if exited is not None:
                name, code = exited
                self.log.error("%s %s while starting", name, describe_exit(code))
                return False
            if ready():
                return True
            if time.monotonic() > deadline:
                self.log.error("not ready after %.0f s", timeout_s)
                return False
            stop.wait(self.poll_s)
        return False

    def run(self, stop: StopSignal, also: Callable[[], None] | None = None) -> None:
        """Keep the children running until `stop` has caught a signal (calling `also` at
        each look, for what is kept running another way)."""
        while stop.signum is None:
            self.tick()
            if also is not None:
                also()
            stop.wait(self.poll_s)

    def tick(self) -> None:
        """Reap the children that died (each logged with its restart delay) and restart those
        whose delay has passed."""
        now = self.clock()
        self._keep_servers(now)
        for child in self._children:
            if child.process is not None:
                still = child.hung(now)
                if still is not None:
                    self.log.warning(
                        "%s (pid %d) hung: no heartbeat for %.1f s; killing it",
                        child.spec.name,
                        child.process.pid,
                        still,
                        extra={"child": child.spec.name, "pid": child.process.pid},
                    )
                    child.hang_killed = True
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(child.process.pid, signal.SIGKILL)
                code = reap(child.process)
                if code is not None:
                    pid, uptime = child.process.pid, now - child.started_at
                    what = f"(pid {pid}) {describe_exit(code)} after {uptime:.1f} s"
                    self._schedule_restart(child, what, now, uptime)
            elif child.restart_at is not None and now >= child.restart_at:
                self._spawn(child)
                if child.process is not None:
                    pid = child.process.pid
                    self.log.info(
                        "%s restarted (pid %d)",
                        child.spec.name,
                        pid,
                        extra={"child": child.spec.name, "pid": pid},
                    )

    def stop(self) -> bool:
        """Stop every child; True when each that ran exited with code 0, or was ended by the
        SIGTERM itself (one just restarted may not have set up its handler yet)."""
        running = [c for c in self._children if c.process is not None]
        for child in self._children:
            child.restart_at = None
        for child in running:
            assert child.process is not None
            if child.process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    child.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.stop_timeout_s
        clean = True
        for child in running:
            process = child.process
            assert process is not None
            try:
                code = process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.log.warning("%s did not stop in time; killing it", child.spec.name)
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                code = process.wait()
            child.process = None
            clean = clean and code in (0, -signal.SIGTERM)
        if self._beats is not None:
            for child in self._children:
                if child.heartbeat is not None:
                    child.heartbeat.unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                self._beats.rmdir()
        return clean

    def __enter__(self) -> Supervisor:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _spawn(self, child: _Child) -> None:
        """Start `child` in a process group of its own (see the module docstring)."""
        child.restart_at = None
        spec = child.spec
        env = dict(spec.env)
        if child.heartbeat is not None:
            child.heartbeat.touch()
            env[HEARTBEAT_ENV] = str(child.heartbeat)
        try:
            child.process = (
                subprocess.Popen(
                    list(spec.argv),
                    env=env,
                    stdin=subprocess.DEVNULL,
                    process_group=0,
                    preexec_fn=die_with_parent,  # safe: this process starts no threads
                )
                if spec.entry is None
                else Forked(spec.entry, env, spec.title or spec.name)
            )
        except OSError as error:
            self._schedule_restart(child, f"could not start ({error})", self.clock(), 0.0)
            return
        child.started_at = child.beat_at = self.clock()
        child.beat_seen, child.hang_killed = None, False

    def _keep_servers(self, now: float) -> None:
        """Restart the embedded servers found not running, with the children's backoff."""
        for kept in self._servers:
            name = kept.spec.name
            if kept.restart_at is None:
                if kept.spec.server.running:
                    continue
                uptime = now - kept.started_at
                kept.failures = self.backoff.failures_after(kept.failures, uptime)
                delay = self.backoff.delay(kept.failures)
                kept.restart_at = now + delay
                self.log.warning("the embedded %s died; restarting it in %.1f s", name, delay)
            elif now >= kept.restart_at:
                kept.restart_at = None
                kept.started_at = now
                try:
                    kept.spec.server.restart()
                except Exception as error:  # noqa: BLE001 - tried again after the backoff
                    self.log.error("the embedded %s did not restart (%s)", name, error)
                    continue
                self.log.info("the embedded %s restarted", name)

    def _schedule_restart(self, child: _Child, what: str, now: float, uptime_s: float) -> None:
        """Log that `child` died (`what`) and when it will be started again."""
        child.failures = self.backoff.failures_after(child.failures, uptime_s)
        delay = self.backoff.delay(child.failures)
        child.process = None
        child.restart_at = now + delay
        self.log.warning(
            "%s %s; restarting it in %.1f s",
            child.spec.name,
            what,
            delay,
            extra={"child": child.spec.name, "restart_in_s": delay},
        )
