"""The ledger projection writes every entry exactly once: followers racing on one table, a
crash between reading the book and writing the entries, a catch-up run again; and what it
stores is what the rules' ledger derives from the log."""

from __future__ import annotations

import threading
from dataclasses import asdict
from typing import Any

from service.eventlog.codec import decode_event
from service.eventlog.redis_store import RedisEventStore
from service.projections.follower import Followed, Follower
from service.projections.ledger import LedgerStore
from service.rules import ledger
from service.rules.decide import CreateTable, Deal, Declare, Leave, Resolve, SeatPlayer, TopUp
from service.rules.ruleset import resolve_ruleset
from service.tables import Tables


def _played(tables: Tables, table_id: str, hands: int = 3, tenant: str = "default") -> None:
    """A table with three players and `hands` hands in which everyone is in."""
    rules = resolve_ruleset("three-card", {"ante_rule": "every_hand"})
    run = tables.execute
    run(
        table_id,
        CreateTable(table_id, rules, b"s" * 32, tenant),
        create=True,
    )
    for i in range(3):
        run(table_id, SeatPlayer(f"p{i}", 50))
    for hand in range(hands):
        run(table_id, Deal(bytes([hand]) * 32))
        for seat in range(3):
            run(table_id, Declare(seat, "in"))
        run(table_id, Resolve())
    run(table_id, TopUp(1, 7))
    run(table_id, Leave(2))


def _derived(store: RedisEventStore, table_id: str) -> list[dict[str, Any]]:
    read = [(s.version, decode_event(s.data)) for s in store.read(table_id, 0, 10_000)]
    return [asdict(e) for e in ledger.fold(read)[1]]


def _stored(projection: LedgerStore, tenant: str, table_id: str) -> list[dict[str, Any]]:
    return projection.table_entries(tenant, table_id)[1]


def test_the_stored_ledger_is_the_derived_one_and_a_second_catch_up_adds_nothing(redis_client):
    store = RedisEventStore(redis_client)
    _played(Tables(store), "t1", tenant="casino-a")
    projection = LedgerStore(redis_client)
    follower = Follower(store, [projection], batch=4)  # several batches
    follower.catch_up("t1")
    expected = _derived(store, "t1")
    kinds = {e["kind"] for e in expected}
    assert {"buy_in", "ante", "match", "win", "top_up", "cash_out"} <= kinds
    assert _stored(projection, "casino-a", "t1") == expected
    assert follower.catch_up("t1") == 0
    assert _stored(projection, "casino-a", "t1") == expected
    assert _stored(projection, "default", "t1") == []  # another tenant's ledger has none


