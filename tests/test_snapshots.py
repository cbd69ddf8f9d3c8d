"""The snapshot caches: shared slots between forked processes, and `Tables` deciding on them."""

from __future__ import annotations

import os
from typing import Any

import pytest

from service.eventlog.memory import InMemoryEventStore
from service.eventlog.store import Loaded, VersionConflict
from service.rules.decide import CreateTable, Deal, Declare, SeatPlayer
from service.rules.ruleset import resolve_ruleset
from service.tables import Tables
from service.tables.state_cache import Known, SharedTails, StateCache

KEY = SharedTails.key("ns", "t1")


def test_a_child_forked_after_creation_sees_the_parents_writes_and_the_parent_its():
    shared = SharedTails(slots=16)
    shared.put(KEY, 3, [b"e2", b"e3"])
    pid = os.fork()
    if pid == 0:
        ok = shared.since(KEY, 1) == [b"e2", b"e3"]
        shared.put(KEY, 4, [b"from the child"])
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert shared.since(KEY, 1) == [b"e2", b"e3", b"from the child"]


def test_events_since_a_version_when_the_slot_holds_all_of_them():
    shared = SharedTails(slots=16)
    shared.put(KEY, 5, [b"e4", b"e5"])
    shared.put(KEY, 6, [b"e6"])  # follows on: kept after the others
    assert shared.since(KEY, 3) == [b"e4", b"e5", b"e6"]
    assert shared.since(KEY, 5) == [b"e6"]
    assert shared.since(KEY, 6) == []  # nothing newer
    assert shared.since(KEY, 2) is None  # e3 is missing: ask Redis
    shared.put(KEY, 9, [b"e9"])  # e7 and e8 went by elsewhere: the slot starts again
    assert shared.since(KEY, 8) == [b"e9"]
    assert shared.since(KEY, 6) is None


def test_a_late_writer_never_takes_the_slot_back_in_time():
    shared = SharedTails(slots=16)
    shared.put(KEY, 5, [b"e5"])
    shared.put(KEY, 4, [b"e4"])
    assert shared.since(KEY, 4) == [b"e5"]


def test_tables_are_told_apart_by_namespace_and_id():
    shared = SharedTails(slots=1)  # one slot: every table collides
    shared.put(KEY, 1, [b"a"])
    assert shared.since(SharedTails.key("other", "t1"), 0) == []  # knows nothing of it
    assert shared.since(SharedTails.key("ns", "t2"), 0) == []
    shared.put(SharedTails.key("ns", "t2"), 1, [b"b"])  # evicts t1
    assert shared.since(KEY, 0) == []


def test_a_cell_overwritten_meanwhile_reads_as_missing():
    shared = SharedTails(slots=1, ring=4)
    shared.put(KEY, 7, [b'{"type": "x"}'])
    cell = SharedTails._HEADER.size + 7 % 4 * shared.cell_size
    shared._map[cell] ^= 0x01  # its version tag no longer says 7
    assert shared.since(KEY, 6) is None


def test_a_slot_keeps_the_last_ring_of_events():
    shared = SharedTails(slots=1, ring=3, cell_size=64)
    for version in range(1, 6):
        shared.put(KEY, version, [b"%010d" % version])
    assert shared.since(KEY, 2) == [b"%010d" % v for v in (3, 4, 5)]
    assert shared.since(KEY, 1) is None
    shared.put(KEY, 6, [b"x" * 100])  # larger than a cell: the table is not shared
    assert shared.since(KEY, 5) == []


def test_only_events_that_chain_from_the_state_are_applied():
    store = InMemoryEventStore()
    tables = Tables(store)
    rules = resolve_ruleset("three-card")
    for table in ("t", "u"):
        tables.execute(table, CreateTable(table, rules), create=True)
        tables.execute(table, SeatPlayer("p0", 10))
    known = Known.loaded(store.load("t"))
    t_events = [e.data for e in store.read("t")]
    u_events = [e.data for e in store.read("u")]

    def created() -> Known:
        after_first = Known(0, None).advanced(t_events[:1])
        assert after_first is not None and after_first.version == 1
        return after_first

    seated = created().advanced(t_events[1:])
    assert seated is not None and seated.state.to_data() == known.working_state()[0].to_data()
    assert created().advanced(u_events[1:]) is None  # another table's next event
    assert Known(0, None).advanced(t_events[1:]) is None  # a gap
    assert created().advanced([b"not json"]) is None


class CountingStore(InMemoryEventStore):
    """An in-memory store that counts loads and refused appends."""

    def __init__(self) -> None:
        super().__init__()
        self.loads = 0
        self.conflicts = 0

    def load(self, table_id: str) -> Loaded:
        self.loads += 1
        return super().load(table_id)

    def append(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().append(*args, **kwargs)
        except VersionConflict:
            self.conflicts += 1
            raise


def _two_processes(shared: SharedTails | None) -> tuple[CountingStore, Tables, Tables]:
    """Two `Tables` on one store, as two workers would be (each its own local cache)."""
    store = CountingStore()
    first, second = (
        Tables(store, cache=StateCache(shared=shared, namespace="ns")) for _ in range(2)
    )
    rules = resolve_ruleset("three-card")
    first.execute("t", CreateTable("t", rules), create=True)
    for i in range(3):
        first.execute("t", SeatPlayer(f"p{i}", 10))
    return store, first, second


def _alternate(first: Tables, second: Tables) -> None:
    second.execute("t", Deal(b"x" * 32))
    for seat, tables in enumerate((first, second, first)):
        tables.execute("t", Declare(seat, "in"))


def test_with_shared_tails_a_worker_decides_on_what_the_other_wrote():
    store, first, second = _two_processes(SharedTails(slots=64))
    store.loads = store.conflicts = 0
    _alternate(first, second)
    # One load: the second process had never seen the table. Then each brings its state up
    # to date with what the other stored, and never decides on a stale one.
    assert (store.loads, store.conflicts) == (1, 0)
    hand = first.load("t").hand
    assert hand is not None and hand.decisions == {0: "in", 1: "in", 2: "in"}


def test_without_them_the_stale_worker_is_refused_and_decides_again():
    store, first, second = _two_processes(None)
    store.loads = store.conflicts = 0
    _alternate(first, second)
    # Every command found its process's snapshot behind: the deal (never seen: a load), the
    # first declaration (no hand in the cached state: refused there, then a load), and the
    # other two (refused appends, decided again on the snapshot the refusal carried).
    assert (store.loads, store.conflicts) == (2, 2)


def test_a_failed_command_leaves_nothing_of_its_state_in_the_cache():
    store, first, _ = _two_processes(None)
    pot = first.load("t").pot

    def refuse_after_changing(state: Any) -> Any:
        state.pot += 1000  # a command's preparation that changes its state, then fails
        raise RuntimeError("no")

    with pytest.raises(RuntimeError):
        first.execute("t", refuse_after_changing)
    assert first.cache.take("t") is None
    store.loads = 0
    seated = first.execute("t", SeatPlayer("p3", 10))
    assert store.loads == 1 and seated.state.pot == pot == first.load("t").pot


def test_a_worker_known_to_be_behind_reads_the_current_snapshot_instead_of_deciding():
    store, first, second = _two_processes(SharedTails(slots=64, ring=1))
    for i in (3, 4):  # two events since `first` last saw the table: more than the ring
        second.execute("t", SeatPlayer(f"p{i}", 10))
    store.loads = store.conflicts = 0
    # On its stale state the seating would pass; the refusal would cost a round trip.
    first.execute("t", SeatPlayer("p5", 10))
    assert (store.loads, store.conflicts) == (1, 0)
