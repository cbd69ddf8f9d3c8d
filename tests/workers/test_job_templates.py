"""Scheduled jobs are written from a template that RQ made; what is written must be exactly
what RQ's own `enqueue_at` writes, and RQ itself is used whenever a template cannot be."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from rq.job import Job

from workers import scheduling
from workers.jobs import close_job, cover_job
from workers.queues import DEADLINES, SERIALIZER, queue
from workers.scheduling import _enqueue_at, _JobTemplate


@pytest.fixture(autouse=True)
def fresh_templates() -> Iterator[None]:
    _JobTemplate._made.clear()
    yield
    _JobTemplate._made.clear()


def _recorded(redis_client: Any, write: Any) -> list[tuple[Any, ...]]:
    pipe = redis_client.pipeline(transaction=False)
    write(pipe)
    return [tuple(command) for command, _options in pipe.command_stack]


def _by_rq(redis_client: Any, func: Any, when: datetime, args: tuple, **job: str) -> list:
    def write(pipe: Any) -> None:
        queue(DEADLINES, redis_client).enqueue_at(
            when, func, *args, pipeline=pipe, **job, **scheduling._SCHEDULED_OPTIONS
        )

    return _recorded(redis_client, write)


def _by_us(redis_client: Any, func: Any, when: datetime, args: tuple, **job: str) -> list:
    return _recorded(
        redis_client, lambda pipe: _enqueue_at(redis_client, pipe, when, func, args, **job)
    )


def _created_at(commands: list[tuple[Any, ...]]) -> str:
    (created,) = [c[c.index("created_at") + 1] for c in commands if "created_at" in c]
    return created


def _same_but_for_the_time(ours: list, theirs: list) -> None:
    """Equal, once our creation time is put where RQ put its own (each is 'now')."""
    mine, rq_time = _created_at(ours), _created_at(theirs)
    assert abs(datetime.fromisoformat(mine) - datetime.fromisoformat(rq_time)) < timedelta(
        seconds=5
    )
    assert [tuple(rq_time if a == mine else a for a in c) for c in ours] == theirs


CASES = [
    (close_job, ("t-1", 1, "2026-11-22T21:00:00.000Z"), "close-abc", "close hand 1 of t-1"),
    (close_job, ("a}b:{c} é ✓", 10**9, "2031-01-01T00:00:00.123Z"), "close-x", "é ✓ 'quoted'"),
    (cover_job, ("t 2", "2026-11-22T21:00:05.500Z"), "cover-def", "end the cover grace"),
]


@pytest.mark.parametrize(("func", "args", "job_id", "description"), CASES)
def test_a_templated_job_is_written_exactly_as_rq_writes_it(
    redis_client, func, args, job_id, description
):
    when = datetime(2026, 11, 22, 20, 59, 59, 999_999, tzinfo=UTC)
    job = {"job_id": job_id, "description": description}
    ours = _by_us(redis_client, func, when, args, **job)
    assert _JobTemplate.of(redis_client, func) is not None  # the template was used
    _same_but_for_the_time(ours, _by_rq(redis_client, func, when, args, **job))


def test_rq_reads_a_templated_job_back_as_written(redis_client):
    when = datetime.now(UTC) + timedelta(hours=1)
    args = ("no-such-table", 3, "2026-11-22T21:00:00.000Z")
    with redis_client.pipeline(transaction=False) as pipe:
        _enqueue_at(redis_client, pipe, when, close_job, args, job_id="close-t", description="d")
        pipe.execute()
    job = Job.fetch("close-t", connection=redis_client, serializer=SERIALIZER)
    assert (job.func, job.args, job.kwargs, job.description) == (close_job, list(args), {}, "d")
    assert job.get_status() == "scheduled"
    scheduled = redis_client.zscore("rq:scheduled:" + DEADLINES, "close-t")
    assert scheduled == int(when.timestamp())


def test_rq_writes_the_job_itself_when_a_template_cannot_reproduce_it(redis_client, monkeypatch):
    made_by = scheduling._JobTemplate.values

    def wrong(*args: Any, **kwargs: Any) -> dict[str, Any]:
        values = made_by(*args, **kwargs)
        return {**values, "data": values["data"] + b"?"}  # not what RQ writes

    monkeypatch.setattr(scheduling._JobTemplate, "values", staticmethod(wrong))
    when = datetime(2026, 11, 22, 21, tzinfo=UTC)
    args = ("t-1", 1, "2026-11-22T21:00:00.000Z")
    job = {"job_id": "close-1", "description": "d"}
    ours = _by_us(redis_client, close_job, when, args, **job)
    assert _JobTemplate.of(redis_client, close_job) is None
    _same_but_for_the_time(ours, _by_rq(redis_client, close_job, when, args, **job))
