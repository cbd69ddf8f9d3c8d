"""Putting work on the queues: deadline closes, automatic resolves, audits; and the deadline
index the backstop sweeps.

Every hand that waits for declarations has an entry in a sorted set (`<prefix>:deadlines`,
table id scored by its deadline in epoch seconds) and a close job scheduled `LEAD_S` before its
deadline with a deterministic id. The job acts at the deadline itself; the backstop closes
whatever the scheduler missed.
"""

from __future__ import annotations

import calendar
import functools
import hashlib
import zlib
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from redis import Redis
from redis.client import Pipeline

from service.config import Settings
from service.eventlog.store import Command
from service.rules import events as ev
from service.rules.dealing import short_of_cover
from service.rules.state import SHOWDOWN, TIMED_PHASES, TableState
from service.rules.times import parse_iso

from .queues import AUDITS, DEADLINES, SERIALIZER, queue

LEAD_S = 1.0  # the scheduler polls once a second and may run a job up to ~0.9 s early
AUDIT_TTL_S = 7 * 24 * 3600


@functools.cache
def _prefix() -> str:
    return Settings.from_env().key_prefix


def deadlines_key() -> str:
    """The sorted set of hands waiting for declarations: table id -> deadline (epoch s)."""
    return f"{_prefix()}:deadlines"


def job_id(kind: str, *parts: object) -> str:
    """A deterministic RQ job id (RQ allows only letters, digits, _ and -)."""
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode()).hexdigest()[:32]
    return f"{kind}-{digest}"


def schedule_close(
    connection: Redis, table_id: str, hand: int, deadline: str, attempt: str = ""
) -> None:
    """Schedule the close of `hand` for `deadline`, and index the deadline for the backstop
    (one round trip: both go in one pipeline)."""
    with connection.pipeline(transaction=False) as pipe:
        _schedule_close(connection, pipe, table_id, hand, deadline, attempt)
        pipe.execute()


def _schedule_close(
    connection: Redis, pipe: Pipeline, table_id: str, hand: int, deadline: str, attempt: str = ""
) -> None:
    from .jobs import close_job

    due = parse_iso(deadline)
    pipe.zadd(deadlines_key(), {table_id: due.timestamp()})
    _enqueue_at(
        connection,
        pipe,
        due - timedelta(seconds=LEAD_S),
        close_job,
        (table_id, hand, deadline),
        job_id=job_id("close", table_id, hand, deadline, attempt),
        description=f"close hand {hand} of table {table_id} at {deadline}",
    )


_SCHEDULED_OPTIONS = {"result_ttl": 300, "failure_ttl": 24 * 3600}
"""RQ options of every scheduled job (the close of a hand, the end of a cover grace)."""


def _enqueue_at(
    connection: Redis,
    pipe: Pipeline,
    when: datetime,
    func: Callable[..., Any],
    args: tuple[Any, ...],
    *,
    job_id: str,
    description: str,
    by_rq: bool = False,
) -> None:
    """Put on `pipe` what RQ's `enqueue_at` of the job on the deadlines queue puts there:
    from the function's template, or (`by_rq`, or when it has none) by RQ itself."""
    template = None if by_rq else _JobTemplate.of(connection, func)
    if template is not None:
        for command in template.fill(_JobTemplate.values(func, args, job_id, description, when)):
            pipe.execute_command(*command)
        return
    queue(DEADLINES, connection).enqueue_at(
        when,
        func,
        *args,
        job_id=job_id,
        description=description,
        pipeline=pipe,
        **_SCHEDULED_OPTIONS,
    )


class _Slot(str):
    """Where a job's own value goes in a template's command."""


