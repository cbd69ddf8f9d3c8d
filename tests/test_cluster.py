"""On a real 3-master Redis Cluster: every script touches one hash tag, so a table's commands,
its due index and list records, and the projections (ledger, webhooks) all work through
redis-py's cluster client (the event store's contract suite runs there too:
tests/eventlog/conftest.py)."""

from __future__ import annotations

from service.eventlog.due_index import DueIndex
from service.eventlog.redis_store import RedisEventStore
from service.eventlog.table_list import TableList
from service.follow import Follower
from service.ledger_store import LedgerStore
from service.rules import commands
from service.rules.ruleset import resolve_ruleset
from service.tables import Tables
from service.webhooks import WebhookStore


def _ok(state, events):
    return 200, {"version": state.version}


def test_tables_indexes_and_projections_run_on_a_cluster(cluster_client):
    store = RedisEventStore(cluster_client, bypass_redis_py=False)
    listing = TableList(cluster_client)
    tables = Tables(store, index=DueIndex(cluster_client), listing=listing)
    rules = resolve_ruleset("three-card")
    hooks = WebhookStore(cluster_client)
    hook = hooks.register("casino-a", "http://127.0.0.1:9/h", ["player_seated", "hand_finished"])
    ids = [f"table-{n}" for n in range(6)]  # spread over the masters' slots
    for table_id in ids:
        tables.execute(
            table_id,
            lambda s, n, t=table_id: commands.create_table(t, rules, n, b"s" * 32, "casino-a"),
            _ok,
            create=True,
        )
        for i in range(3):
            tables.execute(table_id, lambda s, n, i=i: commands.seat_player(s, f"p{i}", 50, n), _ok)
        tables.execute(table_id, lambda s, n: commands.deal(s, b"d" * 32, n), _ok)
        tables.execute(table_id, lambda s, n: commands.void_hand(s, "test", n), _ok)
    assert sorted(store.table_ids()) == sorted(ids)
    page, _ = listing.page(None, 10, "casino-a")
    assert sorted(page) == sorted(ids)
    ledger = LedgerStore(cluster_client)
    follower = Follower(store, [ledger, hooks])
    assert follower.sweep() == 2 * 6 * 6  # six events a table, two projections
    entries, _ = ledger.page("casino-a", None, 1000)
    assert len(entries) == 6 * (3 + 3)  # buy-ins and antes
    delivered, _ = hooks.deliveries("casino-a", hook["webhook_id"], 0, 1000)
    assert len(delivered) == 6 * 3  # three seatings a table
    assert follower.sweep() == 0
