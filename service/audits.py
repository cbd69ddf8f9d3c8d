"""Audits as queued work: their records in Redis, and their jobs on RQ's audit queue.

An audit is queued through RQ's public API by the job's dotted name (the worker imports it;
this module never imports the workers), and reports under ``<prefix>:audit:<audit_id>``.
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
"""The RQ queue of audits: a job rebuilds a table from its log and reports what it found."""
AUDIT_JOB = "workers.jobs.audit_job"
"""The job, by name: ``audit_job(audit_id, table_id, key_prefix)``."""
SERIALIZER = JSONSerializer
"""Jobs are stored as JSON, never pickled."""
AUDIT_TTL_S = 7 * 24 * 3600


def audit_key(prefix: str, audit_id: str) -> str:
    """Where an audit's record lives."""
    return f"{prefix}:audit:{audit_id}"


def save_audit(connection: Redis, prefix: str, audit_id: str, record: dict[str, Any]) -> None:
    """Keep an audit's status and report."""
    connection.set(audit_key(prefix, audit_id), orjson.dumps(record), ex=AUDIT_TTL_S)


def load_audit(connection: Redis, prefix: str, audit_id: str) -> dict[str, Any] | None:
    """An audit's status and report, or None when unknown (or expired)."""
    raw = connection.get(audit_key(prefix, audit_id))
    return None if raw is None else orjson.loads(raw)


def enqueue_audit(connection: Redis, prefix: str, audit_id: str, table_id: str) -> None:
    """Queue an audit of `table_id`, reported under `audit_id`."""
    save_audit(connection, prefix, audit_id, {"status": "queued", "table_id": table_id})
    Queue(AUDITS_QUEUE, connection=connection, serializer=SERIALIZER).enqueue(
        AUDIT_JOB,
        audit_id,
        table_id,
        prefix,
        job_id=f"audit-{audit_id}",
        description=f"audit table {table_id}",
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