def test_followers_racing_on_one_table_write_each_entry_once(redis_client):
    store = RedisEventStore(redis_client)
    _played(Tables(store), "t1")
    projection = LedgerStore(redis_client)
    followers = [Follower(RedisEventStore(redis_client), [projection], batch=1) for _ in range(6)]
    barrier = threading.Barrier(len(followers))

    def follow(follower: Follower) -> None:
        barrier.wait()
        follower.catch_up("t1")

    threads = [threading.Thread(target=follow, args=(f,)) for f in followers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stored = _stored(projection, "default", "t1")
    assert stored == _derived(store, "t1")
    assert len({e["tx_id"] for e in stored}) == len(stored)


class Crashing(LedgerStore):
    """A projection whose process dies after reading the book and folding the events, before
    its script writes anything (`crashes` times)."""

    def __init__(self, client: Any, crashes: int) -> None:
        super().__init__(client)
        self.crashes = crashes

    def apply(self, followed: Followed) -> bool:
        if self.crashes:
            self.crashes -= 1
            ledger.fold(followed.events)  # the work, lost with the process
            raise SystemExit("killed between read and write")
        return super().apply(followed)


def test_a_crash_between_read_and_write_loses_nothing_and_repeats_nothing(redis_client):
    store = RedisEventStore(redis_client)
    _played(Tables(store), "t1")
    healthy = LedgerStore(redis_client)
    Follower(store, [healthy], batch=5).catch_up("t1", upto=10)  # part of the log, then...
    crashing = Crashing(redis_client, crashes=2)
    for _ in range(2):  # ... two followers die in the middle of their next batch
        try:
            Follower(store, [crashing], batch=5).catch_up("t1")
        except SystemExit:
            pass
    assert healthy.positions([("default", "t1")]) == [10]
    Follower(store, [LedgerStore(redis_client)], batch=5).catch_up("t1")  # a new follower
    stored = _stored(healthy, "default", "t1")
    assert stored == _derived(store, "t1")
    assert len({e["tx_id"] for e in stored}) == len(stored)


def test_the_dispatchers_follower_keeps_the_ledger(redis_client):
    """The follower the dispatcher runs (workers.dispatcher.build_follower) projects the
    ledger as tables are played, without anyone asking for a page."""
    from service.config import Settings
    from workers.dispatcher import build_follower

    store = RedisEventStore(redis_client)
    follower, notices = build_follower(Settings(key_prefix="guts"), redis_client)
    stop = threading.Event()
    thread = threading.Thread(target=follower.run, args=(redis_client, notices, stop))
    thread.start()
    try:
        _played(Tables(store), "live", hands=2)
        version = store.load("live").version
        projection = LedgerStore(redis_client)
        event = threading.Event()
        for _ in range(1000):  # until the follower has applied the last event (at most 10 s)
            if projection.positions([("default", "live")]) == [version]:
                break
            event.wait(0.01)
        assert projection.positions([("default", "live")]) == [version]
        assert _stored(projection, "default", "live") == _derived(store, "live")
    finally:
        stop.set()
        thread.join()


def test_redis_going_away_is_the_store_unavailable_not_an_error():
    """(A 503 with Retry-After at the API, a wait in the follower, as for the event store.)"""
    import pytest
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    from service.eventlog.store import StoreUnavailable

    # Nothing listens there; no retries (redis-py's client made without a pool retries 10
    # times, backing off: 17 s of this test's 17.5, for nothing it checks).
    gone = redis.Redis(port=1, socket_connect_timeout=0.2, retry=Retry(NoBackoff(), 0))
    projection = LedgerStore(gone)
    for read in (
        lambda: projection.page("default", None, 10),
        lambda: projection.limits("default", ["alice"]),
        lambda: projection.net_loss("default", "alice", 0),
        lambda: projection.positions([("default", "t1")]),
    ):
        with pytest.raises(StoreUnavailable):
            read()


def test_a_cool_down_keeps_the_later_end(redis_client: Any):
    store = LedgerStore(redis_client)
    assert store.cool_down_until("default", "p0") is None
    store.cool_down("default", "p0", "2026-05-02T10:00:00.000Z")
    store.cool_down("default", "p0", "2026-05-02T09:00:00.000Z")  # earlier: ignored
    assert store.cool_down_until("default", "p0") == "2026-05-02T10:00:00.000Z"
    store.cool_down("default", "p0", "2026-05-03T10:00:00.000Z")
    assert store.cool_down_until("default", "p0") == "2026-05-03T10:00:00.000Z"
    assert store.cool_down_until("other", "p0") is None  # per tenant


def _table_entries(api: Any, table: str) -> list[dict[str, Any]]:
    """Every entry of `table`'s ledger (its page catches the table up)."""
    answer = api.get("/v1/ledger", params={"table_id": table, "limit": 100})
    assert answer.status_code == 200, answer.text
    return list(answer.json()["entries"])


def test_an_unreadable_entry_of_the_redis_ledger_is_a_409_naming_it(
    plain_api: Any, redis_client: Any
):
    """The Redis ledger (a service without PostgreSQL): an entry that does not decode (written
    outside the service) refuses the pages that hold it with 409 problem+json naming the
    entry and the tenant, never a 500; the pages without it are served. So too a key of the
    ledger holding another type (a 409 for the pages that read it)."""
    api = plain_api
    table = api.table("three-card")
    for player in ("alice", "bob"):
        api.seat(table, player, buy_in=50)
    assert len(_table_entries(api, table)) == 2  # (a table's page catches it up)
    entry = redis_client.hget("guts:{%ledger:default}:entries", 1)
    for garbage in (b"{not json", b"[1, 2]", b'{"kind": "buy_in"}'):
        redis_client.hset("guts:{%ledger:default}:entries", 1, garbage)
        _refused(api, table)
    served = api.get("/v1/ledger", params={"player_id": "bob"})
    assert served.status_code == 200 and len(served.json()["entries"]) == 1, served.text
    redis_client.hset("guts:{%ledger:default}:entries", 1, entry)
    reads = {
        "entries": {},
        f"table:{table}": {"table_id": table},
        "player:alice": {"player_id": "alice"},
    }
    for key, query in reads.items():  # a key of another type, and a page that reads it
        key = f"guts:{{%ledger:default}}:{key}"
        kept = redis_client.dump(key)
        redis_client.delete(key)
        redis_client.set(key, "x")
        refused = api.get("/v1/ledger", params=query)
        assert refused.status_code == 409, (key, refused.text)
        assert refused.json()["title"] == "Record Failed Verification", refused.text
        redis_client.delete(key)
        redis_client.restore(key, 0, kept)
    assert len(_table_entries(api, table)) == 2


def _refused(api: Any, table: str) -> None:
    for query in ({"table_id": table}, {"player_id": "alice"}, {}):
        refused = api.get("/v1/ledger", params=query)
        assert refused.status_code == 409, (query, refused.text)
        assert refused.headers["Content-Type"] == "application/problem+json"
        problem = refused.json()
        assert problem["title"] == "Record Failed Verification", problem
        assert "ledger entry 1" in problem["detail"] and "default" in problem["detail"], problem
