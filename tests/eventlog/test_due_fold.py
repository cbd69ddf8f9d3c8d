"""On one Redis the append script records a table's new due in the due index itself, in the
round trip that writes the events (`RedisEventStore.index_due_with`); on a cluster it cannot
(the index's slot is never a table's) and the caller records it after."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import redis

from service.eventlog.due_index import DueIndex
from service.eventlog.redis_store import RedisEventStore
from service.eventlog.store import Idempotency, OverLimit, Quota, VersionConflict
from service.rules.decide import CreateTable, Deal, Declare, SeatPlayer
from service.rules.ruleset import resolve_ruleset
from service.rules.times import parse_iso
from service.tables import Tables


class CountedIndex(DueIndex):
    """A due index that counts the records sent to it apart from the appends."""

    def __init__(self, client: redis.Redis) -> None:
        super().__init__(client, prefix="test")
        self.records: list[tuple[str, int, float | None]] = []

    def record(self, table_id: str, version: int, due: float | None) -> bool:
        self.records.append((table_id, version, due))
        return super().record(table_id, version, due)


def _folded(client: redis.Redis) -> tuple[RedisEventStore, CountedIndex]:
    store = RedisEventStore(client, prefix="test")
    index = CountedIndex(client)
    store.index_due_with(index.record_keys)
    return store, index


def _versions(client: redis.Redis, index: DueIndex) -> dict[bytes, bytes]:
    return client.hgetall(index.versions_key)  # type: ignore[return-value]


def test_an_append_asked_to_index_its_due_records_it_at_the_new_version(redis_client):
    store, index = _folded(redis_client)
    made = store.append("t", 0, [b"e1"], b"snap", due=1000.5, index_due=True)
    assert made.due_indexed and index.due_at("t") == 1000.5
    assert _versions(redis_client, index) == {b"t": b"1"}
    moved = store.append("t", 1, [b"e2", b"e3"], None, due=900.25, index_due=True)
    assert moved.version == 3 and index.due_at("t") == 900.25
    assert _versions(redis_client, index) == {b"t": b"3"}
    # Nothing due any more: the table leaves the index.
    assert store.append("t", 3, [b"e4"], None, due=None, index_due=True).due_indexed
    assert index.due_at("t") is None and _versions(redis_client, index) == {}
    # Not asked: the index is not touched (the due is stored with the table all the same).
    kept = store.append("t", 4, [b"e5"], None, due=50.0)
    assert not kept.due_indexed and index.due_at("t") is None
    assert store.dues(["t"]) == [(5, 50.0)]
    assert index.records == []


def test_an_append_that_writes_nothing_records_nothing(redis_client):
    store, index = _folded(redis_client)
    record = Idempotency("k", "h", b"{}")
    store.append("t", 0, [b"e1"], b"snap", record, due=100.0, index_due=True)
    with pytest.raises(VersionConflict):  # a stale version: another command won
        store.append("t", 0, [b"e1"], b"snap", due=5.0, index_due=True)
    replayed = store.append("t", 1, [b"e2"], None, record, due=7.0, index_due=True)
    assert replayed.replayed is not None and not replayed.due_indexed
    assert index.due_at("t") == 100.0 and _versions(redis_client, index) == {b"t": b"1"}


def test_the_fold_keeps_its_keys_apart_from_an_idempotency_record_and_a_quota(redis_client):
    store, index = _folded(redis_client)
    quota = Quota("c", limit=2, window_ms=60_000)
    record = Idempotency("k", "h", b"{}")
    made = store.append("t", 0, [b"e1"], b"snap", record, 42.0, quota=quota, index_due=True)
    assert made.due_indexed and quota.counted and index.due_at("t") == 42.0
    assert store.find_idempotent("t", "k") == record
    again = Quota("c", limit=2, window_ms=60_000)
    store.append("t", 1, [b"e2"], None, None, 43.0, quota=again, index_due=True)
    assert index.due_at("t") == 43.0
    with pytest.raises(OverLimit):  # (the counter is full: nothing written, nothing indexed)
        store.append("t", 2, [b"e3"], None, None, 44.0, quota=Quota("c", 2, 60_000), index_due=True)
    assert index.due_at("t") == 43.0 and _versions(redis_client, index) == {b"t": b"2"}


def test_a_record_folded_into_an_append_never_moves_a_later_record_back(redis_client):
    store, index = _folded(redis_client)
    index.record("t", 9, 500.0)  # (a later version, recorded first: out of order)
    store.append("t", 0, [b"e1"], b"snap", due=100.0, index_due=True)
    assert index.due_at("t") == 500.0 and _versions(redis_client, index) == {b"t": b"9"}


def test_a_folded_record_earlier_than_the_index_wakes_a_waiting_dispatcher(redis_client):
    store, index = _folded(redis_client)
    index.record("other", 1, 10_000.0)
    woke: list[bool] = []
    waiting = threading.Thread(target=lambda: woke.append(index.wait(10.0)))
    waiting.start()
    store.append("t", 0, [b"e1"], b"snap", due=100.0, index_due=True)
    waiting.join(10)
    assert woke == [True]


def test_tables_on_one_redis_index_a_deal_with_its_append_alone(redis_client):
    store, index = _folded(redis_client)
    tables = Tables(store, index=index)
    rules = resolve_ruleset("three-card", {"decision_timeout_s": 30})
    tables.execute("t", CreateTable("t", rules), create=True)
    for i in range(2):
        tables.execute("t", SeatPlayer(f"p{i}", 10))
    dealt = tables.execute("t", Deal(b"x" * 32))
    deadline = parse_iso(dealt.state.hand.deadline).timestamp()
    assert index.due_at("t") == pytest.approx(deadline, abs=0.001)
    tables.execute("t", Declare(0, "in"))
    assert index.records == []  # (no record sent apart from an append)


def test_a_store_not_folded_leaves_the_record_to_its_caller(redis_client):
    store = RedisEventStore(redis_client, prefix="test")
    index = CountedIndex(redis_client)
    made = store.append("t", 0, [b"e1"], b"snap", due=100.0, index_due=True)
    assert not made.due_indexed and index.due_at("t") is None
    tables = Tables(store, index=index)
    rules = resolve_ruleset("three-card", {"decision_timeout_s": 30})
    tables.execute("u", CreateTable("u", rules), create=True)
    assert index.records == [("u", 1, None)]


def test_a_cluster_store_refuses_to_fold_the_index(cluster_client: Any):
    store = RedisEventStore(cluster_client, prefix="test")
    with pytest.raises(ValueError, match="cluster"):
        store.index_due_with(DueIndex(cluster_client, prefix="test").record_keys)
