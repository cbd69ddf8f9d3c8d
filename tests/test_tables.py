"""The application service with two processes' worth of `Tables` on one store."""

from __future__ import annotations

import logging

from service.eventlog.codec import decode_event
from service.eventlog.memory import InMemoryEventStore
from service.rules import commands
from service.rules.ruleset import resolve_ruleset
from service.rules.state import replay
from service.tables import Tables


def _ok(state, events):
    return 200, {"version": state.version}


def test_a_process_with_a_stale_snapshot_decides_again_on_the_current_one():
    store = InMemoryEventStore()
    first, second = Tables(store), Tables(store)
    rules = resolve_ruleset("three-card")
    first.execute("t", lambda s, n: commands.create_table("t", rules, n), _ok, create=True)
    for i in range(2):
        first.execute("t", lambda s, n, i=i: commands.seat_player(s, f"p{i}", 10, n), _ok)
    # The second process deals: the first one's cached snapshot has no hand in play.
    second.execute("t", lambda s, n: commands.deal(s, b"x" * 32, n), _ok)
    result = first.execute("t", lambda s, n: commands.declare(s, 1, "in", n), _ok)
    assert result.status == 200 and result.state.hand.decisions == {1: "in"}
    # ... and a stale snapshot that would accept a command is caught by the version check.
    second.execute("t", lambda s, n: commands.declare(s, 0, "out", n), _ok)
    assert store.load("t").version == first.load("t").version


def test_a_refusal_is_decided_on_the_current_snapshot():
    store = InMemoryEventStore()
    first, second = Tables(store), Tables(store)
    rules = resolve_ruleset("three-card")
    first.execute("t", lambda s, n: commands.create_table("t", rules, n), _ok, create=True)
    first.execute("t", lambda s, n: commands.seat_player(s, "p0", 10, n), _ok)
    second.execute("t", lambda s, n: commands.seat_player(s, "p1", 10, n), _ok)
    # The first process's snapshot has one player and would refuse to deal; the table has two.
    dealt = first.execute("t", lambda s, n: commands.deal(s, b"x" * 32, n), _ok)
    assert dealt.state.hand is not None


def test_follow_ups_are_stored_with_the_attempt_that_lands_and_only_with_it():
    store = InMemoryEventStore()
    asked: list[tuple[int, list[str]]] = []

    def follow_ups(state, events):
        asked.append((state.version, [type(e).__name__ for e in events]))
        return [("RPUSH", "followed", f"v{state.version}")]

    first, second = Tables(store, follow_ups=follow_ups), Tables(store)
    rules = resolve_ruleset("three-card")
    first.execute("t", lambda s, n: commands.create_table("t", rules, n), _ok, create=True)
    first.execute("t", lambda s, n: commands.seat_player(s, "p0", 10, n), _ok)
    second.execute("t", lambda s, n: commands.seat_player(s, "p1", 10, n), _ok)
    # `first` decides on its stale snapshot (version 2), loses the race, decides again at 3.
    first.execute("t", lambda s, n: commands.seat_player(s, "p2", 10, n), _ok)
    assert asked == [
        (1, ["TableCreated"]),
        (2, ["PlayerSeated"]),
        (3, ["PlayerSeated"]),  # the stale attempt, refused by the store
        (4, ["PlayerSeated"]),
    ]
    assert store.follow_ups == [
        ("t", ("RPUSH", "followed", "v1")),
        ("t", ("RPUSH", "followed", "v2")),
        ("t", ("RPUSH", "followed", "v4")),
    ]


def test_a_command_whose_follow_ups_cannot_be_made_is_stored_without_them(caplog):
    def broken(state, events):
        raise RuntimeError("no queue today")

    store = InMemoryEventStore()
    tables = Tables(store, follow_ups=broken)
    rules = resolve_ruleset("three-card")
    logger = logging.getLogger("guts.tables")  # "guts" may not propagate (the app's logging)
    logger.addHandler(caplog.handler)
    try:
        created = tables.execute(
            "t", lambda s, n: commands.create_table("t", rules, n), _ok, create=True
        )
    finally:
        logger.removeHandler(caplog.handler)
    assert created.status == 200 and store.load("t").version == 1
    assert store.follow_ups == []
    assert "no follow-ups" in caplog.text


def test_snapshots_are_stored_every_few_versions_and_loads_apply_the_events_since():
    store = InMemoryEventStore()
    tables = Tables(store, snapshot_every=4)
    rules = resolve_ruleset("three-card")
    tables.execute("t", lambda s, n: commands.create_table("t", rules, n), _ok, create=True)
    snapshot_versions = set()
    for i in range(9):  # 6 seats, then 3 top-ups
        if i < 6:
            tables.execute("t", lambda s, n, i=i: commands.seat_player(s, f"p{i}", 10, n), _ok)
        else:
            tables.execute("t", lambda s, n: commands.top_up(s, 0, 5, n), _ok)
        loaded = store.load("t")
        snapshot_versions.add(loaded.version - len(loaded.tail))
        assert len(loaded.tail) < 4
        replayed = replay(decode_event(e.data) for e in store.read("t"))
        assert tables.load("t").to_data() == replayed.to_data()
    assert snapshot_versions == {1, 4, 8}
    # A process that never saw the table decides on the snapshot and the events after it.
    other = Tables(store)
    dealt = other.execute("t", lambda s, n: commands.deal(s, b"x" * 32, n), _ok)
    assert dealt.state.version == 11 and dealt.state.seats[0].stack == 25 - 1  # minus the ante
