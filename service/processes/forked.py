"""A child process made by ``fork()`` that runs a function of the code already imported, where
``subprocess`` would start a new Python and import it all again (about 0.5 s of CPU for a
dispatcher or the RQ worker; a fork, a few milliseconds). ``guts serve`` forks its worker and
dispatchers this way, as gunicorn's arbiter forks its workers.

The child is set up as :class:`subprocess.Popen` would set up a new process for the
supervisor: a process group of its own, SIGTERM when the parent dies, stdin from /dev/null,
no descriptor of the parent's but stdout and stderr, the signal handlers back to their
defaults, the environment it is given; and a name of its own (``/proc/PID/comm``, what
``ps -o comm``, ``top`` and ``pgrep`` show; its command line stays the parent's). Its exit
code is the function's; an exception is printed and exits 1. :class:`Forked` answers the part
of Popen's interface the supervisor uses.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Mapping

from .signals import die_with_parent, set_name

_WAIT_STEP_S = 0.01
_STOPS = (signal.SIGTERM, signal.SIGINT)


class Forked:
    """A forked child running `entry()` with the environment `env`, named `name` (at most
    15 bytes are kept)."""

    def __init__(self, entry: Callable[[], int], env: Mapping[str, str], name: str) -> None:
        parent = os.getpid()
        sys.stdout.flush()
        sys.stderr.flush()
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)  # (until the child's
        try:  # handlers are the defaults: a SIGTERM that comes first waits, and ends it)
            pid = os.fork()
            if pid == 0:
                _become_child(entry, env, name, parent, blocked)  # (never returns)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        self.pid = pid
        self.returncode: int | None = None
        try:  # (the child does it too: whichever comes first, the group exists for killpg)
            os.setpgid(pid, pid)
        except OSError:  # (it did, and may have exec'd or exited since)
            pass

    def poll(self) -> int | None:
        """The exit code (minus the signal that killed it) once it has exited, else None."""
        if self.returncode is None:
            self._reap(os.WNOHANG)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Its exit code once it exits; :class:`subprocess.TimeoutExpired` after `timeout`."""
        if timeout is None:
            while self.returncode is None:
                self._reap(0)
            return self.returncode
        deadline = time.monotonic() + timeout
        while (code := self.poll()) is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout)
            time.sleep(min(_WAIT_STEP_S, left))
        return code

    def _reap(self, options: int) -> None:
        try:
            pid, status = os.waitpid(self.pid, options)
        except ChildProcessError:  # reaped by someone else: its code is lost (0, as Popen)
            self.returncode = 0
            return
        if pid:
            self.returncode = os.waitstatus_to_exitcode(status)

    def send_signal(self, signum: int) -> None:
        """Send `signum` to the child (unless it has been reaped: its pid may be another's)."""
        if self.poll() is None:
            os.kill(self.pid, signum)


def _become_child(
    entry: Callable[[], int],
    env: Mapping[str, str],
    name: str,
    parent: int,
    mask: set[int | signal.Signals],
) -> None:
    """In the new child: set it up (see the module docstring), run `entry`, exit with its
    code. Nothing returns to the parent's code that called fork()."""
    code = 1
    try:
        os.setpgid(0, 0)
        die_with_parent()
        if os.getppid() != parent:  # (the parent died before the line above)
            os._exit(1)
        for signum in _STOPS:
            signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        with open(os.devnull, "rb") as devnull:
            os.dup2(devnull.fileno(), 0)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))  # (objects that held them are never used)
        os.environ.clear()
        os.environ.update(env)
        set_name(name)
        code = entry()
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    except BaseException:  # noqa: BLE001 - said on stderr, exit 1, as Python would
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001, S110 - nothing else to do on the way out
                pass
        os._exit(code)
