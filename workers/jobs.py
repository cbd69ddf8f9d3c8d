"""RQ jobs: close declarations at the deadline, resolve automatically, audit a table.

Jobs take ids and versions (never objects), are idempotent, and are correct however RQ runs
them: early (they wait for the deadline, or reschedule when it is far), twice (the second run
finds nothing to do: the version-checked append lets exactly one close through), racing a last
declaration (whichever is appended first wins; the other is re-decided and finds the seat
decided or the deadline passed), or after the hand moved on (they do nothing).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import orjson
from redis import Redis
from rq import get_current_job

from service.audit import audit_table
from service.config import Settings
from service.eventlog.redis_store import RedisEventStore
from service.rules import commands
from service.rules import events as ev
from service.rules.errors import GutsError, RuleViolation
from service.rules.state import SHOWDOWN, TIMED_PHASES, TableState
from service.rules.times import parse_iso
from service.tables import Tables, utc_now

from . import scheduling

# A job that starts this long or less before its deadline sleeps until it; earlier, it
# schedules itself again (the scheduler's clock is whole seconds and runs jobs early).
MAX_SLEEP_S = 3.0


def _connection() -> Redis:
    job = get_current_job()
    if job is None:  # called directly (the backstop, tests)
        raise RuntimeError("not running inside an RQ job")
    return job.connection


def tables_for(connection: Redis) -> Tables:
    """The application service on `connection`, with the configured key prefix."""
    settings = Settings.from_env()
    store = RedisEventStore(connection, prefix=settings.key_prefix)
    return Tables(store, follow_ups=scheduling.follow_ups(connection))


def _no_response(state: TableState, events: list[ev.Event]) -> tuple[int, Any]:
    return 200, {"version": state.version}


def _wait_for(moment: str, reschedule: Callable[[], None]) -> bool:
    """Sleep until `moment` if it is near; if it is far (the job ran early), schedule the job
    again and say so. Never lets the caller act before `moment`."""
    wait = (parse_iso(moment) - utc_now()).total_seconds()
    if wait > MAX_SLEEP_S:
        reschedule()
        return False
    if wait > 0:
        time.sleep(wait)
    return True


def close_hand(connection: Redis, table_id: str, hand: int, deadline: str) -> str:
    """Close `hand`'s declarations once `deadline` has passed; what happened, as a word."""
    tables = tables_for(connection)
    state = tables.load(table_id)
    if not _still_waiting(state, hand, deadline):
        scheduling.forget_deadline(connection, table_id, deadline)
        return "moved_on"
    again = lambda: scheduling.schedule_close(connection, table_id, hand, deadline, "again")  # noqa: E731
    if not _wait_for(deadline, again):
        return "rescheduled"

    def decide(state: TableState, now: datetime) -> list[ev.Event]:
        if not _still_waiting(state, hand, deadline):
            raise RuleViolation("the hand moved on")
        return commands.close_at_deadline(state, now)

    try:
        tables.execute(table_id, decide, _no_response)
    except RuleViolation:
        scheduling.forget_deadline(connection, table_id, deadline)
        return "moved_on"
    return "closed"


def _still_waiting(state: TableState, hand: int, deadline: str) -> bool:
    current = state.hand
    return (
        current is not None
        and current.number == hand
        and current.phase in TIMED_PHASES
        and current.deadline == deadline
    )


def enforce_cover_grace(connection: Redis, table_id: str, grace_until: str) -> str:
    """When the cover rule's top-up grace ends, short players sit out the rest of the game."""
    tables = tables_for(connection)
    again = lambda: scheduling.schedule_cover(connection, table_id, grace_until, "again")  # noqa: E731
    if not _wait_for(grace_until, again):
        return "rescheduled"

    def decide(state: TableState, now: datetime) -> list[ev.Event]:
        if state.grace_until != grace_until:
            raise RuleViolation("another grace is running, or none")
        return commands.enforce_cover(state, now)

    try:
        tables.execute(table_id, decide, _no_response)
    except RuleViolation:
        return "nothing_to_do"
    return "sat_out"


def resolve_hand(connection: Redis, table_id: str, hand: int) -> str:
    """Resolve `hand` when its declarations are complete (rules option `auto_resolve`)."""
    tables = tables_for(connection)

    def decide(state: TableState, now: datetime) -> list[ev.Event]:
        current = state.hand
        if current is None or current.number != hand or current.phase != SHOWDOWN:
            raise RuleViolation("the hand is not waiting for its showdown")
        return commands.resolve(state, now)

    try:
        tables.execute(table_id, decide, _no_response)
    except RuleViolation:
        return "moved_on"
    return "resolved"


def close_job(table_id: str, hand: int, deadline: str) -> str:
    """RQ entry point for `close_hand`."""
    return close_hand(_connection(), table_id, hand, deadline)


def resolve_job(table_id: str, hand: int) -> str:
    """RQ entry point for `resolve_hand`."""
    return resolve_hand(_connection(), table_id, hand)


def cover_job(table_id: str, grace_until: str) -> str:
    """RQ entry point for `enforce_cover_grace`."""
    return enforce_cover_grace(_connection(), table_id, grace_until)


def audit_job(audit_id: str, table_id: str) -> dict[str, Any]:
    """RQ entry point: audit `table_id` and keep the report under `audit_id`."""
    connection = _connection()
    scheduling.save_audit(connection, audit_id, {"status": "running", "table_id": table_id})
    try:
        report = audit_table(tables_for(connection).store, table_id)
    except GutsError as exc:
        report = {"ok": False, "table_id": table_id, "error": exc.detail}
    scheduling.save_audit(
        connection, audit_id, {"status": "finished", "table_id": table_id, "result": report}
    )
    return orjson.loads(orjson.dumps(report))  # type: ignore[no-any-return]
