"""Start one RQ worker on the service's queues (audits).

Deadlines are the dispatcher's (``workers.dispatcher``), so the worker runs without RQ's
scheduler. Stopping is RQ's own: the first SIGTERM or SIGINT is a warm shutdown (the job in
flight finishes), a second one within the job is a cold shutdown. An idle worker stops by an
exception that RQ's signal handler raises wherever the worker happens to be; where that is
inside code that catches every exception (a log line being written: `logging` prints the
error and carries on), the stop would be lost, and the worker would go on waiting for jobs
(or for a Redis that is gone) until killed. `BeatingWorker` remembers the signal and stops
at its next heartbeat, which RQ's loop calls each time round.
"""

from __future__ import annotations

import socket
import uuid
from types import FrameType

from redis import Redis, RedisError
from redis.client import Pipeline
from rq import Queue, Worker
from rq.exceptions import StopRequested
from rq.job import Job
from rq.worker import WorkerStatus

from service.pacing import Heartbeat

from .jobs import store_ready
from .queues import QUEUES, SERIALIZER


def worker_name() -> str:
    """A name that says where the worker runs and stays unique across restarts."""
    return f"guts-{socket.gethostname()}-{uuid.uuid4().hex[:8]}"


WORKER_TTL_S = 60
"""RQ's ``worker_ttl``: an idle worker beats every 45 s (its dequeue timeout, the TTL less 15 s),
one in a job every 30 s (RQ's job monitoring interval)."""


class BeatingWorker(Worker):
    """RQ's worker, whose own heartbeat (its public ``heartbeat`` method, called from its
    loop) also beats the supervisor's (``service.processes.supervisor.Heartbeat``), and
    ends an idle worker that a stop signal reached (see the module's doc)."""

    beats: Heartbeat | None = None
    stop_signalled = False

    def request_stop(self, signum: int, frame: FrameType | None) -> None:
        self.stop_signalled = True  # (before RQ raises, and someone may swallow it)
        super().request_stop(signum, frame)  # type: ignore[no-untyped-call]

    def execute_job(self, job: Job, queue: Queue) -> None:
        """Run `job` in a process of its own, as RQ does, forked from a worker that holds
        the store's client (`workers.jobs.store_ready`)."""
        store_ready()
        super().execute_job(job, queue)

    def heartbeat(self, timeout: int | None = None, pipeline: Pipeline | None = None) -> None:
        if self.stop_signalled and self.get_state() != WorkerStatus.BUSY:
            raise StopRequested  # (a job in flight is RQ's warm shutdown: it finishes first)
        if self.beats is not None:
            self.beats.beat()
        super().heartbeat(timeout, pipeline)


def build_worker(
    connection: Redis, *, name: str | None = None, beats: Heartbeat | None = None
) -> BeatingWorker:
    """An RQ worker listening on every queue in `QUEUES`, most urgent first."""
    worker = BeatingWorker(
        list(QUEUES),
        name=name or worker_name(),
        connection=connection,
        serializer=SERIALIZER,
        worker_ttl=WORKER_TTL_S,
    )
    worker.beats = beats
    return worker


def run_worker(
    redis_url: str,
    *,
    burst: bool = False,
    log_level: str = "info",
    beats: Heartbeat | None = None,
) -> bool:
    """Run a worker against `redis_url` until it is stopped (with `burst`, run the jobs that
    are queued and return), logging at `log_level` (through the handlers the entry point set
    up: RQ adds its own only where there are none), beating `beats`. Returns whether a stop
    signal (SIGTERM, SIGINT) ended it; a worker stopped so whose Redis is gone returns too,
    its death unrecorded there (its key expires with its TTL)."""
    connection = Redis.from_url(redis_url)
    worker = build_worker(connection, beats=beats)  # (connects at its first command)
    try:
        worker.work(burst=burst, logging_level=log_level.upper())
    except RedisError:
        if not worker.stop_signalled:
            raise
    finally:
        connection.close()
    return worker.stop_signalled
