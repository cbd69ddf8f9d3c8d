"""RQ jobs. Jobs take ids (never objects), are idempotent, and are enqueued by name
(``service.audits``), so nothing outside the workers imports this module.

Deadlines are not jobs: the dispatcher (``workers.dispatcher``) enforces them.
"""

from __future__ import annotations

from typing import Any

import orjson
from rq import get_current_job

from service.audit import audit_table
from service.audits import save_audit
from service.eventlog.redis_store import RedisEventStore
from service.ledger_store import LedgerStore
from service.rules.errors import GutsError


def audit_job(audit_id: str, table_id: str, key_prefix: str) -> dict[str, Any]:
    """Audit `table_id` (its keys under `key_prefix`) and keep the report under `audit_id`."""
    job = get_current_job()
    if job is None:
        raise RuntimeError("not running inside an RQ job")
    connection = job.connection
    save_audit(connection, key_prefix, audit_id, {"status": "running", "table_id": table_id})
    try:
        store = RedisEventStore(connection, prefix=key_prefix)
        report = audit_table(store, table_id, LedgerStore(connection, prefix=key_prefix))
    except GutsError as exc:
        report = {"ok": False, "table_id": table_id, "error": exc.detail}
    record = {"status": "finished", "table_id": table_id, "result": report}
    save_audit(connection, key_prefix, audit_id, record)
    return orjson.loads(orjson.dumps(report))  # type: ignore[no-any-return]
