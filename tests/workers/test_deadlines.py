"""Declaration deadlines: the close job is right however RQ runs it (early, twice, racing a
last declaration, after the hand moved on), and auto-resolve finishes hands by itself."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

import pytest

from service.rules.times import parse_iso
from tests.apiclient import Api
from workers.jobs import close_hand
from workers.queues import DEADLINES, queue
from workers.scheduling import deadlines_key


def _deal(api: Api, timeout_s: int, players: int = 3, preset: str = "three-card"):
    table = api.table(preset, decision_timeout_s=timeout_s)
    tokens = [api.seat(table, f"p{i}")["token"] for i in range(players)]
    dealt = api.post(f"/v1/tables/{table}/deal").json()
    return table, tokens, dealt


def _events(api: Api, table: str) -> list[dict]:
    return api.get(f"/v1/tables/{table}/events?limit=1000").json()["events"]


def _decisions(api: Api, table: str, seat: int) -> list[dict]:
    return [
        e for e in _events(api, table) if e["type"] == "decision_made" and e["data"]["seat"] == seat
    ]


def test_a_silent_player_is_made_out_by_the_platform(api: Api, redis_client):
    table, tokens, dealt = _deal(api, timeout_s=1)
    api.post(f"/v1/tables/{table}/declare", {"decision": "in"}, token=tokens[1])
    assert close_hand(redis_client, table, dealt["hand"], dealt["deadline"]) == "closed"
    silent = [e["data"] for e in _events(api, table) if e["type"] == "decision_made"]
    assert {(d["seat"], d["decision"], d["by"]) for d in silent} == {
        (1, "in", "player"),
        (2, "out", "platform"),
        (0, "out", "platform"),
    }
    assert api.get(f"/v1/tables/{table}").json()["hand"]["phase"] == "showdown"


def test_deal_schedules_a_close_job_before_the_deadline(api: Api, redis_client):
    table, _, dealt = _deal(api, timeout_s=30)
    registry = queue(DEADLINES, redis_client).scheduled_job_registry
    (job_id,) = registry.get_job_ids()
    scheduled = registry.get_scheduled_time(job_id).replace(tzinfo=UTC)
    lead = (parse_iso(dealt["deadline"]) - scheduled).total_seconds()
    assert 0 < lead <= 2.0


def test_a_deal_and_its_close_job_are_stored_in_one_round_trip(api: Api, redis_client):
    table = api.table("three-card", decision_timeout_s=30)
    for i in range(3):
        api.seat(table, f"p{i}")
    with redis_client.monitor() as monitor:
        api.post(f"/v1/tables/{table}/deal")
        redis_client.ping()  # the last command the monitor waits for
        seen = []
        while not seen or seen[-1] != ("tcp", "PING"):
            command = monitor.next_command()
            seen.append((command["client_type"], command["command"].split()[0].upper()))
    handshakes = {"HELLO", "CLIENT", "SELECT"}  # a new connection's (a server thread's first)
    sent = [name for client, name in seen if client != "lua" and name not in handshakes]
    in_script = {name for client, name in seen if client == "lua"}
    assert sent == ["EVALSHA", "PING"]
    # Inside the script: the events, the deadline index entry and the close job.
    assert {"XADD", "ZADD", "HSET"} <= in_script
    assert queue(DEADLINES, redis_client).scheduled_job_registry.get_job_ids()
    assert redis_client.zscore(deadlines_key(), table) is not None


def test_an_early_run_far_from_the_deadline_reschedules_and_acts_not(api: Api, redis_client):
    table, _, dealt = _deal(api, timeout_s=20)
    before = len(_events(api, table))
    assert close_hand(redis_client, table, dealt["hand"], dealt["deadline"]) == "rescheduled"
    assert len(_events(api, table)) == before
    assert len(queue(DEADLINES, redis_client).scheduled_job_registry.get_job_ids()) == 2


def test_an_early_run_near_the_deadline_waits_for_it(api: Api, redis_client):
    table, _, dealt = _deal(api, timeout_s=2)
    assert close_hand(redis_client, table, dealt["hand"], dealt["deadline"]) == "closed"
    closes = [e for e in _events(api, table) if e["data"].get("by") == "platform"]
    assert closes
    assert all(parse_iso(e["data"]["at"]) >= parse_iso(dealt["deadline"]) for e in closes)


def test_a_duplicate_run_records_nothing_twice(api: Api, redis_client):
    table, _, dealt = _deal(api, timeout_s=1)
    time.sleep(1.05)
    runs = [close_hand(redis_client, table, dealt["hand"], dealt["deadline"]) for _ in range(2)]
    assert runs == ["closed", "moved_on"]
    for seat in range(3):
        assert len(_decisions(api, table, seat)) == 1


@pytest.mark.parametrize("offset_s", [-0.01, -0.002, 0.0, 0.002, 0.01])
def test_a_last_moment_declaration_races_the_close_and_exactly_one_is_recorded(
    api: Api, redis_client, offset_s: float
):
    table, tokens, dealt = _deal(api, timeout_s=1, players=2)
    deadline = parse_iso(dealt["deadline"]).timestamp()
    statuses: list[int] = []

    def late_declare() -> None:
        time.sleep(max(0.0, deadline + offset_s - time.time()))
        r = api.post(f"/v1/tables/{table}/declare", {"decision": "in"}, token=tokens[0])
        statuses.append(r.status_code)

    thread = threading.Thread(target=late_declare)
    thread.start()
    close_hand(redis_client, table, dealt["hand"], dealt["deadline"])
    thread.join()
    recorded = _decisions(api, table, 0)
    assert len(recorded) == 1
    by = recorded[0]["data"]["by"]
    assert (by == "player") == (statuses == [200]), (by, statuses)


def test_a_close_for_a_hand_that_moved_on_does_nothing(api: Api, redis_client):
    table, tokens, dealt = _deal(api, timeout_s=1, players=2)
    for token in tokens:
        api.post(f"/v1/tables/{table}/declare", {"decision": "out"}, token=token)
    api.post(f"/v1/tables/{table}/resolve")
    version = api.get(f"/v1/tables/{table}").json()["version"]
    time.sleep(1.05)
    assert close_hand(redis_client, table, dealt["hand"], dealt["deadline"]) == "moved_on"
    assert api.get(f"/v1/tables/{table}").json()["version"] == version


def test_auto_resolve_settles_a_hand_once_everyone_declared(api: Api, run_jobs):
    table, tokens, _ = _deal(api, timeout_s=30, preset="monte-carlo")
    for token in tokens:
        api.post(f"/v1/tables/{table}/declare", {"decision": "in"}, token=token)
    run_jobs()
    types = [e["type"] for e in _events(api, table)]
    assert types.count("hand_resolved") == 1
    assert api.get(f"/v1/tables/{table}").json()["hand"] is None


def test_auto_resolve_after_the_deadline_closes(api: Api, redis_client, run_jobs):
    table, tokens, dealt = _deal(api, timeout_s=1, preset="survivor")
    api.post(f"/v1/tables/{table}/declare", {"decision": "in"}, token=tokens[0])
    assert close_hand(redis_client, table, dealt["hand"], dealt["deadline"]) == "closed"
    run_jobs()
    resolved = [e for e in _events(api, table) if e["type"] == "hand_resolved"]
    assert len(resolved) == 1 and resolved[0]["data"]["outcome"] == "uncontested"


def test_sequential_turns_each_get_their_own_deadline(api: Api, redis_client):
    table, tokens, dealt = _deal(api, timeout_s=1, preset="two-card")
    assert close_hand(redis_client, table, dealt["hand"], dealt["deadline"]) == "closed"
    hand = api.get(f"/v1/tables/{table}").json()["hand"]
    assert hand["decisions"] == {"1": "out"} and hand["on_turn"] == 2
    assert parse_iso(hand["deadline"]) > parse_iso(dealt["deadline"])
    assert datetime.now(UTC) < parse_iso(hand["deadline"])


def _declared_hand_leaving_seat_2_short(api: Api, cover_grace_s: int) -> str:
    """A `monte-carlo` table whose hand is declared: seat 2 (6 chips) loses to seat 1 and,
    once the hand is resolved, is short of the pot (the cover rule's grace starts)."""
    table = api.table("monte-carlo", decision_timeout_s=30, cover_grace_s=cover_grace_s)
    tokens = [api.seat(table, f"p{i}", buy_in=b)["token"] for i, b in enumerate([100, 100, 6])]
    api.post(
        f"/v1/tables/{table}/deal",
        {"stacked_deck": {"1": ["As", "Ah", "Ad"], "2": ["Ks", "Kh", "2c"]}},
    )
    for seat, decision in ((1, "in"), (2, "in"), (0, "out")):
        api.post(f"/v1/tables/{table}/declare", {"decision": decision}, token=tokens[seat])
    return table


def test_the_cover_grace_is_enforced_when_it_ends(api: Api, redis_client):
    from workers.jobs import enforce_cover_grace

    table = _declared_hand_leaving_seat_2_short(api, cover_grace_s=1)
    resolved = api.post(f"/v1/tables/{table}/resolve").json()
    assert resolved["matched"] == {"2": 3}  # seat 2 is left with 2 chips: short of the pot
    registry = queue(DEADLINES, redis_client).scheduled_job_registry
    scheduled = [j.decode() for j in redis_client.zrange(registry.key, 0, -1)]  # due ones too
    assert any(j.startswith("cover-") for j in scheduled), scheduled
    assert enforce_cover_grace(redis_client, table, resolved["grace_until"]) == "sat_out"
    seats = {s["seat"]: s["status"] for s in api.get(f"/v1/tables/{table}").json()["seats"]}
    assert seats == {0: "active", 1: "active", 2: "waiting"}
    assert enforce_cover_grace(redis_client, table, resolved["grace_until"]) == "nothing_to_do"


def test_a_hand_resolved_by_the_worker_gets_its_cover_grace_too(api: Api, redis_client, run_jobs):
    table = _declared_hand_leaving_seat_2_short(api, cover_grace_s=30)
    run_jobs()  # auto_resolve: the worker resolves the hand, and seat 2 is short of the pot
    view = api.get(f"/v1/tables/{table}").json()
    assert view["hand"] is None
    registry = queue(DEADLINES, redis_client).scheduled_job_registry
    assert [j for j in registry.get_job_ids() if j.startswith("cover-")]
