"""The event store contract, run against every store; then what is Redis-specific."""

from __future__ import annotations

import binascii
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.connection import AbstractConnection
from redis.retry import Retry

from service.eventlog import redis_py_bypass
from service.eventlog.memory import InMemoryEventStore
from service.eventlog.redis_store import RedisEventStore
from service.eventlog.store import (
    AppendResult,
    Chain,
    CorruptLog,
    EventStore,
    Idempotency,
    IdempotencyMismatch,
    Loaded,
    OverLimit,
    Quota,
    StoredEvent,
    StoreError,
    StoreUnavailable,
    VersionConflict,
)

ODD_TABLE_IDS = [
    "t1",
    "t1}:idem:x",
    "a}b",
    "a%7Db",
    "{braces}",
    "}{",
    "a:b:events",
    "with space",
    "tab\tand\nnewline",
    "ünïcødé-表",
    "😀",
    "",
    "*?[]",
    "x" * 300,
]


def events(*names: str) -> list[bytes]:
    """Encoded stand-ins for events: the store never looks inside."""
    return [f'{{"type":"{name}"}}'.encode() for name in names]


def datas(stored: list[StoredEvent]) -> list[bytes]:
    return [event.data for event in stored]


class TestEventStoreContract:
    """What every EventStore promises (see service/eventlog/store.py)."""

    def test_an_quota_is_counted_with_the_events_and_over_the_limit_writes_nothing(
        self, store: EventStore
    ) -> None:
        store.append("t1", 0, events("table_created"), b"snap")
        for version in (1, 2):
            quota = Quota("commands:abc", 2, 60_000)
            store.append("t1", version, events("e"), None, quota=quota)
            assert quota.counted
        over = Quota("commands:abc", 2, 60_000)
        with pytest.raises(OverLimit) as refused:
            store.append("t1", 3, events("e"), None, quota=over)
        assert over.counted and 0 < refused.value.retry_after_ms <= 60_000
        assert store.load("t1").version == 3  # nothing written
        # Another counter of the table, and the same counter at another table, are apart.
        store.append("t1", 3, events("e"), None, quota=Quota("commands:xyz", 2, 60_000))
        store.append("t2", 0, events("table_created"), b"s", quota=Quota("commands:abc", 2, 60_000))

    def test_an_append_that_conflicts_or_replays_counts_nothing(self, store: EventStore) -> None:
        store.append("t1", 0, events("table_created"), b"snap")
        record = Idempotency("k", "h", b"answer")
        store.append("t1", 1, events("e"), None, record)
        for _ in range(3):
            quota = Quota("commands:abc", 1, 60_000)
            with pytest.raises(VersionConflict):
                store.append("t1", 1, events("e"), None, quota=quota)
            assert not quota.counted
            replay = Quota("commands:abc", 1, 60_000)
            assert store.append("t1", 2, events("e"), None, record, quota=replay).replayed
            assert not replay.counted
        store.append("t1", 2, events("e"), None, quota=Quota("commands:abc", 1, 60_000))

    def test_a_request_that_writes_nothing_is_counted_on_the_same_counter(
        self, store: EventStore
    ) -> None:
        store.append("t1", 0, events("table_created"), b"snap")
        first = Quota("commands:abc", 2, 60_000)
        store.count_request("t1", first)
        assert first.counted
        store.append("t1", 1, events("e"), None, quota=Quota("commands:abc", 2, 60_000))
        with pytest.raises(OverLimit):
            store.count_request("t1", Quota("commands:abc", 2, 60_000))
        with pytest.raises(OverLimit):
            store.append("t1", 2, events("e"), None, quota=Quota("commands:abc", 2, 60_000))
        assert store.load("t1").version == 2

    def test_create_then_load(self, store: EventStore) -> None:
        result = store.append("t1", 0, events("table_created"), b"snap-1")
        assert result == AppendResult(version=1)
        assert store.load("t1") == Loaded(version=1, snapshot=b"snap-1")
        assert store.read("t1") == [StoredEvent(1, b'{"type":"table_created"}')]

    def test_load_of_unknown_table_is_version_zero_without_snapshot(
        self, store: EventStore
    ) -> None:
        assert store.load("nope") == Loaded(version=0, snapshot=None)
        assert store.read("nope") == []
        assert store.find_idempotent("nope", "k") is None
        assert store.table_ids() == []

    def test_append_increments_version_by_the_number_of_events(self, store: EventStore) -> None:
        assert store.append("t1", 0, events("a"), b"s1").version == 1
        assert store.append("t1", 1, events("b", "c", "d"), b"s4").version == 4
        assert store.append("t1", 4, events("e", "f"), b"s6").version == 6
        assert store.load("t1") == Loaded(version=6, snapshot=b"s6")
        assert [e.version for e in store.read("t1")] == [1, 2, 3, 4, 5, 6]
        assert datas(store.read("t1")) == events("a", "b", "c", "d", "e", "f")

    def test_empty_snapshot_is_a_snapshot(self, store: EventStore) -> None:
        store.append("t1", 0, events("a"), b"")
        assert store.load("t1") == Loaded(version=1, snapshot=b"")

    def test_binary_event_and_snapshot_bytes_round_trip(self, store: EventStore) -> None:
        blob = bytes(range(256))
        store.append("t1", 0, [blob, b"\x00", b"\r\n"], blob)
        assert datas(store.read("t1")) == [blob, b"\x00", b"\r\n"]
        assert store.load("t1").snapshot == blob

    def test_stale_expected_version_conflicts_and_writes_nothing(self, store: EventStore) -> None:
        store.append("t1", 0, events("a", "b"), b"s2")
        with pytest.raises(VersionConflict) as raised:
            store.append("t1", 1, events("late"), b"stale")
        assert (raised.value.expected, raised.value.actual) == (1, 2)
        assert raised.value.table_id == "t1"
        # The conflict carries the current state, so the caller can decide again at once.
        assert raised.value.current == Loaded(version=2, snapshot=b"s2")
        assert store.load("t1") == Loaded(version=2, snapshot=b"s2")
        assert datas(store.read("t1")) == events("a", "b")

    def test_expected_version_ahead_of_the_table_conflicts(self, store: EventStore) -> None:
        store.append("t1", 0, events("a"), b"s1")
        with pytest.raises(VersionConflict) as raised:
            store.append("t1", 5, events("b"), b"s")
        assert (raised.value.expected, raised.value.actual) == (5, 1)
        assert raised.value.current == Loaded(version=1, snapshot=b"s1")

    def test_an_append_that_does_not_chain_from_the_stored_head_conflicts(
        self, store: EventStore
    ) -> None:
        """A cache that holds an event the log lost (a failover) is at the right version with
        the wrong head: refused, nothing written, the current state handed back."""
        store.append("t1", 0, events("a"), b"s1", chain=Chain("genesis", "h1"))
        store.append("t1", 1, events("b"), None, chain=Chain("h1", "h2"))
        with pytest.raises(VersionConflict) as raised:
            store.append("t1", 2, events("on-a-lost-b"), None, chain=Chain("h2-lost", "h3"))
        assert (raised.value.expected, raised.value.actual) == (2, 2)
        assert raised.value.current == Loaded(2, b"s1", tuple(events("b")))
        assert datas(store.read("t1")) == events("a", "b")
        assert store.append("t1", 2, events("c"), None, chain=Chain("h2", "h3")).version == 3

    def test_a_head_is_checked_only_when_the_last_append_stored_one(
        self, store: EventStore
    ) -> None:
        store.append("t1", 0, events("a"), b"s1")  # no chain: nothing to check against
        store.append("t1", 1, events("b"), None, chain=Chain("anything", "h2"))
        store.append("t1", 2, events("c"), None)  # forgets the head
        assert store.append("t1", 3, events("d"), None, chain=Chain("other", "h4")).version == 4

    def test_creating_an_existing_table_conflicts(self, store: EventStore) -> None:
        store.append("t1", 0, events("a"), b"s1")
        with pytest.raises(VersionConflict):
            store.append("t1", 0, events("again"), b"again")
        assert store.load("t1") == Loaded(version=1, snapshot=b"s1")

    def test_a_batch_is_all_or_nothing(self, store: EventStore) -> None:
        store.append("t1", 0, events("a"), b"s1")
        store.append("t1", 1, events("b"), b"s2")
        with pytest.raises(VersionConflict):
            store.append("t1", 1, events("x", "y", "z"), b"s4")
        assert datas(store.read("t1")) == events("a", "b")
        assert store.load("t1") == Loaded(version=2, snapshot=b"s2")

    def test_appending_to_an_unknown_table_with_a_version_creates_nothing(
        self, store: EventStore
    ) -> None:
        with pytest.raises(VersionConflict) as raised:
            store.append("ghost", 3, events("a"), b"s")
        assert raised.value.actual == 0
        assert store.load("ghost") == Loaded(version=0, snapshot=None)
        assert store.table_ids() == []

    def test_bad_arguments_are_refused_before_writing(self, store: EventStore) -> None:
        with pytest.raises(ValueError):
            store.append("t1", 0, [], b"s")
        with pytest.raises(ValueError):
            store.append("t1", -1, events("a"), b"s")
        with pytest.raises(TypeError):
            store.append("t1", 0, ["not bytes"], b"s")  # type: ignore[list-item]
        with pytest.raises(ValueError):
            store.read("t1", after=-1)
        with pytest.raises(ValueError):
            store.read("t1", limit=-1)
        assert store.table_ids() == []

    def test_an_append_without_a_snapshot_keeps_it_and_loads_return_the_tail(
        self, store: EventStore
    ) -> None:
        store.append("t1", 0, events("a"), b"s1")
        store.append("t1", 1, events("b", "c"), None)
        store.append("t1", 3, events("d"), None)
        assert store.load("t1") == Loaded(4, b"s1", tuple(events("b", "c", "d")))
        store.append("t1", 4, events("e"), b"s5")
        assert store.load("t1") == Loaded(5, b"s5", ())
        assert datas(store.read("t1")) == events("a", "b", "c", "d", "e")

    def test_a_conflict_carries_the_snapshot_and_its_tail(self, store: EventStore) -> None:
        store.append("t1", 0, events("a"), b"s1")
        store.append("t1", 1, events("b"), None)
        with pytest.raises(VersionConflict) as raised:
            store.append("t1", 1, events("x"), b"sx")
        assert raised.value.current == Loaded(2, b"s1", tuple(events("b")))

    def test_creating_a_table_needs_a_snapshot(self, store: EventStore) -> None:
        with pytest.raises(ValueError):
            store.append("t1", 0, events("a"), None)
        assert store.load("t1") == Loaded(version=0, snapshot=None)

    def test_the_due_moment_is_stored_with_the_events(self, store: EventStore) -> None:
        store.append("t1", 0, events("a"), b"s1", due=1_800_000_000.25)
        assert store.dues(["t1", "nope"]) == [(1, 1_800_000_000.25), (0, None)]
        store.append("t1", 1, events("b", "c"), None, due=None)
        assert store.dues(["t1"]) == [(3, None)]
        store.append("t1", 3, events("d"), None, due=1_800_000_060.0)
        assert store.dues(["t1"]) == [(4, 1_800_000_060.0)]

    def test_the_due_moment_does_not_change_when_nothing_is_appended(
        self, store: EventStore
    ) -> None:
        record = Idempotency("k", "h", b"r")
        store.append("t1", 0, events("a"), b"s1", record, due=100.0)
        with pytest.raises(VersionConflict):
            store.append("t1", 0, events("b"), b"s", due=200.0)
        assert store.append("t1", 0, events("a"), b"s1", record, due=300.0).replayed == record
        with pytest.raises(IdempotencyMismatch):
            store.append("t1", 1, events("b"), b"s", Idempotency("k", "other", b"r"), due=400.0)
        assert store.dues(["t1"]) == [(1, 100.0)]

    def test_a_malformed_due_is_refused_before_writing(self, store: EventStore) -> None:
        for due in ("soon", float("nan"), float("inf"), True):
            with pytest.raises(TypeError):
                store.append("t1", 0, events("a"), b"s", due=due)  # type: ignore[arg-type]
        assert store.load("t1") == Loaded(version=0, snapshot=None)
        assert store.dues([]) == []

    def test_repeated_idempotency_key_replays_the_first_response(self, store: EventStore) -> None:
        first = Idempotency("key-1", "hash-a", b'{"seat":2}')
        store.append("t1", 0, events("created"), b"s1")
        assert store.append("t1", 1, events("seated"), b"s2", first) == AppendResult(2)
        assert store.find_idempotent("t1", "key-1") == first

        again = Idempotency("key-1", "hash-a", b'{"another":"response"}')
        result = store.append("t1", 1, events("seated"), b"s2-again", again)
        assert result == AppendResult(version=2, replayed=first)
        assert store.load("t1") == Loaded(version=2, snapshot=b"s2")
        assert datas(store.read("t1")) == events("created", "seated")

    def test_replay_wins_over_a_stale_version(self, store: EventStore) -> None:
        """A retry after a lost reply replays, even though the table has moved on."""
        record = Idempotency("k", "h", b"first")
        store.append("t1", 0, events("a"), b"s1", record)
        store.append("t1", 1, events("b"), b"s2")
        result = store.append("t1", 0, events("a"), b"s1", record)
        assert result == AppendResult(version=2, replayed=record)

    def test_same_key_with_another_request_is_refused(self, store: EventStore) -> None:
        store.append("t1", 0, events("a"), b"s1", Idempotency("k", "hash-a", b"r1"))
        with pytest.raises(IdempotencyMismatch) as raised:
            store.append("t1", 1, events("b"), b"s2", Idempotency("k", "hash-b", b"r2"))
        assert raised.value.key == "k"
        assert raised.value.stored_hash == "hash-a"
        assert raised.value.request_hash == "hash-b"
        assert store.load("t1") == Loaded(version=1, snapshot=b"s1")
        assert datas(store.read("t1")) == events("a")
        assert store.find_idempotent("t1", "k") == Idempotency("k", "hash-a", b"r1")

    def test_a_conflicting_append_stores_no_idempotency_record(self, store: EventStore) -> None:
        store.append("t1", 0, events("a"), b"s1")
        with pytest.raises(VersionConflict):
            store.append("t1", 0, events("b"), b"s", Idempotency("k", "h", b"r"))
        assert store.find_idempotent("t1", "k") is None

    def test_idempotency_keys_belong_to_one_table(self, store: EventStore) -> None:
        store.append("t1", 0, events("a"), b"s", Idempotency("k", "h1", b"r1"))
        result = store.append("t2", 0, events("a"), b"s", Idempotency("k", "h2", b"r2"))
        assert result == AppendResult(version=1)
        assert store.find_idempotent("t1", "k") == Idempotency("k", "h1", b"r1")
        assert store.find_idempotent("t2", "k") == Idempotency("k", "h2", b"r2")

    @pytest.mark.parametrize("key", ["k:1", "{k}", "a b", "ключ", "😀", "x" * 255])
    def test_odd_idempotency_keys(self, store: EventStore, key: str) -> None:
        record = Idempotency(key, "h", b"r")
        store.append("t1", 0, events("a"), b"s", record)
        assert store.find_idempotent("t1", key) == record
        assert store.append("t1", 0, events("a"), b"s", record).replayed == record

    def test_read_pages_with_after_and_limit(self, store: EventStore) -> None:
        names = [f"e{n}" for n in range(1, 11)]
        store.append("t1", 0, events(*names), b"s")
        assert [e.version for e in store.read("t1", after=0, limit=3)] == [1, 2, 3]
        assert [e.version for e in store.read("t1", after=3, limit=3)] == [4, 5, 6]
        assert [e.version for e in store.read("t1", after=9, limit=3)] == [10]
        assert store.read("t1", after=10) == []
        assert store.read("t1", after=50, limit=5) == []
        assert store.read("t1", after=2, limit=0) == []
        assert datas(store.read("t1", after=7)) == events("e8", "e9", "e10")

        pages, after = [], 0
        while page := store.read("t1", after=after, limit=4):
            pages.append([e.version for e in page])
            after = page[-1].version
        assert pages == [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10]]

    def test_table_ids_lists_created_tables_sorted(self, store: EventStore) -> None:
        for table_id in ["b", "a", "c"]:
            store.append(table_id, 0, events("created"), b"s")
        store.append("a", 1, events("more"), b"s")
        assert store.table_ids() == ["a", "b", "c"]

    def test_odd_table_ids_are_separate_tables(self, store: EventStore) -> None:
        for n, table_id in enumerate(ODD_TABLE_IDS):
            store.append(table_id, 0, events(*[f"e{n}"] * (n + 1)), f"s{n}".encode())
            record = Idempotency("k", f"h{n}", b"r")
            store.append(table_id, n + 1, events("last"), f"s{n}".encode(), record)
        for n, table_id in enumerate(ODD_TABLE_IDS):
            assert store.load(table_id) == Loaded(version=n + 2, snapshot=f"s{n}".encode())
            assert datas(store.read(table_id)) == events(*[f"e{n}"] * (n + 1), "last")
            assert store.find_idempotent(table_id, "k") == Idempotency("k", f"h{n}", b"r")
        assert store.table_ids() == sorted(ODD_TABLE_IDS)

    def test_two_writers_lose_and_duplicate_nothing(self, store: EventStore) -> None:
        per_writer = 1_000
        store.append("t1", 0, events("created"), b"0")
        errors: list[BaseException] = []
        start = threading.Barrier(2)

        def writer(name: str) -> None:
            try:
                start.wait()
                for n in range(per_writer):
                    event = f"{name}:{n}".encode()
                    while True:
                        version = store.load("t1").version
                        time.sleep(0)  # deciding takes a while: let the other writer in
                        try:
                            store.append("t1", version, [event], str(version + 1).encode())
                            break
                        except VersionConflict:
                            pass  # the other writer got there first: decide again
            except BaseException as error:  # surfaced by the assertion below
                errors.append(error)

        threads = [threading.Thread(target=writer, args=(name,)) for name in "AB"]
        interval = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)  # interleave the threads finely, even in memory
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        finally:
            sys.setswitchinterval(interval)
        assert errors == []

        log = store.read("t1")
        assert [e.version for e in log] == list(range(1, 2 * per_writer + 2))
        assert store.load("t1") == Loaded(2 * per_writer + 1, str(2 * per_writer + 1).encode())
        for name in "AB":
            mine = [e.data for e in log if e.data.startswith(f"{name}:".encode())]
            assert mine == [f"{name}:{n}".encode() for n in range(per_writer)]


