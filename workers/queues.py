"""The RQ queues the workers listen on, and the serializer every job uses (both agreed with
whoever enqueues, ``service.audit.jobs``)."""

from __future__ import annotations

from service.audit.jobs import AUDITS_QUEUE, SERIALIZER
from service.projections.webhooks import WEBHOOKS_QUEUE

QUEUES: tuple[str, ...] = (AUDITS_QUEUE, WEBHOOKS_QUEUE)
"""Every queue a worker listens on, most urgent first (RQ serves them in this order)."""

__all__ = ["QUEUES", "SERIALIZER"]
