"""A tenant whose keys break a pass over every tenant (written outside the service: a key of
the wrong type, say), passed over and named at most once a minute, so that it holds up no
other tenant and a lasting fault does not flood the log: the dispatchers' duties
(`workers.duty`) and the follower's projections (a tenant's positions it cannot read)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable

from service.eventlog.redis_errors import redis_away

NAMED_EVERY_S = 60.0
"""How often one broken tenant is named again in the log."""


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
