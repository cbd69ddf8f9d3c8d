"""The dispatcher enforces what falls due (deadlines, auto-resolve, the cover grace) exactly
once, whoever else acts at the same moment, and one table's trouble never holds up another.

Each test drives a real `Dispatcher` against the suite's Redis and the API server; where the
moment matters, the dispatcher's and the rules' clock is set past the due moment instead of
sleeping until it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from service.application import TableService
from service.audit.jobs import QueuedJobs
from service.config import Settings
from service.eventlog.due_index import DueIndex
from service.eventlog.redis_store import RedisEventStore
from service.rules.times import parse_iso
from service.tables import Tables
from tests.apiclient import Api
from tests.tampering import unloadable
from tests.waiting import eventually
from workers.dispatcher import Dispatcher, DispatchTimes


def _deal(api: Api, timeout_s: int, players: int = 3, preset: str = "three-card", **rules):
    table = api.table(preset, decision_timeout_s=timeout_s, **rules)
    tokens = [api.seat(table, f"p{i}")["token"] for i in range(players)]
    dealt = api.post(f"/v1/tables/{table}/deal").json()
    return table, tokens, dealt


def _events(api: Api, table: str) -> list[dict]:
    return api.get(f"/v1/tables/{table}/events?limit=1000").json()["events"]


def _decisions(api: Api, table: str, seat: int) -> list[dict]:
    return [
        e for e in _events(api, table) if e["type"] == "decision_made" and e["data"]["seat"] == seat
    ]


class Clock:
    """A settable clock shared by a dispatcher and its rules (epoch seconds)."""

    def __init__(self) -> None:
        self.at: float | None = None

    def time(self) -> float:
        return time.time() if self.at is None else self.at

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.time(), UTC)

    def past(self, moment: str, seconds: float = 0.001) -> None:
        self.at = parse_iso(moment).timestamp() + seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def make_dispatcher(redis_client, clock: Clock) -> Callable[..., Dispatcher]:
    def make(prefix: str = "guts", **times) -> Dispatcher:
        store = RedisEventStore(redis_client, prefix=prefix)
        index = DueIndex(redis_client, prefix=prefix)
        tables = Tables(store, index=index, now=clock.now)
        usecases = TableService(tables, QueuedJobs(redis_client, redis_client, prefix))
        return Dispatcher(usecases, index, DispatchTimes(**times), clock=clock.time)

    return make


@pytest.fixture
def dispatcher(make_dispatcher) -> Dispatcher:
    return make_dispatcher()


def test_a_deal_indexes_its_deadline_in_the_round_trip_of_its_append_on_one_redis(
    api: Api, redis_client, dispatcher: Dispatcher
):
    table = api.table("three-card", decision_timeout_s=30)
    for i in range(3):
        api.seat(table, f"p{i}")
    with redis_client.monitor() as monitor:
        dealt = api.post(f"/v1/tables/{table}/deal").json()
        redis_client.ping()  # the last command the monitor waits for
        seen = []
        while not seen or seen[-1][1] != "PING":
            command = monitor.next_command()
            seen.append((command["client_type"], command["command"].split()[0].upper(), command))
    handshakes = {"HELLO", "CLIENT", "SELECT"}  # a new connection's (a server thread's first)
    # (and the API's view of the quarantined tables, read again by a request at most every
    # 0.5 s: by the deal's when the seats took longer; QuarantineView)
    sent = [
        name
        for client, name, c in seen
        if client != "lua" and name not in handshakes and ":quarantine" not in c["command"]
    ]
    # The tenant's protection profile and the players' limits, read before deciding (one
    # pipelined round trip; responsible gaming, no append), then the append, which records
    # the due in the index too (one Redis: `RedisEventStore.index_due_with`).
    assert sent == ["HGET", "HMGET", "EVALSHA", "PING"]
    (limits,) = [c["command"].split()[1] for k, name, c in seen if name == "HMGET" and k != "lua"]
    assert limits == "guts:{%ledger:default}:limits"
    scripted = [(name, c["command"].split()) for client, name, c in seen if client == "lua"]
    # The append's one PUBLISH is a notice for the live feeds (a channel, not a key).
    notices = [words[1:] for name, words in scripted if name == "PUBLISH"]
    assert notices == [["guts:appended", str(dealt["version"]), table]], notices
    in_scripts = [(name, words[1]) for name, words in scripted if name != "PUBLISH"]
    first_due = next(i for i, (_, key) in enumerate(in_scripts) if "{%due}" in key)
    append_keys = [key for _, key in in_scripts[:first_due]]
    assert append_keys and all(f"{{{table}}}" in key for key in append_keys), in_scripts
    record = in_scripts[first_due:]  # once the table's are written: the index's keys only
    assert all("{%due}" in key for _, key in record), in_scripts
    # The index was empty: the record wakes a waiting dispatcher (one token on the wake list).
    wake = dispatcher.index.wake_key
    assert record[-2:] == [("RPUSH", wake), ("LTRIM", wake)], record
    deadline = parse_iso(dealt["deadline"]).timestamp()
    assert dispatcher.index.due_at(table) == pytest.approx(deadline, abs=0.001)
    assert dispatcher.tables.store.dues([table])[0][1] == pytest.approx(deadline, abs=0.001)


def test_nothing_is_done_before_the_deadline(api: Api, dispatcher: Dispatcher):
    table, _, dealt = _deal(api, timeout_s=20)
    before = len(_events(api, table))
    assert dispatcher.tick() == 0
    assert len(_events(api, table)) == before


def test_a_silent_player_is_made_out_by_the_platform_at_the_deadline(
    api: Api, dispatcher: Dispatcher, clock: Clock
):
    table, tokens, dealt = _deal(api, timeout_s=5)
    api.post(f"/v1/tables/{table}/declare", {"decision": "in"}, token=tokens[1])
    clock.past(dealt["deadline"])
    assert dispatcher.tick() == 1
    silent = [e["data"] for e in _events(api, table) if e["type"] == "decision_made"]
    assert {(d["seat"], d["decision"], d["by"]) for d in silent} == {
        (1, "in", "player"),
        (2, "out", "platform"),
        (0, "out", "platform"),
    }
    platform = [d for d in silent if d["by"] == "platform"]
    assert all(parse_iso(d["at"]) >= parse_iso(dealt["deadline"]) for d in platform)
    assert api.get(f"/v1/tables/{table}").json()["hand"]["phase"] == "showdown"
    assert dispatcher.index.due_at(table) is None  # nothing more is due: showdown is manual


def test_two_dispatchers_at_once_record_each_decision_once(api: Api, make_dispatcher, clock: Clock):
    table, _, dealt = _deal(api, timeout_s=5)
    clock.past(dealt["deadline"])
    first, second = make_dispatcher(), make_dispatcher()
    barrier = threading.Barrier(2)

    def run(dispatcher: Dispatcher) -> None:
        barrier.wait()
        dispatcher.tick()

    threads = [threading.Thread(target=run, args=(d,)) for d in (first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for seat in range(3):
        assert len(_decisions(api, table, seat)) == 1
    # A lease that expires with its table unsettled (a dispatcher that died) comes due again.
    clock.at = clock.time() + 60
    assert first.tick() == 0  # the closed hand has nothing due and left the index


@pytest.mark.parametrize("offset_s", [-0.01, -0.002, 0.0, 0.002, 0.01])
def test_a_last_moment_declaration_races_the_dispatcher_and_exactly_one_is_recorded(
    api: Api, make_dispatcher, offset_s: float
):
    table, tokens, dealt = _deal(api, timeout_s=1, players=2)
    deadline = parse_iso(dealt["deadline"]).timestamp()
    statuses: list[int] = []
    dispatcher = make_dispatcher(poll_s=0.001)
    stop = threading.Event()
    running = threading.Thread(target=dispatcher.run, args=(stop,))

    def late_declare() -> None:
        time.sleep(max(0.0, deadline + offset_s - time.time()))
        r = api.post(f"/v1/tables/{table}/declare", {"decision": "in"}, token=tokens[0])
        statuses.append(r.status_code)

    declaring = threading.Thread(target=late_declare)
    running.start()
    declaring.start()
    declaring.join()
    hand = lambda: api.get(f"/v1/tables/{table}").json()["hand"]  # noqa: E731
    eventually(lambda: hand()["phase"] != "declaring", 10, "the hand closed", every_s=0.02)
    stop.set()
    running.join()
    recorded = _decisions(api, table, 0)
    assert len(recorded) == 1
    by = recorded[0]["data"]["by"]
    assert (by == "player") == (statuses == [200]), (by, statuses)


def test_a_stale_index_entry_for_a_hand_that_moved_on_does_nothing(
    api: Api, redis_client, dispatcher: Dispatcher
):
    table, tokens, dealt = _deal(api, timeout_s=30, players=2)
    for token in tokens:
        api.post(f"/v1/tables/{table}/declare", {"decision": "out"}, token=token)
    api.post(f"/v1/tables/{table}/resolve")
    assert dispatcher.index.due_at(table) is None  # the resolve took it out
    version = api.get(f"/v1/tables/{table}").json()["version"]
    redis_client.zadd(dispatcher.index.index_key, {table: 1.0})  # as a lost record would
    redis_client.zadd(dispatcher.index.index_key, {"no-such-table": 2.0})
    assert dispatcher.tick() == 2
    assert api.get(f"/v1/tables/{table}").json()["version"] == version
    assert redis_client.zcard(dispatcher.index.index_key) == 0


def test_an_index_entry_earlier_than_the_deadline_is_put_back_at_the_deadline(
    api: Api, redis_client, dispatcher: Dispatcher
):
    table, _, dealt = _deal(api, timeout_s=30)
    redis_client.zadd(dispatcher.index.index_key, {table: 1.0})
    assert dispatcher.tick() == 1
    deadline = parse_iso(dealt["deadline"]).timestamp()
    assert dispatcher.index.due_at(table) == pytest.approx(deadline, abs=0.001)
    assert api.get(f"/v1/tables/{table}").json()["hand"]["phase"] == "declaring"


def test_a_lost_record_is_repaired_from_the_tables_stored_due(
    api: Api, redis_client, dispatcher: Dispatcher
):
    table, _, dealt = _deal(api, timeout_s=30)
    redis_client.delete(dispatcher.index.index_key, dispatcher.index.versions_key)
    assert dispatcher.repair() == 1
    deadline = parse_iso(dealt["deadline"]).timestamp()
    assert dispatcher.index.due_at(table) == pytest.approx(deadline, abs=0.001)
    assert dispatcher.repair() == 0


def test_records_that_arrive_out_of_order_never_move_a_due_back(dispatcher: Dispatcher):
    index = dispatcher.index
    assert index.record("t", 5, 100.0)
    assert not index.record("t", 4, 500.0)
    assert index.due_at("t") == 100.0
    assert index.record("t", 6, None)
    assert index.due_at("t") is None


def test_a_claim_says_the_earliest_due_left_so_the_dispatcher_knows_how_long_to_sleep(
    redis_client,
):
    """The claim's one round trip also returns the index's earliest due after it (a claimed
    table's lease counts: it comes due again then), or None when the index is empty."""
    index = DueIndex(redis_client)
    assert index.claim_and_peek(100.0, lease_s=0.5, limit=10) == ([], None)
    assert index.record("early", 1, 90.0) and index.record("late", 1, 130.0)
    assert index.claim_and_peek(100.0, lease_s=0.5, limit=10) == (["early"], 100.5)
    assert index.claim_and_peek(100.1, lease_s=0.5, limit=10) == ([], 100.5)
    assert index.record("early", 2, None)  # settled: nothing due on it any more
    assert index.claim_and_peek(100.6, lease_s=0.5, limit=10) == ([], 130.0)


def test_a_record_earlier_than_the_index_head_wakes_one_waiting_dispatcher(redis_client):
    index = DueIndex(redis_client)
    assert index.record("first", 1, 200.0)  # into an empty index: a wake
    assert index.wait(5.0) is True
    assert index.wait(0.05) is False  # one token, taken
    assert index.record("later", 1, 300.0)  # not before the head: no wake
    assert index.record("first", 2, 250.0)  # the head moved later: no wake
    assert index.wait(0.05) is False
    assert index.record("earlier", 1, 100.0)  # before the head (250): a wake
    assert index.record("earliest", 1, 50.0)  # another, before anyone waited: still one token
    assert redis_client.llen(index.wake_key) == 1
    assert index.wait(5.0) is True and index.wait(0.05) is False
    assert index.record("gone", 1, None) is True and index.wait(0.05) is False  # nothing due


def test_a_dispatcher_waiting_out_a_long_poll_acts_on_a_due_recorded_meanwhile(
    api: Api, make_dispatcher
):
    """A hand whose declarations completed under auto_resolve is due at once: its record
    wakes the dispatcher, which would otherwise look at the index again only after its poll
    (an hour here), and the hand resolves."""
    table, tokens, _ = _deal(api, timeout_s=30, preset="monte-carlo")
    dispatcher = make_dispatcher(poll_s=3600.0, repair_s=3600.0)
    stop = threading.Event()
    running = threading.Thread(target=dispatcher.run, args=(stop,))
    running.start()
    try:
        looked = lambda: dispatcher.sleep_s() <= 60  # noqa: E731 - it then waits for the deadline
        eventually(looked, 10, "the dispatcher looked at the index", every_s=0.01)
        for token in tokens:
            api.post(f"/v1/tables/{table}/declare", {"decision": "in"}, token=token)
        resolved = lambda: api.get(f"/v1/tables/{table}").json()["hand"] is None  # noqa: E731
        eventually(resolved, 10, "the due recorded meanwhile acted on", every_s=0.02)
    finally:
        stop.set()
        dispatcher.index.client.rpush(dispatcher.index.wake_key, 1)  # end the wait under way
        running.join(timeout=10)
    assert not running.is_alive()
    assert [e["type"] for e in _events(api, table)].count("hand_resolved") == 1


def test_auto_resolve_settles_a_hand_once_everyone_declared(api: Api, dispatcher: Dispatcher):
    table, tokens, _ = _deal(api, timeout_s=30, preset="monte-carlo")
    for token in tokens:
        api.post(f"/v1/tables/{table}/declare", {"decision": "in"}, token=token)
    assert dispatcher.tick() == 1
    types = [e["type"] for e in _events(api, table)]
    assert types.count("hand_resolved") == 1
    assert api.get(f"/v1/tables/{table}").json()["hand"] is None


def test_auto_resolve_after_the_deadline_closes(api: Api, dispatcher: Dispatcher, clock: Clock):
    table, tokens, dealt = _deal(api, timeout_s=5, preset="survivor")
    api.post(f"/v1/tables/{table}/declare", {"decision": "in"}, token=tokens[0])
    clock.past(dealt["deadline"])
    assert dispatcher.tick() == 1  # closes: showdown, and the resolve is due at once
    assert dispatcher.tick() == 1  # resolves
    resolved = [e for e in _events(api, table) if e["type"] == "hand_resolved"]
    assert len(resolved) == 1 and resolved[0]["data"]["outcome"] == "uncontested"


def test_sequential_turns_each_get_their_own_deadline(
    api: Api, dispatcher: Dispatcher, clock: Clock
):
    table, tokens, dealt = _deal(api, timeout_s=5, preset="two-card")
    clock.past(dealt["deadline"])
    assert dispatcher.tick() == 1
    hand = api.get(f"/v1/tables/{table}").json()["hand"]
    assert hand["decisions"] == {"1": "out"} and hand["on_turn"] == 2
    assert parse_iso(hand["deadline"]) > parse_iso(dealt["deadline"])
    deadline = parse_iso(hand["deadline"]).timestamp()
    assert dispatcher.index.due_at(table) == pytest.approx(deadline, abs=0.001)


def _declared_hand_leaving_seat_2_short(api: Api, cover_grace_s: int, preset: str) -> str:
    """A table whose hand is declared: seat 2 (6 chips) loses to seat 1 and, once the hand is
    resolved, is short of the pot (the cover rule's grace starts)."""
    table = api.table(preset, decision_timeout_s=30, cover_grace_s=cover_grace_s)
    tokens = [api.seat(table, f"p{i}", buy_in=b)["token"] for i, b in enumerate([100, 100, 6])]
    api.post(
        f"/v1/tables/{table}/deal",
        {"stacked_deck": {"1": ["As", "Ah", "Ad"], "2": ["Ks", "Kh", "2c"]}},
    )
    for seat, decision in ((1, "in"), (2, "in"), (0, "out")):
        api.post(f"/v1/tables/{table}/declare", {"decision": decision}, token=tokens[seat])
    return table


def test_the_cover_grace_is_enforced_when_it_ends(api: Api, dispatcher: Dispatcher, clock: Clock):
    table = _declared_hand_leaving_seat_2_short(api, cover_grace_s=5, preset="monte-carlo")
    resolved = api.post(f"/v1/tables/{table}/resolve").json()
    assert resolved["matched"] == {"2": 3}  # seat 2 is left with 2 chips: short of the pot
    grace = parse_iso(resolved["grace_until"]).timestamp()
    assert dispatcher.index.due_at(table) == pytest.approx(grace, abs=0.001)
    assert dispatcher.tick() == 0
    clock.past(resolved["grace_until"])
    assert dispatcher.tick() == 1
    seats = {s["seat"]: s["status"] for s in api.get(f"/v1/tables/{table}").json()["seats"]}
    assert seats == {0: "active", 1: "active", 2: "waiting"}
    assert dispatcher.index.due_at(table) is None


def test_a_hand_resolved_by_the_dispatcher_gets_its_cover_grace_too(
    api: Api, dispatcher: Dispatcher
):
    table = _declared_hand_leaving_seat_2_short(api, cover_grace_s=30, preset="monte-carlo")
    assert dispatcher.tick() == 1  # auto_resolve: seat 2 is then short of the pot
    view = api.get(f"/v1/tables/{table}").json()
    assert view["hand"] is None
    assert dispatcher.index.due_at(table) is not None  # the grace's end


def test_a_table_that_cannot_be_loaded_is_quarantined_and_holds_up_no_other(
    api: Api, redis_client, dispatcher: Dispatcher, clock: Clock
):
    bad, bad_tokens, bad_dealt = _deal(api, timeout_s=5)
    api.post(f"/v1/tables/{bad}/declare", {"decision": "in"}, token=bad_tokens[0])
    unloadable(redis_client, bad)
    healthy = [_deal(api, timeout_s=5) for _ in range(3)]
    redis_client.zadd(dispatcher.index.index_key, {bad: 1.0})  # first in line
    clock.past(max(d["deadline"] for _, _, d in healthy))
    assert dispatcher.tick() == 4
    for table, _, _ in healthy:
        assert api.get(f"/v1/tables/{table}").json()["hand"]["phase"] == "showdown"
    quarantined = dispatcher.index.quarantined()
    assert list(quarantined) == [bad]
    assert "failed verification" in quarantined[bad]["reason"]
    retry_at = dispatcher.index.due_at(bad)
    assert retry_at is not None and retry_at > clock.time() + 60  # not retried in a loop
    assert dispatcher.tick() == 0
    read = api.get(f"/v1/tables/{bad}")
    assert read.status_code == 409
    assert read.headers["Content-Type"] == "application/problem+json"
    assert "failed verification" in read.json()["detail"]
    health = api.get("/healthz").json()
    assert [q["table_id"] for q in health["quarantined"]] == [bad]
    metrics = api.get("/metrics", token=None).text
    assert "\nguts_quarantined_tables 1.0\n" in metrics


def test_a_quarantined_table_that_loads_again_is_released(
    api: Api, redis_client, dispatcher: Dispatcher, clock: Clock
):
    table, _, dealt = _deal(api, timeout_s=5)
    dispatcher.index.quarantine(table, "was broken", retry_s=0)
    dispatcher.repair()  # learns what is quarantined
    clock.past(dealt["deadline"])
    assert dispatcher.tick() == 1
    assert dispatcher.index.quarantined() == {}


def test_a_backlog_of_stale_entries_does_not_delay_live_deadlines(
    api: Api, redis_client, make_dispatcher
):
    """2,000 stale entries (tables that do not exist, due long ago) sit ahead of live hands
    with 1 s deadlines: every live hand still closes, within a second of its deadline."""
    index = DueIndex(redis_client)
    redis_client.zadd(index.index_key, {f"stale-{i}": 1.0 + i for i in range(2000)})
    live = [_deal(api, timeout_s=1, players=2) for _ in range(5)]
    dispatcher = make_dispatcher(poll_s=0.005)
    stop = threading.Event()
    running = threading.Thread(target=dispatcher.run, args=(stop,))
    running.start()
    try:
        for table, _, dealt in live:
            deadline = parse_iso(dealt["deadline"])
            decided = lambda t=table: _decisions(api, t, 0)  # noqa: E731
            (decision, *_) = eventually(
                decided, 10, f"the live hand at {table} closed", every_s=0.02
            )
            closed = parse_iso(decision["data"]["at"])
            assert deadline <= closed < deadline + timedelta(seconds=1)
    finally:
        stop.set()
        running.join()
    assert redis_client.zcard(index.index_key) == 0


def test_the_whole_flow_under_another_key_prefix_writes_nothing_under_guts(
    redis_client, redis_url, make_dispatcher, clock: Clock
):
    from rq import SimpleWorker

    from service.api.app import create_app
    from workers.queues import QUEUES, SERIALIZER

    settings = Settings(redis_url=redis_url, operator_keys=("op",), key_prefix="x")
    client = create_app(settings).test_client()
    headers = {"Authorization": "Bearer op"}
    table = client.post("/v1/tables", json={"preset": "monte-carlo"}, headers=headers).json
    table_id = table["table_id"]
    for i in range(2):
        seated = client.post(
            f"/v1/tables/{table_id}/players",
            json={"player_id": f"p{i}", "buy_in": 50},
            headers=headers,
        )
        assert seated.status_code == 201
    dealt = client.post(f"/v1/tables/{table_id}/deal", json={}, headers=headers).json
    dispatcher = make_dispatcher(prefix="x")
    clock.past(dealt["deadline"])
    assert dispatcher.tick() == 1  # closes; auto-resolve is then due
    assert dispatcher.tick() == 1  # resolves
    audit = client.post(f"/v1/tables/{table_id}/audit", headers=headers).json
    SimpleWorker(list(QUEUES), connection=redis_client, serializer=SERIALIZER).work(burst=True)
    report = client.get(f"/v1/audits/{audit['audit_id']}", headers=headers).json
    assert report["status"] == "finished" and report["result"]["ok"], report
    assert redis_client.keys("guts:*") == []
    assert redis_client.keys("x:*")


def test_a_silent_bettor_checks_if_they_may_else_folds_through_the_dispatcher(
    api: Api, dispatcher: Dispatcher, clock: Clock
):
    """Betting deadlines go the same way as the others: the deal's use case indexes them and
    the dispatcher acts through `close_due`."""
    table, tokens, dealt = _deal(api, timeout_s=30, draw=1, betting_round=True)
    for seat in (1, 2, 0):
        api.post(f"/v1/tables/{table}/declare", {"decision": "in"}, token=tokens[seat])
    for seat in (1, 2, 0):
        api.post(f"/v1/tables/{table}/draw", {"discard": []}, token=tokens[seat])
    hand = api.get(f"/v1/tables/{table}").json()["hand"]
    assert (hand["phase"], hand["betting"]["turn"]) == ("betting", 1)
    first_deadline = hand["deadline"]
    clock.past(first_deadline)
    assert dispatcher.tick() == 1  # seat 1 owed nothing: checked for
    bet = api.post(f"/v1/tables/{table}/bet", {"action": "bet"}, token=tokens[2])
    assert bet.status_code == 200, bet.text
    hand = api.get(f"/v1/tables/{table}").json()["hand"]
    assert dispatcher.index.due_at(table) == pytest.approx(
        parse_iso(hand["deadline"]).timestamp(), abs=0.001
    )
    clock.past(hand["deadline"])
    assert dispatcher.tick() == 1  # seat 0 owed the bet: folded for
    bets = [e["data"] for e in _events(api, table) if e["type"] == "bet_made"]
    assert [(b["seat"], b["action"], b["by"]) for b in bets] == [
        (1, "check", "platform"),
        (2, "bet", "player"),
        (0, "fold", "platform"),
    ]
    platform = [b for b in bets if b["by"] == "platform"]
    assert all(parse_iso(b["at"]) >= parse_iso(first_deadline) for b in platform)
    hand = api.get(f"/v1/tables/{table}").json()["hand"]
    assert (hand["phase"], hand["betting"]["turn"]) == ("betting", 1)  # seat 1 owes the bet
