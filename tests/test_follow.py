"""The follower keeps projections up to the tables' logs: every event applied exactly once,
whoever follows and however often, notices or sweeps; one broken log stops no other table."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import cast

import redis

from service.eventlog.redis_store import RedisEventStore
from service.projections.follower import Followed, Follower
from service.rules.decide import CreateTable, SeatPlayer
from service.rules.ruleset import resolve_ruleset
from service.tables import Tables
from tests.tampering import unloadable

_APPLY = """
local position = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if position ~= tonumber(ARGV[2]) then return 0 end
for i = 4, #ARGV do redis.call('HINCRBY', KEYS[2], ARGV[i], 1) end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
"""


class EventCounts:
    """A projection for the test: how many events of each type each table has had, and, for
    each event, how many times it was applied (exactly once, or the follower is wrong)."""

    def __init__(self, client: redis.Redis, prefix: str = "test") -> None:
        self.client = client
        self.prefix = prefix  # (projections with their own prefixes keep their own counts)
        self.name = f"event-counts-{prefix}"
        self.script = client.register_script(_APPLY)

    def tidy(self, table_id: str, position: int) -> None:
        """Nothing to tidy."""

    def positions(self, tables: Sequence[tuple[str, str]]) -> list[int]:
        pipe = self.client.pipeline(transaction=False)
        for tenant, table_id in tables:
            pipe.hget(f"{self.prefix}:{{{tenant}}}:positions", table_id)
        return [int(p or 0) for p in pipe.execute()]

    def apply(self, followed: Followed) -> bool:
        tenant, table_id = followed.tenant, followed.table_id
        keys = [
            f"{self.prefix}:{{{tenant}}}:positions",
            f"{self.prefix}:{{{tenant}}}:applied:{table_id}",
        ]
        last = followed.events[-1][0]
        versions = [str(v) for v, _ in followed.events]
        return bool(self.script(keys=keys, args=[table_id, followed.after, last, *versions]))

    def applied(self, tenant: str, table_id: str) -> dict[int, int]:
        key = f"{self.prefix}:{{{tenant}}}:applied:{table_id}"
        raw = cast(dict[bytes, bytes], self.client.hgetall(key))
        return {int(k): int(v) for k, v in raw.items()}


def _table(tables: Tables, table_id: str, players: int = 3, tenant: str = "default") -> None:
    rules = resolve_ruleset("three-card")
    tables.execute(
        table_id,
        CreateTable(table_id, rules, b"s" * 32, tenant),
        create=True,
    )
    for i in range(players):
        tables.execute(table_id, SeatPlayer(f"p{i}", 50))


def test_catching_up_applies_every_event_once_and_again_nothing(redis_client):
    store = RedisEventStore(redis_client)
    _table(Tables(store), "t1", tenant="casino-a")
    counts = EventCounts(redis_client)
    follower = Follower(store, [counts], batch=2)  # several batches per table
    assert follower.catch_up("t1") == 4
    assert counts.applied("casino-a", "t1") == {1: 1, 2: 1, 3: 1, 4: 1}
    assert follower.catch_up("t1") == 0
    assert follower.catch_up("no-such-table") == 0


class CountedReads(RedisEventStore):
    """The store, counting the follower's reads of the log."""

    reads = 0

    def read(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.reads += 1
        return super().read(*args, **kwargs)


def test_projections_at_one_position_share_one_read_and_one_confirmation(redis_client):
    store = CountedReads(redis_client)
    tables = Tables(store)
    _table(tables, "t1")
    projections = [EventCounts(redis_client, prefix) for prefix in ("a", "b", "c")]
    confirmed: list[int] = []
    follower = Follower(store, projections, confirm=lambda t, last: not confirmed.append(1))
    follower.tenant("t1")  # (its first event, read once for good)
    store.reads = 0
    assert follower.catch_up("t1", upto=4) == 3 * 4
    assert store.reads == 1 and len(confirmed) == 1
    assert [p.applied("default", "t1") for p in projections] == [{1: 1, 2: 1, 3: 1, 4: 1}] * 3


def test_projections_at_different_positions_each_apply_every_event_once(redis_client):
    store = RedisEventStore(redis_client)
    tables = Tables(store)
    _table(tables, "t1", players=5)  # versions 1-6
    behind, ahead = EventCounts(redis_client, "behind"), EventCounts(redis_client, "ahead")
    assert Follower(store, [ahead], batch=2).catch_up("t1", upto=4) == 4
    tables.execute("t1", SeatPlayer("late", 50))  # version 7
    assert Follower(store, [behind, ahead], batch=2).catch_up("t1", upto=7) == 7 + 3
    assert behind.applied("default", "t1") == {v: 1 for v in range(1, 8)}
    assert ahead.applied("default", "t1") == {v: 1 for v in range(1, 8)}


def test_followers_racing_on_one_table_apply_each_event_exactly_once(redis_client):
    store = RedisEventStore(redis_client)
    tables = Tables(store)
    _table(tables, "t1", players=6)
    counts = EventCounts(redis_client)
    followers = [Follower(RedisEventStore(redis_client), [counts], batch=1) for _ in range(4)]
    barrier = threading.Barrier(len(followers))

    def follow(follower: Follower) -> None:
        barrier.wait()
        follower.catch_up("t1")

    threads = [threading.Thread(target=follow, args=(f,)) for f in followers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert counts.applied("default", "t1") == {v: 1 for v in range(1, 8)}


def test_the_sweep_finds_what_no_notice_announced_and_skips_a_broken_log(redis_client):
    store = RedisEventStore(redis_client)
    tables = Tables(store)
    for table_id in ("a", "b", "c"):
        _table(tables, table_id)
    unloadable(redis_client, "b")  # its last event is of no type the rules know
    counts = EventCounts(redis_client)
    follower = Follower(store, [counts])
    assert follower.sweep() == 4 + 4  # b's batch holds the broken event: b stays where it was
    assert counts.applied("default", "b") == {}
    assert counts.applied("default", "a") == {v: 1 for v in range(1, 5)}
    assert counts.applied("default", "c") == {v: 1 for v in range(1, 5)}
    assert follower.sweep() == 0  # nothing twice (b is tried again, and fails again)
    assert counts.applied("default", "c") == {v: 1 for v in range(1, 5)}


class SweptOnce(Follower):
    """A follower that says when its first sweep (the one after it subscribes) is over."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.swept = threading.Event()

    def sweep(self) -> int:
        applied = super().sweep()
        self.swept.set()
        return applied


def test_a_running_follower_applies_appends_as_they_happen(redis_client):
    store = RedisEventStore(redis_client)
    tables = Tables(store)
    counts = EventCounts(redis_client)
    follower = SweptOnce(store, [counts], sweep_s=3600.0)  # notices only, after that sweep
    stop = threading.Event()
    thread = threading.Thread(target=follower.run, args=(redis_client, store.notices, stop))
    thread.start()
    try:
        assert follower.swept.wait(10)  # subscribed, then swept: what follows is noticed
        _table(tables, "live")
        deadline = time.monotonic() + 10
        while counts.applied("default", "live") != {v: 1 for v in range(1, 5)}:
            assert time.monotonic() < deadline, counts.applied("default", "live")
            time.sleep(0.01)
    finally:
        stop.set()
        thread.join()


class FailsOnce(EventCounts):
    """A projection with a bug that shows once, outside any one table's projecting (which
    is logged and skipped per table): its first look at its positions raises."""

    failed = False

    def positions(self, tables: Sequence[tuple[str, str]]) -> list[int]:
        if not self.failed:
            self.failed = True
            raise NameError("a bug in a projection")
        return super().positions(tables)


def test_a_projection_that_raises_does_not_stop_its_follower(redis_client):
    store = RedisEventStore(redis_client)
    tables = Tables(store)
    counts = FailsOnce(redis_client)
    follower = Follower(store, [counts], sweep_s=3600.0)
    _table(tables, "live")  # (the first sweep finds it)
    stop = threading.Event()
    thread = threading.Thread(target=follower.run, args=(redis_client, store.notices, stop))
    thread.start()
    try:
        deadline = time.monotonic() + 15
        while counts.applied("default", "live") != {v: 1 for v in range(1, 5)}:
            assert thread.is_alive() and time.monotonic() < deadline, counts.applied(
                "default", "live"
            )
            time.sleep(0.01)
        assert counts.failed
    finally:
        stop.set()
        thread.join()


def test_an_event_edited_in_redis_is_not_applied_and_quarantines_its_table(redis_client):
    """The follower checks the events it reads against the hash chain (from the event at its
    position, read with them): a table whose next event was edited is quarantined with
    nothing of it applied, and the other tables are followed all the same."""
    from service.eventlog.due_index import DueIndex
    from tests.tampering import rewrite_log

    store = RedisEventStore(redis_client)
    tables = Tables(store)
    for table_id in ("a", "b"):
        _table(tables, table_id, players=2)
    counts = EventCounts(redis_client)
    index = DueIndex(redis_client)
    follower = Follower(store, [counts], batch=1, index=index)
    assert follower.catch_up("b", 2) == 2

    def edit(records):
        records[2]["data"]["buy_in"] = 1_000_000  # seat 1's buy-in, the chain left as it was
        return records

    rewrite_log(redis_client, "b", edit, rechain=False)
    assert follower.sweep() == 3  # a's three events; none of b's
    assert counts.applied("default", "b") == {1: 1, 2: 1}
    assert counts.applied("default", "a") == {1: 1, 2: 1, 3: 1}
    assert list(index.quarantined()) == ["b"]
    assert follower.sweep() == 0  # b is left alone while quarantined


def test_a_tenants_positions_key_of_another_type_holds_that_projection_and_no_table(
    redis_client, caplog
):
    """A projection's positions hash for one tenant replaced by another type (a value written
    outside the service) says nothing of any table's log: that projection is held for that
    tenant (logged, once a minute at most), and every table plays on, unquarantined; the
    other projections, and the same projection for other tenants, keep up."""
    from service.eventlog.due_index import DueIndex
    from service.projections.ledger import LedgerStore
    from service.projections.webhooks import WebhookStore

    store = RedisEventStore(redis_client)
    tables = Tables(store)
    _table(tables, "a", players=2)
    _table(tables, "b", players=2)
    _table(tables, "other", players=2, tenant="casino-b")
    ledger, hooks = LedgerStore(redis_client), WebhookStore(redis_client)
    index = DueIndex(redis_client)
    follower = Follower(store, [ledger, hooks], index=index)
    follower.sweep()
    held = "guts:{%hooks:default}:positions"
    redis_client.delete(held)
    redis_client.set(held, "not a hash")
    for table_id in ("a", "b", "other"):
        tables.execute(table_id, SeatPlayer("late", 50))
    with caplog.at_level("ERROR", logger="guts.follow"):
        follower.sweep()
        follower.sweep()
        assert follower.catch_up("a") == 0  # (the ledger is there; the webhooks held)
    assert list(index.quarantined()) == []
    keys = [("default", "a"), ("default", "b"), ("casino-b", "other")]
    assert ledger.positions(keys) == [4, 4, 4]
    assert hooks.positions([("casino-b", "other")]) == [4]
    assert redis_client.get(held) == b"not a hash"  # (left for an operator to repair)
    said = [r.getMessage() for r in caplog.records if "positions" in r.getMessage()]
    assert len(said) == 1 and "webhooks" in said[0] and "default" in said[0], said
    assert tables.load("a").version == 4
