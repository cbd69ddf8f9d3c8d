"""Audits of a table's log: the record each one keeps, and putting one on the audit queue.

The record of audit `<id>` lives at ``<key prefix>:audit:<id>`` for `AUDIT_TTL_S`. The job
that runs the audit is in the workers; it is enqueued here by its dotted name, through RQ's
public API, so that nothing in `service` imports the workers.
"""

from __future__ import annotations

from typing import Any

import orjson
from redis import Redis
from rq import Queue
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer

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


def save_audit(connection: Redis, key_prefix: str, audit_id: str, record: dict[str, Any]) -> None:
    """Keep an audit's status and report."""
    connection.set(audit_key(key_prefix, audit_id), orjson.dumps(record), ex=AUDIT_TTL_S)


def load_audit(connection: Redis, key_prefix: str, audit_id: str) -> dict[str, Any] | None:
    """An audit's status and report, or None when unknown (or expired)."""
    raw = connection.get(audit_key(key_prefix, audit_id))
    return None if raw is None else orjson.loads(raw)


def enqueue_audit(connection: Redis, key_prefix: str, audit_id: str, table_id: str) -> None:
    """Record audit `audit_id` of `table_id` as queued, and queue its job (its id is
    ``audit-<audit_id>``, so the same audit is queued once)."""
    save_audit(connection, key_prefix, audit_id, {"status": "queued", "table_id": table_id})
    Queue(AUDITS_QUEUE, connection=connection, serializer=SERIALIZER).enqueue(
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
    try:
        job = Job.fetch(f"audit-{audit_id}", connection=connection, serializer=SERIALIZER)
    except NoSuchJobError:
        return False
    return job.get_status() in (JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED)
