"""Naming a tenant whose keys break a duty's pass (written outside the service: a key of the
wrong type, say): the duty passes it over, so it holds up no other tenant, and says so at
most once a minute, so a lasting fault does not flood the log."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

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
