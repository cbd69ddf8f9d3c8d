"""Player protection under a real dispatcher: reality checks and session limits fall due on
the dispatcher's clock (set past the moment instead of sleeping), a reality check or a time-out
at one seat never holds up another table's deadline, a lowered limit takes effect at once at
the tables where the player sits, and a process killed (kill -9) between the tables where it
was ending a player's sessions leaves an outbox entry a dispatcher's sweep finishes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from service.application import TableService
from service.audit.jobs import QueuedJobs
from service.eventlog.due_index import DueIndex
from service.eventlog.redis_store import RedisEventStore
from service.eventlog.table_list import TableList
from service.projections.ledger import LedgerStore
from service.rules.limit_changes import outbox_entry
from service.rules.limits import Limits
from service.rules.times import iso, parse_iso
from service.tables import Tables
from tests.apiclient import Api
from tests.waiting import eventually
from tests.workers.test_deadlines import Clock
from workers.dispatcher import Dispatcher

LIMITS = "/v1/players/{}/limits"
WITHIN_S = 30.0  # a bound on a busy machine, not a timing
EVERY_S = 0.1  # (each look is a request)


def _limits(api: Api, player: str, **body: Any) -> dict[str, Any]:
    answer = api.call(
        "PUT", LIMITS.format(player), {"loss_limit_24h": None, "excluded_until": None, **body}
    )
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def _events(api: Api, table: str) -> list[dict[str, Any]]:
    return list(api.get(f"/v1/tables/{table}/events?limit=1000").json()["events"])


def _typed(api: Api, table: str, kind: str) -> list[dict[str, Any]]:
    return [e for e in _events(api, table) if e["type"] == kind]


def _service(redis_client: Any, clock: Clock) -> TableService:
    store = RedisEventStore(redis_client)
    index = DueIndex(redis_client)
    tables = Tables(store, index=index, listing=TableList(redis_client), now=clock.now)
    jobs = QueuedJobs(redis_client, redis_client, "guts")
    return TableService(tables, jobs, ledger=LedgerStore(redis_client))


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def running(redis_client: Any, clock: Clock) -> Iterator[Dispatcher]:
    """A real dispatcher on the suite's Redis, its clock (and its rules') `clock`."""
    usecases = _service(redis_client, clock)
    dispatcher = Dispatcher(usecases, DueIndex(redis_client), clock=clock.time)
    stop = threading.Event()
    thread = threading.Thread(target=dispatcher.run, args=(stop,), daemon=True)
    thread.start()
    yield dispatcher
    stop.set()
    thread.join(10)


def _seated_at(api: Api, table: str, player: str) -> str:
    (seated,) = [e for e in _typed(api, table, "player_seated") if e["data"]["player_id"] == player]
    return str(seated["at"] if "at" in seated else seated["data"]["at"])


def test_a_dispatcher_makes_the_reality_check_and_ends_the_session_at_its_limit(
    api: Api, running: Dispatcher, clock: Clock
):
    _limits(api, "alice", reality_check_minutes=1, session_limit_minutes=3)
    table = api.table("three-card", ante=1)
    api.seat(table, "alice")
    api.seat(table, "bob")
    since = parse_iso(_seated_at(api, table, "alice"))
    clock.past(iso(since + timedelta(minutes=1)))
    (check,) = eventually(
        lambda: _typed(api, table, "reality_check"),
        WITHIN_S,
        "the reality check made",
        every_s=EVERY_S,
    )
    assert check["data"]["minutes_played"] == 1 and check["data"]["net_result"] == 0
    answer = api.post(f"/v1/tables/{table}/players/0/reality-check", {"continue": True})
    assert answer.status_code == 200 and answer.json()["reality_check_pending"] is False
    clock.past(iso(since + timedelta(minutes=3)))
    (ended,) = eventually(
        lambda: _typed(api, table, "session_ended"), WITHIN_S, "the session ended", every_s=EVERY_S
    )
    assert ended["data"]["reason"] == "session_limit"
    (left,) = eventually(
        lambda: _typed(api, table, "player_left"), WITHIN_S, "alice's seat left", every_s=EVERY_S
    )
    assert left["data"]["seat"] == 0 and left["data"]["cash_out"] == 100


def test_a_session_limit_keeps_the_player_from_every_seat_of_the_tenant_for_24_hours(
    api: Api, running: Dispatcher, clock: Clock
):
    _limits(api, "alice", session_limit_minutes=2)
    table = api.table("three-card", ante=1)
    api.seat(table, "alice")
    api.seat(table, "bob")
    since = parse_iso(_seated_at(api, table, "alice"))
    assert api.get(LIMITS.format("alice")).json()["cool_down_until"] is None
    clock.past(iso(since + timedelta(minutes=2)))
    eventually(
        lambda: _typed(api, table, "player_left"), WITHIN_S, "alice's seat left", every_s=EVERY_S
    )
    until = iso(since + timedelta(minutes=2, hours=24))
    # Both the player's limits and the session's end say until when they cannot sit.
    assert api.get(LIMITS.format("alice")).json()["cool_down_until"] == until
    assert api.get(LIMITS.format("bob")).json()["cool_down_until"] is None
    assert [e["data"]["until"] for e in _typed(api, table, "session_ended")] == [until]
    other = api.table("three-card", ante=1)
    for where in (other, table):
        refused = api.post(f"/v1/tables/{where}/players", {"player_id": "alice", "buy_in": 10})
        assert refused.status_code == 409, refused.text
        assert refused.headers["Content-Type"].startswith("application/problem+json")
        assert refused.json()["status"] == 409 and refused.json()["title"] == "Not Allowed Now"
        assert f"until {until}" in refused.json()["detail"], refused.json()
    assert api.post(f"/v1/tables/{other}/players", {"player_id": "bob", "buy_in": 10}).ok


def test_a_check_or_a_time_out_at_one_seat_never_holds_up_another_tables_deadline(
    api: Api, running: Dispatcher, clock: Clock
):
    _limits(api, "alice", reality_check_minutes=1)
    checked = api.table("three-card", ante=1)
    for player in ("alice", "bob", "carol"):
        api.seat(checked, player)
    other = api.table("three-card", ante=1, decision_timeout_s=5)
    for player in ("dan", "erin"):
        api.seat(other, player)
    dealt = api.post(f"/v1/tables/{other}/deal").json()
    _limits(api, "carol", timeout_until="2099-01-01T00:00:00Z")  # a time-out at `checked`
    since = parse_iso(_seated_at(api, checked, "alice"))
    latest = max(since + timedelta(minutes=1), parse_iso(dealt["deadline"]))
    clock.past(iso(latest))
    eventually(
        lambda: _typed(api, checked, "reality_check"),
        WITHIN_S,
        "the reality check made",
        every_s=EVERY_S,
    )
    closed = eventually(
        lambda: [e for e in _typed(api, other, "decision_made") if e["data"]["by"] == "platform"],
        WITHIN_S,
        "the other table's deadline acted on",
        every_s=EVERY_S,
    )
    assert {e["data"]["seat"] for e in closed} == {0, 1}  # the other table's deadline acted on
    assert [e["data"]["reason"] for e in _typed(api, checked, "session_ended")] == ["timeout"]


def test_lowering_a_limit_while_seated_takes_effect_at_once(api: Api):
    _limits(api, "alice", session_limit_minutes=600, reality_check_minutes=120)
    tables = [api.table("three-card") for _ in range(2)]
    for table in tables:
        api.seat(table, "alice")
    _limits(api, "alice", session_limit_minutes=30)  # lowered: at once
    for table in tables:
        sets = [e["data"] for e in _typed(api, table, "protection_set")]
        assert [(s["reality_check_minutes"], s["session_limit_minutes"]) for s in sets] == [
            (120, 600),
            (120, 30),
        ]
    _limits(api, "alice", session_limit_minutes=900)  # raised: waits 24 h, nothing at the tables
    assert all(len(_typed(api, t, "protection_set")) == 2 for t in tables)


CRASHING = textwrap.dedent(
    """
    import os, signal, sys
    import redis
    from service.application.access import Caller
    from service.rules.views import OPERATOR
    from tests.workers.test_protection_duty import _service
    from tests.workers.test_deadlines import Clock

    usecases = _service(redis.Redis.from_url(sys.argv[1]), Clock())
    execute = usecases.tables.execute

    def once_then_die(*args, **kwargs):
        answer = execute(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGKILL)  # between the first table and the next
        return answer

    usecases.tables.execute = once_then_die
    body = {"timeout_until": "2099-01-01T00:00:00Z"}
    usecases.set_player_limits(Caller(OPERATOR, tenant="default"), "alice", body)
    """
)


def test_a_process_killed_between_tables_leaves_the_rest_to_the_dispatchers_sweep(
    api: Api, redis_client: Any, redis_url: str
):
    tables = [api.table("three-card") for _ in range(3)]
    for table in tables:
        api.seat(table, "alice")
        api.seat(table, "bob")
    died = subprocess.run(
        [sys.executable, "-c", CRASHING, redis_url], env=dict(os.environ), timeout=60
    )
    assert died.returncode == -9
    ended = [t for t in tables if _typed(api, t, "session_ended")]
    assert len(ended) == 1  # killed after the first table
    ledger = LedgerStore(redis_client)
    ((tenant, player, entry),) = ledger.outbox()
    assert (tenant, player, entry["reason"]) == ("default", "alice", "timeout")
    sweep = _service(redis_client, Clock())
    assert sweep.apply_due_protection(grace_s=0) == 1
    assert sweep.apply_due_protection(grace_s=0) == 0  # applied: the entry is gone
    for table in tables:
        (one,) = _typed(api, table, "session_ended")  # each table once, the first not again
        assert one["data"]["until"] == "2099-01-01T00:00:00Z"
        assert [e["data"]["seat"] for e in _typed(api, table, "player_left")] == [0]
    assert ledger.outbox() == []


def test_the_duty_waits_out_an_unreachable_redis_with_a_warning_and_no_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import redis

    from service.processes.redis_server import free_port
    from workers.protection_duty import run_protection_duty

    gone = redis.Redis(port=free_port(), socket_connect_timeout=0.2)
    usecases = _service(gone, Clock())
    stop = threading.Event()
    caplog.set_level("WARNING", logger="guts.protection")
    thread = threading.Thread(target=run_protection_duty, args=(usecases, stop), daemon=True)
    thread.start()
    eventually(lambda: caplog.records, 10, "a warning logged", every_s=EVERY_S)
    stop.set()
    thread.join(15)
    assert not thread.is_alive()
    (first, *_) = caplog.records
    assert first.levelname == "WARNING", first.getMessage()
    assert first.getMessage().startswith("protection: Redis cannot serve"), first.getMessage()
    assert all(record.exc_info is None for record in caplog.records)


def test_an_unreadable_outbox_entry_is_dropped_and_the_others_are_applied(
    api: Api, redis_client: Any, caplog: pytest.LogCaptureFixture
):
    """One entry that does not decode (of any tenant) once made every sweep fail, so no
    limits change of anyone reached the tables by the dispatchers; it is dropped, with an
    error naming the player, and the rest are applied."""
    table = api.table("three-card")
    api.seat(table, "alice")
    api.seat(table, "bob")
    ledger = LedgerStore(redis_client)
    now = parse_iso(iso(Clock().now()))
    after = Limits(timeout_until="2099-01-01T00:00:00Z")
    entry = outbox_entry(Limits(), after, now)
    ledger.set_limits("default", "alice", after, entry)  # (its writer died before applying it)
    redis_client.sadd(f"{ledger.prefix}:%ledger:outbox-tenants", "other")
    redis_client.hset(ledger.key("other", "outbox"), "zed", b"{not json")
    redis_client.hset(ledger.key("default", "outbox"), "bob", b'{"at": "2026-12-07T00:00:00Z"}')
    sweep = _service(redis_client, Clock())
    with caplog.at_level("ERROR", logger="guts.protection"):
        assert sweep.apply_due_protection(grace_s=0) == 1
    (ended,) = _typed(api, table, "session_ended")
    assert ended["data"]["until"] == "2099-01-01T00:00:00Z"
    assert ledger.outbox() == []
    said = [record.getMessage() for record in caplog.records]
    dropped = [line for line in said if "dropped from the outbox" in line]
    assert len(dropped) == 2 and any("player zed (tenant other)" in m for m in dropped), dropped
