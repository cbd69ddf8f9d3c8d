"""A real `guts dispatch` process keeps the ledger; killed with -9 while projecting, the one
that replaces it finishes the work and every entry is there exactly once. Of two dispatchers
one follows (it holds the lease), and the other takes over when it is killed."""

from __future__ import annotations

import signal
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from service.eventlog.codec import decode_event
from service.eventlog.redis_store import RedisEventStore
from service.projections.ledger import LedgerStore
from service.rules import ledger
from tests.apiclient import Api
from tests.waiting import eventually
from tests.workers.test_worker_processes import Start, start  # noqa: F401 - fixture


def _play(api: Api, hands: int) -> str:
    table = api.table("three-card", ante_rule="every_hand")
    tokens = [api.seat(table, f"p{i}")["token"] for i in range(3)]
    for _ in range(hands):
        assert api.post(f"/v1/tables/{table}/deal").status_code == 201
        for token in tokens:
            api.post(f"/v1/tables/{table}/declare", {"decision": "in"}, token=token)
        assert api.post(f"/v1/tables/{table}/resolve").status_code == 200
    return table


def _derived(store: RedisEventStore, table: str) -> list[dict[str, Any]]:
    read = [(s.version, decode_event(s.data)) for s in store.read(table, 0, 10_000)]
    return [asdict(e) for e in ledger.fold(read)[1]]


def _renewed(client: Any, lease: bytes, times: int, holder: bytes, within_s: float = 20) -> bool:
    """Whether `holder` renewed `lease` `times` times (its time to live went up) within
    `within_s`, holding it throughout."""
    deadline = time.monotonic() + within_s
    renewals, last = 0, client.pttl(lease)
    while renewals < times:
        if time.monotonic() > deadline or client.get(lease) != holder:
            return False
        now = client.pttl(lease)
        renewals, last = renewals + (now > last), now
        time.sleep(0.02)
    return True


def test_a_dispatcher_killed_with_minus_9_mid_projection_leaves_every_entry_once(
    api: Api,
    redis_client,
    redis_url: str,
    start: Start,  # noqa: F811
):
    first = start("dispatch", redis_url)
    tables = [_play(api, hands=3) for _ in range(12)]
    first.send_signal(signal.SIGKILL)  # wherever its follower was
    first.wait()
    tables += [_play(api, hands=2) for _ in range(4)]  # appended while no follower runs
    start("dispatch", redis_url)
    store = RedisEventStore(redis_client)
    projection = LedgerStore(redis_client)
    versions = [store.load(t).version for t in tables]
    keys = [("default", t) for t in tables]
    eventually(lambda: projection.positions(keys) == versions, 20, "every table projected")
    for table in tables:
        stored = projection.table_entries("default", table)[1]
        assert stored == _derived(store, table)
        assert len({e["tx_id"] for e in stored}) == len(stored)


def test_of_two_dispatchers_one_follows_and_the_other_takes_over_when_it_is_killed(
    api: Api,
    redis_client,
    redis_url: str,
    start: Start,  # noqa: F811
    tmp_path: Path,
):
    lease = b"guts:{%lease}:followers"
    first = start("dispatch", redis_url)
    eventually(lambda: redis_client.exists(lease), 20, "the lease taken")
    holder = redis_client.get(lease)
    start("dispatch", redis_url)
    second_log = tmp_path / "dispatch-1.log"
    eventually(lambda: b"dispatcher started" in second_log.read_bytes(), 20, "the second started")
    store = RedisEventStore(redis_client)
    projection = LedgerStore(redis_client)

    def caught_up(tables: list[str]) -> bool:
        versions = [store.load(t).version for t in tables]
        return projection.positions([("default", t) for t in tables]) == versions

    tables = [_play(api, hands=2)]
    eventually(lambda: caught_up(tables), 20, "the ledger caught up")
    # The first renews the lease every 0.4 s, as often as the second looks at it: three
    # renewals since the second started, and the second has looked at least twice.
    assert _renewed(redis_client, lease, times=3, holder=holder)
    assert redis_client.get(lease) == holder  # the first still follows alone
    first.send_signal(signal.SIGKILL)
    first.wait()
    tables.append(_play(api, hands=2))
    eventually(
        lambda: caught_up(tables), 20, "the ledger caught up by the second (the lease expired)"
    )
    assert redis_client.get(lease) not in (None, holder)
    for table in tables:
        stored = projection.table_entries("default", table)[1]
        assert stored == _derived(store, table)
