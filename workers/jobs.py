"""RQ jobs. Jobs take ids (never objects), are idempotent, and are enqueued by name
(``service.audit.jobs``), so nothing outside the workers imports this module.

Deadlines are not jobs: the dispatcher (``workers.dispatcher``) enforces them.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import Any

import orjson
from redis import Redis, RedisError
from redis.exceptions import RedisClusterException
from rq import get_current_job

from service.archive import collusion
from service.audit.jobs import audit_key, load_record, report_key, save_record
from service.audit.rebuild import audit_table
from service.config import Settings
from service.infrastructure import event_store, ledger_of, open_archive, store_client, wallet_of
from service.projections.wallet_http import CONNECTIONS, FAILURES
from service.projections.webhooks import Schedule, WebhookStore, sign
from service.rules.errors import GutsError
from service.rules.times import parse_iso

log = logging.getLogger("guts.worker")


def audit_job(audit_id: str, table_id: str, key_prefix: str) -> dict[str, Any]:
    """Audit `table_id` (its keys under `key_prefix`) and keep the report under `audit_id`."""
    settings, connection = _job_stores(key_prefix)
    key = audit_key(key_prefix, audit_id)
    save_record(connection, key, {"status": "running", "table_id": table_id})
    archive = open_archive(settings, size=1)  # the events trimmed from Redis are there
    try:
        store = event_store(settings, connection, archive)
        ledger, wallet = ledger_of(settings, connection, archive), wallet_of(settings, connection)
        report = audit_table(store, table_id, ledger, wallet.store)
    except GutsError as exc:
        report = {"ok": False, "table_id": table_id, "error": exc.detail}
    finally:
        if archive is not None:
            archive.close()
    record = {"status": "finished", "table_id": table_id, "result": report}
    save_record(connection, key, record)
    return orjson.loads(orjson.dumps(report))  # type: ignore[no-any-return]


def collusion_job(report_id: str, key_prefix: str) -> dict[str, Any]:
    """Run collusion report `report_id` (what it covers is in its record) over the archive
    (``service.archive.collusion``) and keep its result in the record."""
    settings, connection = _job_stores(key_prefix)
    key = report_key(key_prefix, report_id)
    record = load_record(connection, key)
    if record is None:
        return {}
    save_record(connection, key, {**record, "status": "running"})
    archive = open_archive(settings, size=1)
    if archive is None:
        raise RuntimeError("a collusion report needs the archive (GUTS_DATABASE_URL)")
    try:
        hands = collusion.facts(
            archive.pool,
            record["tenant"],
            parse_iso(record["from"]) if record["from"] else None,
            parse_iso(record["to"]) if record["to"] else None,
        )
        result = collusion.score_pairs(hands, record["min_hands"])
    finally:
        archive.close()
    save_record(connection, key, {**record, "status": "finished", "result": result})
    return result


STORE_CLIENT_FOR_S = 10.0
"""How long the worker keeps one client of the store before it makes another (`store_ready`)."""
_store: tuple[float, tuple[str, bool], Redis] | None = None
"""The store's client made by this worker process: when, for which Redis, and the client."""


def store_ready(settings: Settings | None = None, now: float | None = None) -> None:
    """Make the store's client (``REDIS_URL``) in the worker, before it forks a job's process,
    so that each job starts with it rather than a client of its own: a cluster client starts
    by reading Redis's command table and the map of the slots (~200 ms of CPU a job on a
    loaded machine, two thirds of a webhook attempt's cost). The job's process opens its own
    connections (redis-py's pools do so in a forked process); a client older than
    `STORE_CLIENT_FOR_S` is made again, so the map a job starts from is recent (a job that
    meets a failover reads it again itself). A Redis that cannot be reached leaves the jobs
    to make their own client (and meet the error there, as a job's failure)."""
    global _store
    settings = settings or Settings.from_env()
    now = time.monotonic() if now is None else now
    if not settings.redis_url:
        return
    which = (settings.redis_url, settings.redis_cluster)
    if _store is not None and _store[1] == which and now - _store[0] < STORE_CLIENT_FOR_S:
        return
    if _store is not None:
        _store[2].close()
        _store = None
    try:
        _store = (now, which, store_client(settings, connections=4))
    except (RedisError, RedisClusterException, OSError) as error:
        log.warning("the store's Redis cannot be reached: %s", type(error).__name__)


def _job_stores(key_prefix: str) -> tuple[Settings, Redis]:
    """The running job's settings (its keys under `key_prefix`) and the store's Redis
    (``REDIS_URL``, a cluster with ``GUTS_REDIS_CLUSTER``: the client the worker made before it
    forked this job, `store_ready`, else one of its own), which may not be where the job was
    queued; without ``REDIS_URL`` (a worker run in-process), the queues'."""
    job = get_current_job()
    if job is None:
        raise RuntimeError("not running inside an RQ job")
    settings = replace(Settings.from_env(), key_prefix=key_prefix)
    if not settings.redis_url:
        return settings, job.connection
    if _store is not None and _store[1] == (settings.redis_url, settings.redis_cluster):
        return settings, _store[2]
    return settings, store_client(settings, connections=4)


def deliver_webhook(
    key_prefix: str, tenant: str, delivery_id: str, schedule: dict[str, Any]
) -> str:
    """One attempt of a webhook delivery (see `service.projections.webhooks`): post its body,
    signed, with
    a bounded timeout and no redirects followed, and record how it went. Idempotent enough
    for at-least-once: an attempt another job recorded first is not recorded twice."""
    settings, connection = _job_stores(key_prefix)
    hooks = WebhookStore(connection, prefix=key_prefix)
    paced = Schedule(**schedule)
    before = hooks.delivery(tenant, delivery_id)
    if before is None or before["status"] != "pending":
        return "nothing to do"
    hook = hooks.hook(tenant, before["webhook_id"])
    if hook is None:
        hooks.stop(tenant, before, "the webhook was deleted")
        return "stopped"
    body = before["body"].encode()
    timestamp = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "guts-webhooks",
        "webhook-id": delivery_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign(hook["secret"], delivery_id, timestamp, body),
    }
    private_ok = settings.allow_private_urls  # (this worker's: what it may call)
    status, error = _post(hook["url"], body, headers, paced.timeout_s, private_ok)
    recorded = hooks.record_attempt(tenant, before, status, error, paced)
    return "recorded" if recorded is not None else "recorded by another attempt"


def _post(
    url: str, body: bytes, headers: dict[str, str], timeout_s: float, private_ok: bool
) -> tuple[int | None, str | None]:
    """POST `body` to `url` within `timeout_s` in all (the wallets' client: a receiver that
    answers a byte at a time holds the worker no longer, `service.projections.wallet_http`),
    no redirect followed: the status (None when there was no whole answer) and what went
    wrong (None for a 2xx). The error never holds the URL (its query may carry a token)."""
    try:
        status, _, _ = CONNECTIONS.post(
            url, body, headers, timeout_s, read=False, private_ok=private_ok
        )
    except FAILURES as failed:  # timeouts, refused connections, answers not HTTP
        return None, type(failed).__name__
    if 200 <= status < 300:
        return status, None
    if 300 <= status < 400:
        return status, f"HTTP {status}: a redirect (not followed)"
    return status, f"HTTP {status}"
