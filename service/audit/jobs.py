"""Audits of a table's log: the record each one keeps, and putting one on the audit queue.

The record of audit `<id>` lives at ``<key prefix>:audit:<id>`` for `AUDIT_TTL_S`. The job
that runs the audit is in the workers; it is enqueued here by its dotted name, through RQ's
public API, so that nothing in `service` imports the workers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import orjson
from redis import Redis
from rq import Queue
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer

from service.eventlog.store import CorruptRecord

AUDITS_QUEUE = "guts-audits"
"""The RQ queue the audit jobs go on (a worker listens on it)."""

AUDIT_JOB = "workers.jobs.audit_job"
"""The job that runs an audit: ``audit_job(audit_id, table_id, key_prefix)``."""

SERIALIZER = JSONSerializer
"""How jobs are stored in Redis: JSON, never pickle (the worker uses the same)."""

AUDIT_TTL_S = 7 * 24 * 3600
"""How long an audit's record (and its failed job) is kept."""


def audit_key(key_prefix: str, audit_id: str) -> str:
    """Where the record of `audit_id` is kept."""
    return f"{key_prefix}:audit:{audit_id}"


def save_record(connection: Redis, key: str, record: dict[str, Any]) -> None:
    """Keep an audit's or a report's record (its request, status and result) at `key`
    (``audit_key``, ``report_key``) for ``AUDIT_TTL_S``."""
    connection.set(key, orjson.dumps(record), ex=AUDIT_TTL_S)


def load_record(connection: Redis, key: str) -> dict[str, Any] | None:
    """The record at `key`, or None when unknown (or expired); CorruptRecord when it cannot
    be read (a 409: another audit or report is started instead)."""
    raw = connection.get(key)
    if raw is None:
        return None
    try:
        record = orjson.loads(cast(bytes, raw))
    except orjson.JSONDecodeError:
        record = None
    if not isinstance(record, dict):
        raise CorruptRecord("its record cannot be read; start another")
    return record


def enqueue_audit(
    connection: Redis, queue: Redis, key_prefix: str, audit_id: str, table_id: str
) -> None:
    """Record audit `audit_id` of `table_id` as queued (in the store's Redis, `connection`),
    and queue its job in RQ's (`queue`; its id is ``audit-<audit_id>``, so the same audit is
    queued once)."""
    queued = {"status": "queued", "table_id": table_id}
    save_record(connection, audit_key(key_prefix, audit_id), queued)
    Queue(AUDITS_QUEUE, connection=queue, serializer=SERIALIZER).enqueue(
        AUDIT_JOB,
        audit_id,
        table_id,
        key_prefix,
        job_id=f"audit-{audit_id}",
        result_ttl=3600,
        failure_ttl=AUDIT_TTL_S,
        job_timeout=3600,
    )


def audit_failed(connection: Redis, audit_id: str) -> bool:
    """Whether the audit's job died without writing its report."""
    return job_failed(connection, f"audit-{audit_id}")


def job_failed(connection: Redis, job_id: str) -> bool:
    """Whether the job `job_id` died without writing its record."""
    try:
        job = Job.fetch(job_id, connection=connection, serializer=SERIALIZER)
    except NoSuchJobError:
        return False
    return job.get_status() in (JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED)


COLLUSION_JOB = "workers.jobs.collusion_job"
"""The job that runs a collusion report: ``collusion_job(report_id, key_prefix)`` (what it
covers is in its record)."""


def report_key(key_prefix: str, report_id: str) -> str:
    """Where the record of report `report_id` is kept (as long as an audit's)."""
    return f"{key_prefix}:report:{report_id}"


def enqueue_report(
    connection: Redis, queue: Redis, key_prefix: str, report_id: str, record: dict[str, Any]
) -> None:
    """Record report `report_id` (`record`: what it covers) as queued, and queue its job
    (``report-<id>``) on the audits' queue."""
    save_record(connection, report_key(key_prefix, report_id), {**record, "status": "queued"})
    Queue(AUDITS_QUEUE, connection=queue, serializer=SERIALIZER).enqueue(
        COLLUSION_JOB,
        report_id,
        key_prefix,
        job_id=f"report-{report_id}",
        result_ttl=3600,
        failure_ttl=AUDIT_TTL_S,
        job_timeout=3600,
    )


@dataclass(frozen=True)
class QueuedJobs:
    """The use cases' `Jobs` (``service.application.ports``): records in the store's Redis
    (`store`), jobs in RQ's (`queue`), under `key_prefix`."""

    store: Redis
    queue: Redis
    key_prefix: str

    def audit_record(self, audit_id: str) -> dict[str, Any] | None:
        return load_record(self.store, audit_key(self.key_prefix, audit_id))

    def start_audit(self, audit_id: str, table_id: str) -> None:
        enqueue_audit(self.store, self.queue, self.key_prefix, audit_id, table_id)

    def audit_failed(self, audit_id: str) -> bool:
        return audit_failed(self.queue, audit_id)

    def report_record(self, report_id: str) -> dict[str, Any] | None:
        return load_record(self.store, report_key(self.key_prefix, report_id))

    def start_report(self, report_id: str, record: dict[str, Any]) -> None:
        enqueue_report(self.store, self.queue, self.key_prefix, report_id, record)

    def report_failed(self, report_id: str) -> bool:
        return job_failed(self.queue, f"report-{report_id}")
