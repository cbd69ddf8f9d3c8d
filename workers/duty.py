"""What every duty of a dispatcher beside the clock shares (the webhook, wallet and protection
duties): its loop, which nothing but the dispatcher's stop ends (a duty's thread that died
left the dispatcher running without it, saying nothing), and passing over a tenant whose
keys break its pass (written outside the service: a key of the wrong type, say), named at
most once a minute, so it holds up no other tenant and a lasting fault does not flood the
log."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable

from service.eventlog.redis_errors import redis_away
from service.pacing import REDIS_AWAY

NAMED_EVERY_S = 60.0
"""How often one broken tenant is named again in the log."""


def run_duty(
    what: str, one_pass: Callable[[], float], stop: threading.Event, log: logging.Logger
) -> None:
    """Run `one_pass` (it returns how long to wait before the next) until `stop`. Redis going
    away is waited out with a warning (`REDIS_AWAY`'s growing wait); anything else (a bug, a
    value no check foresaw) is logged with its traceback and tried again after the same wait."""
    failures = 0
    while not stop.is_set():
        try:
            failures, wait = 0, one_pass()
        except Exception as error:  # noqa: BLE001 - the duty's thread outlives it
            failures += 1
            wait = REDIS_AWAY.delay(failures)
            if redis_away(error):  # (unreachable, or a failover: CLUSTERDOWN, TRYAGAIN...)
                log.warning("%s: Redis cannot serve (%s)", what, type(error).__name__)
            else:
                log.exception("%s: a pass failed", what)
        stop.wait(wait)


class BrokenTenants:
    """The tenants a duty (`what`: its name in the log) found broken, and when each was last
    named."""

    def __init__(
        self,
        what: str,
        log: logging.Logger,
        every_s: float = NAMED_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.what, self.log, self.every_s, self.clock = what, log, every_s, clock
        self._named: dict[str, float] = {}

    def each(self, tenants: Iterable[str], serve: Callable[[str], int]) -> int:
        """`serve` each of `tenants` in turn, the sum of what they return; one that fails on
        anything but Redis going away is named (`name`) and passed over."""
        done = 0
        for tenant in tenants:
            try:
                done += serve(tenant)
            except Exception as error:
                if redis_away(error):
                    raise
                self.name(tenant, error)
        return done

    def name(self, tenant: str, error: Exception) -> None:
        """Say that `tenant`'s pass failed on `error`, unless it was said less than `every_s`
        ago."""
        now = self.clock()
        if now - self._named.get(tenant, now - self.every_s) < self.every_s:
            return
        self._named[tenant] = now
        self.log.error(
            "%s: tenant %s cannot be served (%s: %s); its others wait, no other tenant does",
            self.what,
            tenant,
            type(error).__name__,
            str(error)[:200],
            extra={"tenant": tenant},
        )
