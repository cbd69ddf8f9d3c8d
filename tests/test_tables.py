"""The application service with two processes' worth of `Tables` on one store."""

from __future__ import annotations

import logging

import pytest

from service.eventlog.codec import decode_event
from service.eventlog.memory import InMemoryEventStore
from service.rules.decide import CreateTable, Deal, Declare, Leave, SeatPlayer, TopUp
from service.rules.errors import RuleViolation
from service.rules.ruleset import resolve_ruleset
from service.rules.seating import verify_seat_player
from service.rules.state import TableState, replay
from service.rules.times import parse_iso
from service.tables import Tables


def test_a_process_with_a_stale_snapshot_decides_again_on_the_current_one():
    store = InMemoryEventStore()
    first, second = Tables(store), Tables(store)
    rules = resolve_ruleset("three-card")
    first.execute("t", CreateTable("t", rules), create=True)
    for i in range(2):
        first.execute("t", SeatPlayer(f"p{i}", 10))
    # The second process deals: the first one's cached snapshot has no hand in play.
    second.execute("t", Deal(b"x" * 32))
    result = first.execute("t", Declare(1, "in"))
    assert result.answer.effect == "changed" and result.state.hand.decisions == {1: "in"}
    # ... and a stale snapshot that would accept a command is caught by the version check.
    second.execute("t", Declare(0, "out"))
    assert store.load("t").version == first.load("t").version


def test_each_append_that_loses_the_race_is_reported_once():
    store = InMemoryEventStore()
    lost: list[str] = []
    first = Tables(store, on_conflict=lambda: lost.append("first"))
    second = Tables(store, on_conflict=lambda: lost.append("second"))
    rules = resolve_ruleset("three-card")
    first.execute("t", CreateTable("t", rules), create=True)
    first.execute("t", SeatPlayer("p0", 10))
    assert lost == []
    second.execute("t", SeatPlayer("p1", 10))  # loads first
    assert lost == []
    first.execute("t", SeatPlayer("p2", 10))  # its cache: v2
    assert lost == ["first"]


def test_a_refusal_is_decided_on_the_current_snapshot():
    store = InMemoryEventStore()
    first, second = Tables(store), Tables(store)
    rules = resolve_ruleset("three-card")
    first.execute("t", CreateTable("t", rules), create=True)
    first.execute("t", SeatPlayer("p0", 10))
    second.execute("t", SeatPlayer("p1", 10))
    # The first process's snapshot has one player and would refuse to deal; the table has two.
    dealt = first.execute("t", Deal(b"x" * 32))
    assert dealt.state.hand is not None


def test_a_look_before_a_command_believes_a_refusal_only_of_the_stored_state():
    store = InMemoryEventStore()
    first, second = Tables(store), Tables(store)
    first.execute("t", CreateTable("t", resolve_ruleset("three-card")), create=True)
    first.execute("t", SeatPlayer("p0", 10, 0))
    second.execute("t", Leave(0))  # the first process still sees p0 at seat 0
    seen: list[int] = []

    def seat_0_free(state: TableState) -> int:
        seen.append(state.version)
        verify_seat_player(state, "p1", 10, 0)
        return state.version

    stored = store.load("t").version
    assert first.look("t", seat_0_free) == stored and seen == [stored - 1, stored]
    second.look("t", seat_0_free)  # its own state is current: looked at once, as it is
    assert seen == [stored - 1, stored, stored]
    second.execute("t", SeatPlayer("p1", 10, 0))
    with pytest.raises(RuleViolation):  # refused of the stored state too
        first.look("t", seat_0_free)
    assert first.execute("t", SeatPlayer("p2", 10, 1)).state.version == stored + 2


def test_the_application_s_part_of_a_command_is_made_on_the_state_each_attempt_decides_on():
    store = InMemoryEventStore()
    first, second = Tables(store), Tables(store)
    rules = resolve_ruleset("three-card")
    first.execute("t", CreateTable("t", rules), create=True)
    first.execute("t", SeatPlayer("p0", 10))
    second.execute("t", SeatPlayer("p1", 10))
    seen: list[int] = []

    def deal(state):
        seen.append(state.version)  # (where the use case looks up the players' loss limits)
        return Deal(b"x" * 32)

    # On the first process's snapshot (one player) the deal is refused; on the table's, dealt.
    dealt = first.execute("t", deal)
    assert seen == [2, 3] and dealt.state.version == 4


class RecordingIndex:
    """Stands in for the due index (a Redis structure) in these pure tests: what it was told."""

    def __init__(self, broken: bool = False) -> None:
        self.records: list[tuple[str, int, float | None]] = []
        self.broken = broken

    def record(self, table_id: str, version: int, due: float | None) -> bool:
        if self.broken:
            raise ConnectionError("no index today")
        self.records.append((table_id, version, due))
        return True


def test_the_due_is_stored_with_the_attempt_that_lands_and_indexed_only_then():
    store = InMemoryEventStore()
    index = RecordingIndex()
    first, second = Tables(store, index=index), Tables(store, index=index)
    rules = resolve_ruleset("three-card", {"decision_timeout_s": 30})
    first.execute("t", CreateTable("t", rules), create=True)
    first.execute("t", SeatPlayer("p0", 10))
    second.execute("t", SeatPlayer("p1", 10))
    # `first` deals on its stale state (version 2), loses the race, deals again at 3.
    dealt = first.execute("t", Deal(b"x" * 32))
    deadline = parse_iso(dealt.state.hand.deadline).timestamp()
    assert store.dues(["t"]) == [(4, deadline)]
    # Indexed: the creation (nothing due), then only the deal that landed.
    assert index.records == [("t", 1, None), ("t", 4, deadline)]
    # A declaration that leaves the deadline as it was tells the index nothing.
    first.execute("t", Declare(0, "in"))
    assert len(index.records) == 2 and store.dues(["t"]) == [(5, deadline)]


