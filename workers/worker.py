"""Start one RQ worker on the service's queues (audits).

Deadlines are the dispatcher's (``workers.dispatcher``), so the worker runs without RQ's
scheduler. Stopping is RQ's own: the first SIGTERM or SIGINT is a warm shutdown (the job in
flight finishes), a second one within the job is a cold shutdown.
"""

from __future__ import annotations

import socket
import uuid

from redis import Redis
from rq import Worker

from .queues import QUEUES, SERIALIZER


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


def run_worker(redis_url: str, *, burst: bool = False, log_level: str = "info") -> bool:
    """Run a worker against `redis_url` until it is stopped (with `burst`, run the jobs that
    are queued and return), logging at `log_level` (through the handlers the entry point set
    up: RQ adds its own only where there are none). Returns whether the worker ran any job."""
    connection = Redis.from_url(redis_url)
    try:
        return build_worker(connection).work(burst=burst, logging_level=log_level.upper())
    finally:
        connection.close()
