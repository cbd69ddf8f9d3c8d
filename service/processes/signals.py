"""The process side of supervision: the stop signal the supervisor waits for, how a child's
exit is described, reaping a child and what it left in its process group, and a new child's
death signal when its parent dies and its name (``service.processes.supervisor`` and
``service.processes.forked`` use them)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from collections.abc import Callable
from types import FrameType
from typing import Protocol

_PR_SET_PDEATHSIG = 1
_PR_SET_NAME = 15


def describe_exit(returncode: int) -> str:
    """``exited with code 1`` or ``was killed by SIGKILL`` (Popen's negative codes)."""
    if returncode >= 0:
        return f"exited with code {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    return f"was killed by {name}"


class StopSignal:
    """Remembers the first SIGTERM or SIGINT; the supervisor polls it."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._previous: dict[int, object] = {}

    def install(self) -> None:
        """Catch SIGTERM and SIGINT from now on."""
        for signum in (signal.SIGTERM, signal.SIGINT):
            previous = signal.signal(signum, self._handle)
            self._previous.setdefault(signum, previous)

    def uninstall(self) -> None:
        """Restore the handlers that were there before the first :meth:`install`."""
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]
        self._previous.clear()

    def wait(self, timeout_s: float, poll_s: float = 0.1) -> bool:
        """Sleep up to `timeout_s`, less if a signal comes; whether one came."""
        deadline = time.monotonic() + timeout_s
        while self.signum is None:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(poll_s, left))  # a handler that returns does not cut a sleep short
        return True

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is None:
            self.signum = signum


class ChildProcess(Protocol):
    """What the supervisor uses of a child: :class:`subprocess.Popen`'s, which
    ``service.processes.forked.Forked`` answers too."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def send_signal(self, signum: int) -> None: ...


def reap(process: ChildProcess) -> int | None:
    """`process`'s exit code once it has exited (minus the signal that killed it), else None.

    What it left in its process group is killed before it is reaped: until then its pid,
    which is the group's id, cannot be given to another process.
    """
    if process.returncode is not None:
        return process.returncode
    try:
        exited = os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:  # reaped elsewhere; Popen reports it
        return process.poll()
    if exited is None or exited.si_pid == 0:
        return None
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    return process.wait()


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return prctl


_PRCTL = _load_prctl()


def die_with_parent() -> None:
    """In a new child, before exec: get SIGTERM when the parent dies (Linux only)."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGTERM)


def set_name(name: str) -> None:
    """Name this process `name` in /proc/PID/comm (what ``ps -o comm``, ``top`` and ``pgrep``
    show; the kernel keeps 15 bytes) on Linux; elsewhere nothing."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_NAME, ctypes.c_char_p(name.encode()[:15]))
