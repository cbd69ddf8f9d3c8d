"""The RQ queues of the service: their names, and the serializer every job uses.

Whoever enqueues a job and the worker that runs it must agree on both, so both come from
here: ``queue(DEADLINES, connection)`` gives a queue that serializes its jobs as JSON
(the house rule: jobs carry ids and versions, never pickled objects).
"""

from __future__ import annotations

import functools

from redis import Redis
from rq import Queue
from rq.serializers import JSONSerializer

DEADLINES = "guts-deadlines"
"""Decision deadlines: a job that closes a hand's declarations when its time is up."""

AUDITS = "guts-audits"
"""Audits: a job that rebuilds a table from its log and reports what it found."""

QUEUES: tuple[str, ...] = (DEADLINES, AUDITS)
"""Every queue a worker listens on, most urgent first (RQ serves them in this order)."""

SERIALIZER = JSONSerializer
"""How jobs are stored in Redis: JSON, never pickle."""


def queue(name: str, connection: Redis) -> Queue:
    """The queue `name` on `connection`, with the service's serializer."""
    if name not in QUEUES:
        raise ValueError(f"unknown queue {name!r}; one of: {', '.join(QUEUES)}")
    return _queue(name, connection)


@functools.lru_cache(maxsize=64)
def _queue(name: str, connection: Redis) -> Queue:
    # Built once per connection: a deal enqueues a job, and a Queue is not free to make.
    return Queue(name, connection=connection, serializer=SERIALIZER)