class _JobTemplate:
    """The commands RQ's `enqueue_at` records for a scheduled job of one function, made by
    RQ itself for a stand-in job, with the slots where each job's own values go.

    RQ builds and checks a whole job object each time, which was about a third of a deal's
    CPU; what it writes differs from one job of a function to the next only in the job's id
    (and key), description, data (its function and arguments, compressed), creation time and
    due time. A template is used only once it reproduces, byte for byte, what RQ writes for
    a second stand-in job; when it does not (another RQ version that writes something else),
    every job goes through RQ instead.
    """

    _made: dict[Callable[..., Any], _JobTemplate | None] = {}

    def __init__(self, commands: Sequence[tuple[Any, ...]]) -> None:
        self.commands = [tuple(command) for command in commands]
        # Each command with the positions of its slots, so a job copies only what changes.
        self._plan = [
            (command, [(i, str(arg)) for i, arg in enumerate(command) if type(arg) is _Slot])
            for command in self.commands
        ]

    @staticmethod
    def values(
        func: Callable[..., Any],
        args: tuple[Any, ...],
        job_id: str,
        description: str,
        when: datetime,
        created: str | None = None,
    ) -> dict[str, Any]:
        """A job's own values, computed as RQ computes them."""
        from rq.job import Job

        call = (f"{func.__module__}.{func.__qualname__}", None, args, {})
        return {
            "id": job_id,
            "key": Job.key_for(job_id),
            "description": description,
            "data": zlib.compress(SERIALIZER.dumps(call)),
            "created": created or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "score": calendar.timegm(when.utctimetuple()),
        }

    def fill(self, values: dict[str, Any]) -> list[tuple[Any, ...]]:
        """The commands for the job with these values."""
        filled = []
        for command, slots in self._plan:
            if slots:
                mutable = list(command)
                for i, name in slots:
                    mutable[i] = values[name]
                command = tuple(mutable)
            filled.append(command)
        return filled

    @classmethod
    def of(cls, connection: Redis, func: Callable[..., Any]) -> _JobTemplate | None:
        """The template for jobs of `func` (made and checked on first use), or None when
        RQ writes something a template cannot reproduce."""
        if func not in cls._made:
            cls._made[func] = cls._make(connection, func)
        return cls._made[func]

    @classmethod
    def _make(cls, connection: Redis, func: Callable[..., Any]) -> _JobTemplate | None:
        first = cls._stand_in(connection, func, 1)
        if first is None:
            return None
        recorded, values = first
        slots = {_key(value): _Slot(name) for name, value in values.items()}
        commands = []
        for command in recorded:
            filled = tuple(slots.get(_key(arg), arg) for arg in command)
            if any(values["id"] in str(arg) for arg in filled if type(arg) is not _Slot):
                return None  # the id inside something else: not a value a template can set
            commands.append(filled)
        found = {str(arg) for command in commands for arg in command if type(arg) is _Slot}
        template = cls(commands)
        second = cls._stand_in(connection, func, 2)
        if found != set(values) or second is None or template.fill(second[1]) != second[0]:
            return None
        return template

    @staticmethod
    def _stand_in(
        connection: Redis, func: Callable[..., Any], number: int
    ) -> tuple[list[tuple[Any, ...]], dict[str, Any]] | None:
        """What RQ records for a stand-in job of `func`, and that job's values (with the
        creation time RQ gave it); None if RQ records no creation time."""
        args = (f"stand-in table {number}", 1000 + number, f"2030-0{number}-01T00:00:00.000Z")
        job_id = f"guts-template-stand-in-{number}"
        description = f"stand-in job {number} of {func.__qualname__}"
        when = datetime(2030 + number, number, number, number, number, number, tzinfo=UTC)
        pipe = connection.pipeline(transaction=False)  # only records; never executed
        _enqueue_at(
            connection, pipe, when, func, args, job_id=job_id, description=description, by_rq=True
        )
        recorded = [tuple(command) for command, _options in pipe.command_stack]
        for command in recorded:
            if "created_at" in command[2::2]:
                created = command[command.index("created_at") + 1]
                values = _JobTemplate.values(func, args, job_id, description, when, created)
                return recorded, values
        return None


def _key(value: Any) -> tuple[type, Any]:
    """A value as compared when slots are found (by type too: 1 is not "1")."""
    return type(value), value


def forget_deadline(connection: Redis, table_id: str, deadline: str) -> None:
    """Drop the table's index entry if it still points at `deadline`."""
    score = connection.zscore(deadlines_key(), table_id)
    if score is not None and abs(score - parse_iso(deadline).timestamp()) < 0.001:
        connection.zrem(deadlines_key(), table_id)


def overdue(connection: Redis, now_epoch: float) -> list[tuple[str, float]]:
    """Tables whose indexed deadline is before `now_epoch`."""
    found = connection.zrangebyscore(deadlines_key(), "-inf", now_epoch, withscores=True)
    return [(member.decode() if isinstance(member, bytes) else member, s) for member, s in found]


