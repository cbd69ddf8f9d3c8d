"""How the service's loops pace themselves: :class:`Backoff`, the waits between attempts
that double (a child's restart, a lost Redis), and :class:`Heartbeat`, how a supervised
process says it is alive (``service.processes.supervisor`` kills one that stops)."""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass

__all__ = ["HEARTBEAT_ENV", "REDIS_AWAY", "Backoff", "Heartbeat"]


@dataclass(frozen=True)
class Backoff:
    """How long to wait before restarting a child that died: `first_s` after its first death,
    doubled after each further death, at most `cap_s`; a child that stayed up `stable_s` or
    longer before dying starts over from `first_s`."""

    first_s: float = 0.5
    cap_s: float = 10.0
    stable_s: float = 5.0
    """Long enough to have started and done work: a child killed after that is a fault of
    its own, not the crash loop its earlier deaths were (which would otherwise leave it down
    for up to `cap_s`)."""

    def failures_after(self, failures: int, uptime_s: float) -> int:
        """Deaths in a row once a child that had `failures` before dies after `uptime_s`."""
        return 1 if uptime_s >= self.stable_s else failures + 1

    def delay(self, failures: int) -> float:
        """The wait before the restart that follows `failures` deaths in a row (1 or more)."""
        return float(min(self.cap_s, self.first_s * 2 ** max(0, failures - 1)))


REDIS_AWAY = Backoff(first_s=0.5, cap_s=2.0)
"""How every loop that needs Redis (the clock, the followers, their lease, the webhook, wallet
and protection duties) waits while Redis cannot be reached: half a second, doubling, at most
2 s, so it goes on at most 2 s after Redis answers again (a failover, a restart); a try is a
connection attempt, cheap for both sides."""

HEARTBEAT_ENV = "GUTS_HEARTBEAT_FILE"
"""The environment variable that names a supervised child's heartbeat file."""


class Heartbeat:
    """A child's side of the heartbeat: :meth:`beat` touches the file at `path` (at most once
    every `every_s`; nothing without a path: a child run alone)."""

    def __init__(self, path: str | None, every_s: float = 0.5) -> None:
        self.path = path
        self.every_s = every_s
        self._next = 0.0

    def beat(self) -> None:
        """Say "alive"; call it from the loop that must not hang, not from a thread of its
        own (which would go on beating while the loop is stuck)."""
        if self.path is None or time.monotonic() < self._next:
            return
        self._next = time.monotonic() + self.every_s
        with contextlib.suppress(OSError):  # the supervisor's directory gone: it is stopping
            os.utime(self.path)
