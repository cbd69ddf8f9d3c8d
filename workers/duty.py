"""What every duty of a dispatcher beside the clock shares (the webhook, wallet and protection
duties): its loop, which nothing but the dispatcher's stop ends (a duty's thread that died
left the dispatcher running without it, saying nothing). A tenant whose keys break a pass is
passed over and named at most once a minute (`service.projections.broken_tenants`)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from service.eventlog.redis_errors import redis_away
from service.pacing import REDIS_AWAY


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
