"""The RQ queues the workers listen on, and the serializer every job uses (both agreed with
whoever enqueues, ``service.audit.jobs``)."""

from __future__ import annotations

from service.audit.jobs import AUDITS_QUEUE, SERIALIZER
from service.projections.webhooks import RETRIES_QUEUE, WEBHOOKS_QUEUE

QUEUES: tuple[str, ...] = (AUDITS_QUEUE, WEBHOOKS_QUEUE, RETRIES_QUEUE)
"""Every queue a worker listens on, most urgent first (RQ serves them in this order): a
webhook's retries come after every first attempt (`service.projections.webhooks`)."""

__all__ = ["QUEUES", "SERIALIZER", "WEBHOOKS_QUEUE"]