def test_a_command_whose_due_cannot_be_indexed_is_stored_all_the_same(caplog):
    store = InMemoryEventStore()
    tables = Tables(store, index=RecordingIndex(broken=True))
    rules = resolve_ruleset("three-card")
    logger = logging.getLogger("guts.tables")  # "guts" may not propagate (the app's logging)
    logger.addHandler(caplog.handler)
    try:
        created = tables.execute("t", CreateTable("t", rules), create=True)
    finally:
        logger.removeHandler(caplog.handler)
    assert created.answer.effect == "changed" and store.load("t").version == 1
    assert "due not indexed" in caplog.text


def test_snapshots_are_stored_every_few_versions_and_loads_apply_the_events_since():
    store = InMemoryEventStore()
    tables = Tables(store, snapshot_every=4)
    rules = resolve_ruleset("three-card")
    tables.execute("t", CreateTable("t", rules), create=True)
    snapshot_versions = set()
    for i in range(9):  # 6 seats, then 3 top-ups
        if i < 6:
            tables.execute("t", SeatPlayer(f"p{i}", 10))
        else:
            tables.execute("t", TopUp(0, 5))
        loaded = store.load("t")
        snapshot_versions.add(loaded.version - len(loaded.tail))
        assert len(loaded.tail) < 4
        replayed = replay(decode_event(e.data) for e in store.read("t"))
        assert tables.load("t").to_data() == replayed.to_data()
    assert snapshot_versions == {1, 4, 8}
    # A process that never saw the table decides on the snapshot and the events after it.
    other = Tables(store)
    dealt = other.execute("t", Deal(b"x" * 32))
    assert dealt.state.version == 11 and dealt.state.seats[0].stack == 25 - 1  # minus the ante


class LateRecords(InMemoryEventStore):
    """A store whose first look-up of an idempotency record misses it, as a request that
    raced another one with the same key sees it before the other's append lands."""

    def __init__(self) -> None:
        super().__init__()
        self.missed = 0

    def find_idempotent(self, table_id, key):
        if self.missed == 0:
            self.missed += 1
            return None
        return super().find_idempotent(table_id, key)


def test_a_create_racing_its_own_retry_is_answered_with_the_replay_not_a_conflict():
    store = LateRecords()
    tables = Tables(store)
    rules = resolve_ruleset("three-card")

    def create():
        return tables.execute(
            "t",
            CreateTable("t", rules),
            create=True,
            idempotency_key="k",
            request_hash="h",
        )

    store.missed = 1  # the first request sees the store as it is
    first = create()
    store.missed = 0  # the retry looks before the first's append is visible to it
    again = create()
    assert (again.answer, again.replayed) == (first.answer, True)
    assert store.load("t").version == 1


def test_a_command_racing_its_own_copy_is_answered_with_the_replay_not_a_refusal():
    """Two copies of one seat request with one Idempotency-Key, on two processes: the second
    looked for the key before the first's append landed, then finds the player seated. Its
    answer is the first's, replayed, not a refusal of a seat already taken."""
    store = LateRecords()
    first, second = Tables(store), Tables(store)
    first.execute("t", CreateTable("t", resolve_ruleset("three-card")), create=True)

    def seat(tables: Tables):
        return tables.execute("t", SeatPlayer("p0", 10), idempotency_key="k", request_hash="h")

    store.missed = 1  # the first copy sees the store as it is
    landed = seat(first)
    store.missed = 0  # the second copy's look comes before the first's append
    again = seat(second)
    assert (again.answer, again.replayed) == (landed.answer, True)
    assert store.load("t").version == 2  # seated once


def test_a_cache_holding_an_event_the_log_lost_reloads_instead_of_forking_the_log(redis_client):
    """A failover lost the first process's last event; the second then wrote a different one
    at that version. The first process's cached state is at the right version with the wrong
    head: its next command is decided again on the log (issue 31's fork)."""
    from service.audit.rebuild import audit_table
    from service.eventlog.redis_store import RedisEventStore
    from tests.failover import Unreplicated

    redis_client.flushall()
    store = RedisEventStore(redis_client, prefix="fork")
    first, second = Tables(store), Tables(store)
    rules = resolve_ruleset("three-card")
    first.execute("t", CreateTable("t", rules), create=True)
    first.execute("t", SeatPlayer("p0", 10))
    replica = Unreplicated(redis_client, store, "t")
    first.execute("t", SeatPlayer("p1", 10))  # v3 in the first process's cache ...
    replica.lose()  # ... and lost from the log
    second.execute("t", SeatPlayer("p2", 20))  # another v3
    result = first.execute("t", SeatPlayer("p3", 30))
    assert result.state.version == 4
    assert sorted(s.player_id for s in result.state.seats.values()) == ["p0", "p2", "p3"]
    assert audit_table(store, "t")["ok"], audit_table(store, "t")  # the log chains throughout