def schedule_cover(connection: Redis, table_id: str, grace_until: str, attempt: str = "") -> None:
    """Schedule the end of the cover rule's top-up grace."""
    with connection.pipeline(transaction=False) as pipe:
        _schedule_cover(connection, pipe, table_id, grace_until, attempt)
        pipe.execute()


def _schedule_cover(
    connection: Redis, pipe: Pipeline, table_id: str, grace_until: str, attempt: str = ""
) -> None:
    from .jobs import cover_job

    _enqueue_at(
        connection,
        pipe,
        parse_iso(grace_until) - timedelta(seconds=LEAD_S),
        cover_job,
        (table_id, grace_until),
        job_id=job_id("cover", table_id, grace_until, attempt),
        description=f"end the cover grace of table {table_id} at {grace_until}",
    )


def follow_ups(connection: Redis) -> Callable[[TableState, list[ev.Event]], list[Command]]:
    """For `Tables`: the Redis commands that queue what a command's events call for (a close
    at a new deadline, a resolve, or the end of a top-up grace). The event store runs them
    in the step that stores the events, so they happen exactly when the events do."""

    def commands(state: TableState, events: list[ev.Event]) -> list[Command]:
        pipe = connection.pipeline(transaction=False)  # only records; never executed
        _queue_work(connection, pipe, state, events)
        return [args for args, _options in pipe.command_stack]

    return commands


def _queue_work(
    connection: Redis, pipe: Pipeline, state: TableState, events: list[ev.Event]
) -> None:
    """Put on `pipe` what `events` (just applied to `state`) call for."""
    hand = state.hand
    if not events:
        return
    if hand is None:
        resolved = any(isinstance(e, ev.HandResolved) for e in events)
        if resolved and state.grace_until and short_of_cover(state):
            _schedule_cover(connection, pipe, state.table_id, state.grace_until)
        return
    if hand.phase in TIMED_PHASES:
        if any(getattr(e, "deadline", None) for e in events):
            _schedule_close(connection, pipe, state.table_id, hand.number, hand.deadline)
    elif hand.phase == SHOWDOWN and state.rules.auto_resolve:
        # (The deadline index entry is left: the close job or the backstop drops it, which
        # saves work on the declaration that completes the hand.)
        _enqueue_resolve(connection, pipe, state.table_id, hand.number)


def _enqueue_resolve(connection: Redis, pipe: Pipeline, table_id: str, hand: int) -> None:
    from .jobs import resolve_job

    queue(DEADLINES, connection).enqueue(
        resolve_job,
        table_id,
        hand,
        job_id=job_id("resolve", table_id, hand),
        description=f"resolve hand {hand} of table {table_id}",
        result_ttl=300,
        pipeline=pipe,
    )


def _audit_key(audit_id: str) -> str:
    return f"{_prefix()}:audit:{audit_id}"


def save_audit(connection: Redis, audit_id: str, record: dict[str, Any]) -> None:
    """Keep an audit's status and report."""
    connection.set(_audit_key(audit_id), orjson.dumps(record), ex=AUDIT_TTL_S)


def load_audit(connection: Redis, audit_id: str) -> dict[str, Any] | None:
    """An audit's status and report, or None when unknown (or expired)."""
    raw = connection.get(_audit_key(audit_id))
    return None if raw is None else orjson.loads(raw)  # type: ignore[no-any-return]


def enqueue_audit(connection: Redis, audit_id: str, table_id: str) -> None:
    """Queue an audit of `table_id`, reported under `audit_id`."""
    from .jobs import audit_job

    save_audit(connection, audit_id, {"status": "queued", "table_id": table_id})
    queue(AUDITS, connection).enqueue(
        audit_job,
        audit_id,
        table_id,
        job_id=f"audit-{audit_id}",
        result_ttl=3600,
        failure_ttl=AUDIT_TTL_S,
        job_timeout=3600,
    )


def audit_failed(connection: Redis, audit_id: str) -> bool:
    """Whether the audit's job died without writing its report."""
    from rq.exceptions import NoSuchJobError
    from rq.job import Job, JobStatus

    from .queues import SERIALIZER

    try:
        job = Job.fetch(f"audit-{audit_id}", connection=connection, serializer=SERIALIZER)
    except NoSuchJobError:
        return False
    return job.get_status() in (JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED)
