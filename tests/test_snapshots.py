"""The snapshot caches: shared slots between forked processes, and `Tables` deciding on them."""

from __future__ import annotations

import os
from typing import Any

import pytest

from service.eventlog.memory import InMemoryEventStore
from service.eventlog.store import Loaded, VersionConflict
from service.rules import commands
from service.rules.ruleset import resolve_ruleset
from service.snapshots import SharedSnapshots, SnapshotCache
from service.tables import Tables

KEY = SharedSnapshots.key("ns", "t1")


def test_a_child_forked_after_creation_sees_the_parents_writes_and_the_parent_its():
    shared = SharedSnapshots(slots=16)
    shared.put(KEY, 3, b"from the parent")
    pid = os.fork()
    if pid == 0:
        ok = shared.get(KEY) == Loaded(3, b"from the parent")
        shared.put(KEY, 4, b"from the child")
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert shared.get(KEY) == Loaded(4, b"from the child")


def test_only_newer_snapshots_are_kept_and_returned():
    shared = SharedSnapshots(slots=16)
    shared.put(KEY, 5, b"five")
    shared.put(KEY, 4, b"four")  # a late writer never takes the slot back in time
    assert shared.get(KEY) == Loaded(5, b"five")
    assert shared.get(KEY, newer_than=5) is None
    assert shared.get(KEY, newer_than=4) == Loaded(5, b"five")


def test_tables_are_told_apart_by_namespace_and_id():
    shared = SharedSnapshots(slots=1)  # one slot: every table collides
    shared.put(KEY, 1, b"a")
    assert shared.get(SharedSnapshots.key("other", "t1")) is None
    assert shared.get(SharedSnapshots.key("ns", "t2")) is None
    shared.put(SharedSnapshots.key("ns", "t2"), 1, b"b")  # evicts t1
    assert shared.get(KEY) is None


@pytest.mark.parametrize("where", ["header", "snapshot"])
def test_a_torn_or_damaged_slot_reads_as_empty(where: str):
    shared = SharedSnapshots(slots=1, slot_size=256)
    shared.put(KEY, 7, b'{"state": "x"}')
    offset = 16 + 8 if where == "header" else SharedSnapshots._HEADER.size + 3
    shared._map[offset] ^= 0x01  # as if read in the middle of another process's write
    assert shared.get(KEY) is None


def test_snapshots_larger_than_a_slot_are_not_shared():
    shared = SharedSnapshots(slots=1, slot_size=128)
    shared.put(KEY, 1, b"x" * 200)
    assert shared.get(KEY) is None


def _ok(state: Any, events: Any) -> tuple[int, Any]:
    return 200, {"version": state.version}


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


def _two_processes(shared: SharedSnapshots | None) -> tuple[CountingStore, Tables, Tables]:
    """Two `Tables` on one store, as two workers would be (each its own local cache)."""
    store = CountingStore()
    first, second = (
        Tables(store, cache=SnapshotCache(shared=shared, namespace="ns")) for _ in range(2)
    )
    rules = resolve_ruleset("three-card")
    first.execute("t", lambda s, n: commands.create_table("t", rules, n), _ok, create=True)
    for i in range(3):
        first.execute("t", lambda s, n, i=i: commands.seat_player(s, f"p{i}", 10, n), _ok)
    return store, first, second


def _alternate(first: Tables, second: Tables) -> None:
    second.execute("t", lambda s, n: commands.deal(s, b"x" * 32, n), _ok)
    for seat, tables in enumerate((first, second, first)):
        tables.execute("t", lambda s, n, seat=seat: commands.declare(s, seat, "in", n), _ok)


def test_with_shared_snapshots_a_worker_decides_on_what_the_other_wrote():
    store, first, second = _two_processes(SharedSnapshots(slots=64))
    store.loads = store.conflicts = 0
    _alternate(first, second)
    assert (store.loads, store.conflicts) == (0, 0)
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


def test_a_command_never_changes_the_cached_state_it_decided_on():
    store, first, _ = _two_processes(None)
    known = first.cache.get("t")
    assert known is not None and known.state is not None
    before = known.state.to_data()

    def refuse_after_changing(state: Any, now: Any) -> list[Any]:
        state.pot += 1000  # a decision that changes its state, then fails
        raise RuntimeError("no")

    with pytest.raises(RuntimeError):
        first.execute("t", refuse_after_changing, _ok)
    assert known.state.to_data() == before
    assert first.load("t").pot == known.state.pot
