"""The webhook duty of a dispatcher: queue the attempts of due webhook deliveries as RQ jobs
(``service.projections.webhooks``), waiting out Redis going away.
"""

from __future__ import annotations

import logging
import threading

import redis

from service.config import Settings
from service.eventlog.redis_errors import redis_away
from service.pacing import REDIS_AWAY
from service.projections.webhooks import Schedule, WebhookStore
from workers.tenants import BrokenTenants

log = logging.getLogger("guts.dispatcher")


def webhook_schedule(settings: Settings) -> Schedule:
    """How webhook attempts are paced, from the settings."""
    return Schedule(
        first_retry_s=settings.webhook_first_retry_s,
        max_wait_s=settings.webhook_max_wait_s,
        retry_for_s=settings.webhook_retry_for_s,
        timeout_s=settings.webhook_timeout_s,
    )


def queue_webhooks(
    hooks: WebhookStore,
    schedule: Schedule,
    stop: threading.Event,
    queues: redis.Redis | None = None,
) -> None:
    """Queue the attempts of due webhook deliveries until `stop` (a thread of the dispatcher:
    a delivery is due at most `poll` late), waiting out Redis going away. Nothing else ends
    it: a thread that died would leave every tenant's deliveries waiting, with no word."""
    failures, broken = 0, BrokenTenants("webhooks", log)
    while not stop.is_set():
        try:
            queue_all(hooks, schedule, queues, broken)
            failures, wait = 0, 0.25
        except Exception as error:  # noqa: BLE001 - its thread outlives it
            failures += 1
            wait = REDIS_AWAY.delay(failures)
            if redis_away(error):  # (a failover: CLUSTERDOWN, TRYAGAIN, READONLY...)
                log.warning("webhooks: Redis unreachable (%s)", type(error).__name__)
            else:  # a bug, or a value no check foresaw: tried again after the wait
                log.exception("webhooks: queueing the due deliveries failed")
        stop.wait(wait)


def queue_all(
    hooks: WebhookStore,
    schedule: Schedule,
    queues: redis.Redis | None = None,
    broken: BrokenTenants | None = None,
) -> int:
    """One pass: queue every tenant's due deliveries, tenant by tenant, so one whose keys
    break its pass (`broken` names it) holds up no other; how many were queued."""
    queued = 0
    for tenant in hooks.tenants():
        try:
            queued += hooks.queue_due(schedule, queues=queues, tenants=[tenant])
        except Exception as error:
            if redis_away(error):
                raise
            (broken or BrokenTenants("webhooks", log)).name(tenant, error)
    return queued
