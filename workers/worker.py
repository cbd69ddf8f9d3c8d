"""Start one RQ worker on the service's queues, with RQ's scheduler (deadlines are
scheduled jobs: ``enqueue_at`` needs a worker started with the scheduler) and the deadline
backstop beside it (see ``workers.backstop``: it closes what the scheduler missed).

Stopping is RQ's own: the first SIGTERM or SIGINT is a warm shutdown (the job in flight
finishes, then the worker and its scheduler exit); a second one within the job is a cold
shutdown. This module only starts workers; the jobs live in their own modules.
"""

from __future__ import annotations

import socket
import uuid

from redis import Redis
from rq import Worker

from .queues import QUEUES, SERIALIZER

BACKSTOP_JOIN_S = 5.0  # a sweep in progress gets this long to finish on shutdown


def worker_name() -> str:
    """A name that says where the worker runs and stays unique across restarts."""
    return f"guts-{socket.gethostname()}-{uuid.uuid4().hex[:8]}"


def build_worker(connection: Redis, *, name: str | None = None) -> Worker:
    """An RQ worker listening on every queue in `QUEUES`, most urgent first."""
    return Worker(
        list(QUEUES),
        name=name or worker_name(),
        connection=connection,
        serializer=SERIALIZER,
    )


def run_worker(redis_url: str, *, burst: bool = False) -> bool:
    """Run a worker against `redis_url` until it is stopped, with the backstop sweeping in a
    thread; with `burst`, sweep once, run the jobs that are due and return. Returns whether
    the worker ran any job."""
    from .backstop import Backstop, sweep

    connection = Redis.from_url(redis_url)
    try:
        worker = build_worker(connection)
        if burst:
            sweep(connection)
            return worker.work(burst=True, with_scheduler=True, logging_level="INFO")
        backstop = Backstop(redis_url)
        backstop.start()
        try:
            return worker.work(with_scheduler=True, logging_level="INFO")
        finally:
            backstop.stop()
            backstop.join(BACKSTOP_JOIN_S)
    finally:
        connection.close()