class TestInMemoryEventStore:
    """What only the in-memory store does."""

    def test_idempotency_records_expire(self) -> None:
        now = [1000.0]
        store = InMemoryEventStore(idempotency_ttl_s=60, clock=lambda: now[0])
        store.append("t1", 0, events("a"), b"s", Idempotency("k", "h", b"r"))
        now[0] += 59.9
        assert store.find_idempotent("t1", "k") is not None
        now[0] += 0.1
        assert store.find_idempotent("t1", "k") is None
        assert store.append("t1", 1, events("b"), b"s", Idempotency("k", "h2", b"r2")).version == 2

    def test_is_an_event_store(self) -> None:
        assert isinstance(InMemoryEventStore(), EventStore)


def slot(key: bytes) -> int:
    """The Redis Cluster slot of ``key`` (CRC16/XMODEM of its hash tag, mod 16384)."""
    start = key.find(b"{")
    if start != -1:
        end = key.find(b"}", start + 1)
        if end > start + 1:
            key = key[start + 1 : end]
    return binascii.crc_hqx(key, 0) % 16384


class CommandCounter:
    """Records every command any redis-py connection sends (the store's own connections
    included, which pack their commands themselves), by wrapping the connection class's
    send_packed_command and reading each command's name off the wire format."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.commands: list[str] = []
        original: Callable[..., Any] = AbstractConnection.send_packed_command

        def counting(connection: AbstractConnection, packed: Any, *args: Any, **kw: Any) -> Any:
            wire = b"".join(packed) if isinstance(packed, list) else packed
            # each command is "*<count>\r\n$<length>\r\n<name>\r\n..."
            self.commands += [
                m.decode() for m in re.findall(rb"\*\d+\r\n\$\d+\r\n([A-Z]+)\r\n", wire)
            ]
            return original(connection, packed, *args, **kw)

        monkeypatch.setattr(AbstractConnection, "send_packed_command", counting)


class TestRedisEventStore:
    """What only the Redis store does: key layout, stream ids, round trips."""

    @pytest.fixture(params=["bypass", "plain"])
    def store(self, redis_client: redis.Redis, request: pytest.FixtureRequest) -> RedisEventStore:
        """With and without the shortcut around redis-py (service/eventlog/redis_py_bypass.py)."""
        bypass = request.param == "bypass"
        return RedisEventStore(redis_client, prefix="test", bypass_redis_py=bypass)

    def test_is_an_event_store(self, store: RedisEventStore) -> None:
        assert isinstance(store, EventStore)

    def test_a_counter_is_one_list_under_the_tables_hash_tag_expiring_with_its_window(
        self, store: RedisEventStore, redis_client: redis.Redis
    ) -> None:
        store.append("t1", 0, events("a"), b"s", quota=Quota("commands:abc", 5, 60_000))
        key = b"test:{t1}:quota:commands:abc"
        assert redis_client.type(key) == b"list" and redis_client.llen(key) == 1
        assert 59_000 < redis_client.pttl(key) <= 60_000

    @pytest.mark.parametrize(
        "spoil", [lambda c, k: c.set(k, b"x"), lambda c, k: c.rpush(k, b"not-a-time", b"x")]
    )
    def test_a_counter_written_outside_the_store_starts_over(
        self, store: RedisEventStore, redis_client: redis.Redis, spoil: Callable[..., Any]
    ) -> None:
        store.append("t1", 0, events("a"), b"s")
        key = b"test:{t1}:quota:commands:abc"
        spoil(redis_client, key)
        store.count_request("t1", Quota("commands:abc", 2, 60_000))
        store.append("t1", 1, events("b"), None, quota=Quota("commands:abc", 2, 60_000))
        with pytest.raises(OverLimit):
            store.count_request("t1", Quota("commands:abc", 2, 60_000))

    def test_stream_ids_encode_versions(
        self, store: RedisEventStore, redis_client: redis.Redis
    ) -> None:
        store.append("t1", 0, events("a", "b"), b"s")
        store.append("t1", 2, events("c"), None)
        entries = redis_client.xrange(b"test:{t1}:events") or []
        assert [entry_id for entry_id, _ in entries] == [b"1-0", b"2-0", b"3-0"]
        assert entries[0][1] == {b"data": b'{"type":"a"}'}
        meta = {b"version": b"3", b"snapshot": b"s", b"snapshot_version": b"2"}
        assert redis_client.hgetall(b"test:{t1}:meta") == meta
        assert sorted(redis_client.keys(b"*")) == [b"test:{t1}:events", b"test:{t1}:meta"]

    def test_version_is_not_derived_from_xlen(
        self, store: RedisEventStore, redis_client: redis.Redis
    ) -> None:
        store.append("t1", 0, events("a", "b"), b"s2")
        redis_client.xadd(b"test:{t1}:events", {b"data": b"rogue"})  # written behind our back
        assert redis_client.xlen(b"test:{t1}:events") == 3
        assert store.load("t1") == Loaded(version=2, snapshot=b"s2")
        with pytest.raises(VersionConflict) as raised:
            store.append("t1", 3, events("c"), b"s3")
        assert raised.value.actual == 2
        # The stored version matches, but the stream no longer ends there: refuse to write.
        with pytest.raises(CorruptLog):
            store.append("t1", 2, events("c"), b"s3")
        assert redis_client.xlen(b"test:{t1}:events") == 3
        assert store.load("t1") == Loaded(version=2, snapshot=b"s2")
        with pytest.raises(CorruptLog):
            store.read("t1")
        assert datas(store.read("t1", limit=2)) == events("a", "b")

    def test_a_stream_with_a_later_id_than_its_version_is_refused(
        self, store: RedisEventStore, redis_client: redis.Redis
    ) -> None:
        store.append("t1", 0, events("a", "b"), b"s2")
        key = b"test:{t1}:events"
        redis_client.xdel(key, b"2-0")
        redis_client.xadd(key, {b"data": b"rogue"}, id=b"7-0")  # as many entries, a later id
        with pytest.raises(CorruptLog):
            store.append("t1", 2, events("c"), b"s3")
        assert [entry_id for entry_id, _ in redis_client.xrange(key)] == [b"1-0", b"7-0"]
        assert store.load("t1") == Loaded(version=2, snapshot=b"s2")

    def test_a_stream_without_meta_is_not_a_new_table(
        self, store: RedisEventStore, redis_client: redis.Redis
    ) -> None:
        store.append("t1", 0, events("a"), b"s1")
        redis_client.delete(b"test:{t1}:meta")
        assert store.load("t1") == Loaded(version=0, snapshot=None)
        with pytest.raises(CorruptLog):
            store.append("t1", 0, events("again"), b"s")
        assert redis_client.xlen(b"test:{t1}:events") == 1

    @pytest.mark.parametrize("table_id", ODD_TABLE_IDS)
    def test_keys_of_a_table_share_one_hash_tag(
        self, store: RedisEventStore, redis_client: redis.Redis, table_id: str
    ) -> None:
        store.append(table_id, 0, events("a"), b"s", Idempotency("{k}:x", "h", b"r"), due=5.0)
        store.append(table_id, 1, events("b"), None, due=None)
        keys = [key for key in redis_client.keys(b"*") if isinstance(key, bytes)]
        assert len(keys) == 3  # an append writes its own table's keys and nothing else
        assert len({slot(key) for key in keys}) == 1
        assert slot(store.events_key(table_id)) == slot(keys[0])

    def test_idempotency_records_expire(self, redis_client: redis.Redis) -> None:
        store = RedisEventStore(redis_client, prefix="test", idempotency_ttl_s=3600)
        store.append("t1", 0, events("a"), b"s", Idempotency("k", "h", b"r"))
        assert 3590 <= redis_client.ttl(store.idempotency_key("t1", "k")) <= 3600
        redis_client.delete(store.idempotency_key("t1", "k"))  # as if expired
        assert store.find_idempotent("t1", "k") is None

    def test_append_and_load_are_one_round_trip_each(
        self,
        store: RedisEventStore,
        redis_client: redis.Redis,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        store.append("warm-up", 0, events("a"), b"s")  # the first call loads the script
        counter = CommandCounter(monkeypatch)
        store.append("t1", 0, events("a", "b", "c"), b"s", Idempotency("k", "h", b"r"))
        assert counter.commands == ["EVALSHA"]
        store.append("t1", 0, events("a", "b", "c"), b"s", Idempotency("k", "h", b"r"))
        with pytest.raises(VersionConflict):
            store.append("t1", 0, events("x"), b"s")
        store.load("t1")
        assert counter.commands == ["EVALSHA", "EVALSHA", "EVALSHA", "HMGET"]

    def test_table_ids_are_found_by_their_meta_hashes_only(
        self, store: RedisEventStore, redis_client: redis.Redis
    ) -> None:
        store.append("t1", 0, events("a"), b"s", Idempotency("x}:meta", "h", b"r"))
        RedisEventStore(redis_client, prefix="test:other").append("t2", 0, events("a"), b"s")
        assert store.table_ids() == ["t1"]

    @pytest.mark.parametrize("bypass", [True, False])
    def test_a_killed_connection_is_replaced_without_losing_the_command(
        self, redis_client: redis.Redis, bypass: bool
    ) -> None:
        where = redis_client.get_connection_kwargs()
        own = redis.Redis(host=where["host"], port=where["port"])  # connections of its own
        try:
            store = RedisEventStore(own, prefix="test", bypass_redis_py=bypass)
            store.append("t1", 0, events("a"), b"s")
            killed = redis_client.client_kill_filter(_type="normal", skipme=True)
            assert killed >= 1  # the store's own connection was among them
            assert store.append("t1", 1, events("b"), b"s2").version == 2
            assert store.load("t1") == Loaded(2, b"s2")
        finally:
            own.close()

    def test_every_connection_killed_at_once_is_replaced(self, redis_client: redis.Redis) -> None:
        """Several callers (threads, or greenlets under gevent workers) left several free
        connections; a restarted Redis breaks them all, and the next command still succeeds."""
        from concurrent.futures import ThreadPoolExecutor

        where = redis_client.get_connection_kwargs()
        own = redis.Redis(host=where["host"], port=where["port"])
        try:
            store = RedisEventStore(own, prefix="test")
            store.append("t1", 0, events("a"), b"s")
            with ThreadPoolExecutor(8) as pool:  # at once: as many connections as overlapped
                barrier = threading.Barrier(8)
                list(pool.map(lambda _: (barrier.wait(), store.load("t1")), range(8)))
            killed = redis_client.client_kill_filter(_type="normal", skipme=True)
            assert killed >= 1  # every free one (how many overlapped is the scheduler's)
            assert store.load("t1") == Loaded(1, b"s")
            assert store.append("t1", 1, events("b"), b"s2").version == 2
        finally:
            own.close()

    def test_many_callers_at_once_share_a_bounded_number_of_connections(
        self, redis_client: redis.Redis
    ) -> None:
        """A burst of callers (streams opening under gevent) waits for a free connection
        past the limit instead of opening one each; every command is still answered."""
        from concurrent.futures import ThreadPoolExecutor

        from service.eventlog.redis_py_bypass import DirectCommands

        where = redis_client.get_connection_kwargs()
        own = redis.Redis(host=where["host"], port=where["port"], client_name="bounded")
        try:
            direct = DirectCommands(own, limit=3)
            barrier = threading.Barrier(40)

            def command(n: int) -> tuple[bytes, int]:
                barrier.wait()
                reply = direct.call("ECHO", f"m{n}")
                names = [c["name"] for c in redis_client.client_list()]
                return reply, names.count("bounded")

            with ThreadPoolExecutor(40) as pool:
                answers = list(pool.map(command, range(40)))
            assert [reply for reply, _ in answers] == [f"m{n}".encode() for n in range(40)]
            assert max(seen for _, seen in answers) <= 3
        finally:
            own.close()

    def test_a_forked_child_uses_a_connection_of_its_own(
        self, store: RedisEventStore, redis_client: redis.Redis
    ) -> None:
        store.append("t1", 0, events("a"), b"parent")
        store.append("t2", 0, events("a"), b"child")
        pid = os.fork()
        if pid == 0:  # the child: a shared socket would mix up replies with the parent's
            ok = all(store.load("t2") == Loaded(1, b"child") for _ in range(300))
            os._exit(0 if ok else 1)
        seen = [store.load("t1") for _ in range(300)]
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert set(seen) == {Loaded(1, b"parent")}

    def test_script_is_reloaded_after_script_flush(
        self, store: RedisEventStore, redis_client: redis.Redis
    ) -> None:
        store.append("t1", 0, events("a"), b"s")
        redis_client.script_flush()
        assert store.append("t1", 1, events("b"), b"s").version == 2

    def test_prefixes_keep_tenants_apart(self, redis_client: redis.Redis) -> None:
        one = RedisEventStore(redis_client, prefix="one")
        two = RedisEventStore(redis_client, prefix="two")
        one.append("t1", 0, events("a"), b"s")
        assert two.load("t1") == Loaded(0, None)
        assert two.table_ids() == []
        assert two.append("t1", 0, events("b", "c"), b"s").version == 2
        assert one.table_ids() == two.table_ids() == ["t1"]

    def test_refuses_a_decoding_client(self, redis_url: str) -> None:
        client = redis.Redis.from_url(redis_url, decode_responses=True)
        try:
            with pytest.raises(ValueError, match="decode_responses"):
                RedisEventStore(client)
        finally:
            client.close()

    def test_unreachable_redis_is_store_unavailable(self, redis_client: redis.Redis) -> None:
        from service.processes.redis_server import free_port

        dead = redis.Redis(port=free_port(), retry=Retry(NoBackoff(), 0))  # nobody listens
        try:
            store = RedisEventStore(dead)
            with pytest.raises(StoreUnavailable):
                store.load("t1")
            with pytest.raises(StoreUnavailable):
                store.append("t1", 0, events("a"), b"s")
        finally:
            dead.close()

    def test_commands_are_packed_by_redis_py_without_hiredis(
        self, store: RedisEventStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(redis_py_bypass, "_hiredis_pack", None)
        assert store.append("t1", 0, events("a", "b"), b"s").version == 2
        assert store.load("t1") == Loaded(2, b"s")

    def test_a_command_redis_refuses_is_a_store_error(
        self, store: RedisEventStore, redis_client: redis.Redis
    ) -> None:
        redis_client.set(b"test:{t1}:meta", b"not a hash")  # written behind our back
        with pytest.raises(StoreError) as refused:
            store.append("t1", 0, events("a"), b"s")
        assert not isinstance(refused.value, StoreUnavailable)
        assert "WRONGTYPE" in str(refused.value)
