"""The webhook duty of a dispatcher: queue the attempts of due webhook deliveries as RQ jobs
(``service.projections.webhooks``), waiting out Redis going away.
"""

from __future__ import annotations

import logging
import threading

import redis

from service.config import Settings
from service.projections.broken_tenants import BrokenTenants
from service.projections.webhooks import Schedule, WebhookStore
from workers.duty import run_duty

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
    `run_duty`; a delivery is due at most 0.25 s late)."""
    broken = BrokenTenants("webhooks", log)

    def one_pass() -> float:
        queue_all(hooks, schedule, queues, broken)
        return 0.25

    run_duty("webhooks", one_pass, stop, log)


def queue_all(
    hooks: WebhookStore,
    schedule: Schedule,
    queues: redis.Redis | None = None,
    broken: BrokenTenants | None = None,
) -> int:
    """One pass: queue every tenant's due deliveries, tenant by tenant, so one whose keys
    break its pass (`broken` names it) holds up no other; how many were queued."""
    broken = broken or BrokenTenants("webhooks", log)
    return broken.each(
        hooks.tenants(), lambda t: hooks.queue_due(schedule, queues=queues, tenants=[t])
    )
