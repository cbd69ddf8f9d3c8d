"""On a real 3-master Redis Cluster: every script touches one hash tag, so a table's commands,
its due index and list records, and the projections (ledger, webhooks) all work through
redis-py's cluster client (the event store's contract suite runs there too:
tests/eventlog/conftest.py); the event store's shortcut (each hot command straight to its
slot's master) follows a table whose slot moves to another master."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from service.eventlog.due_index import DueIndex
from service.eventlog.redis_store import RedisEventStore
from service.eventlog.table_list import TableList
from service.projections.follower import Follower
from service.projections.ledger import LedgerStore
from service.projections.webhooks import WebhookStore
from service.rules.decide import CreateTable, Deal, SeatPlayer, VoidHand
from service.rules.ruleset import resolve_ruleset
from service.tables import Tables


def test_tables_indexes_and_projections_run_on_a_cluster(cluster_client):
    store = RedisEventStore(cluster_client, bypass_redis_py=False)
    listing = TableList(cluster_client)
    tables = Tables(store, index=DueIndex(cluster_client), listing=listing)
    rules = resolve_ruleset("three-card")
    hooks = WebhookStore(cluster_client, private_ok=True)  # (its receiver: on 127.0.0.1)
    hook = hooks.register("casino-a", "http://127.0.0.1:9/h", ["player_seated", "hand_finished"])
    ids = [f"table-{n}" for n in range(6)]  # spread over the masters' slots
    for table_id in ids:
        tables.execute(
            table_id,
            CreateTable(table_id, rules, b"s" * 32, "casino-a"),
            create=True,
        )
        for i in range(3):
            tables.execute(table_id, SeatPlayer(f"p{i}", 50))
        tables.execute(table_id, Deal(b"d" * 32))
        tables.execute(table_id, VoidHand("test"))
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


def _move_slot(cluster_client, slot: int, target) -> None:
    """Move `slot` to the master `target` as `redis-cli --cluster reshard` does: IMPORTING
    and MIGRATING, its keys MIGRATEd, then the slot given to `target` on every master."""
    source = cluster_client.nodes_manager.slots_cache[slot][0]
    if source.name == target.name:
        return
    src = cluster_client.get_redis_connection(source)
    dst = cluster_client.get_redis_connection(target)
    src_id, dst_id = src.execute_command("CLUSTER MYID"), dst.execute_command("CLUSTER MYID")
    dst.execute_command("CLUSTER SETSLOT", slot, "IMPORTING", src_id)
    src.execute_command("CLUSTER SETSLOT", slot, "MIGRATING", dst_id)
    while keys := src.execute_command("CLUSTER GETKEYSINSLOT", slot, 100):
        src.execute_command("MIGRATE", target.host, target.port, "", 0, 5000, "KEYS", *keys)
    for node in cluster_client.get_primaries():
        cluster_client.get_redis_connection(node).execute_command(
            "CLUSTER SETSLOT", slot, "NODE", dst_id
        )


def _evalshas(cluster_client, node) -> int:
    """How many EVALSHAs `node` was sent, run or refused (a MOVED reply is a refusal)."""
    stats = cluster_client.get_redis_connection(node).info("commandstats")
    evalsha = stats.get("cmdstat_evalsha", {})
    return int(evalsha.get("calls", 0)) + int(evalsha.get("rejected_calls", 0))


def test_the_shortcut_follows_a_table_whose_slot_moves_to_another_master(cluster_client):
    store = RedisEventStore(cluster_client)  # with the shortcut around redis-py
    tables = Tables(store)
    rules = resolve_ruleset("three-card")
    tables.execute(
        "moving",
        CreateTable("moving", rules, b"s" * 32, "casino-a"),
        create=True,
    )
    slot = cluster_client.keyslot(store.meta_key("moving"))
    source = cluster_client.nodes_manager.slots_cache[slot][0]
    target = next(n for n in cluster_client.get_primaries() if n.name != source.name)
    try:
        _move_slot(cluster_client, slot, target)
        for i in range(3):  # the first goes to the old master, is MOVED, and sent again
            tables.execute("moving", SeatPlayer(f"p{i}", 50))
        before = _evalshas(cluster_client, source), _evalshas(cluster_client, target)
        tables.execute("moving", Deal(b"d" * 32))
        tables.execute("moving", VoidHand("test"))
        after = _evalshas(cluster_client, source), _evalshas(cluster_client, target)
        assert (after[0] - before[0], after[1] - before[1]) == (0, 2)  # straight to the new one
        assert store.load("moving").version == 6
        assert [e.version for e in store.read("moving", 0)] == [1, 2, 3, 4, 5, 6]
    finally:
        _move_slot(cluster_client, slot, source)


def test_guts_serve_on_a_cluster_with_rq_on_a_plain_redis(
    cluster_client, redis_url, database_url, tmp_path
):
    """The whole service on the cluster: `guts serve` (web workers, dispatcher, RQ worker) with
    GUTS_REDIS_CLUSTER and RQ's queues on the plain Redis; a hand played, its deadline acted on
    by the dispatcher, and an audit run by the worker reads the table from the cluster."""
    import time

    import redis

    from tests.test_cli import AUDITOR_KEY, Served, _env

    redis.Redis.from_url(redis_url).flushall()
    cluster_url = f"redis://127.0.0.1:{cluster_client.get_default_node().port}/0"
    env = _env(
        REDIS_URL=cluster_url,
        GUTS_REDIS_CLUSTER="1",
        GUTS_QUEUE_REDIS_URL=redis_url,
        GUTS_DATABASE_URL=database_url,
        GUTS_AUDITOR_KEYS=AUDITOR_KEY,
    )
    served = Served(tmp_path / "data", tmp_path, env)
    try:
        served.wait_healthy()
        rules = {"preset": "three-card", "decision_timeout_s": 1}
        created = served.call("POST", "/v1/tables", rules)
        assert created.status_code == 201, created.text
        table = created.json()["table_id"]
        for seat in range(3):
            body = {"player_id": f"p{seat}", "buy_in": 100}
            assert served.call("POST", f"/v1/tables/{table}/players", body).status_code == 201
        assert served.call("POST", f"/v1/tables/{table}/deal", {}).status_code == 201
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:  # nobody declares: the dispatcher acts at 1 s
            view = served.call("GET", f"/v1/tables/{table}").json()
            if view["hand"] is None or view["hand"]["phase"] != "declaring":
                break
            time.sleep(0.2)
        else:
            raise AssertionError(f"the deadline was not acted on:\n{served.output()}")
        started = served.call("POST", f"/v1/tables/{table}/audit", key=AUDITOR_KEY)
        assert started.status_code == 202, started.text
        path = f"/v1/audits/{started.json()['audit_id']}"
        while time.monotonic() < deadline + 15:
            audit = served.call("GET", path, key=AUDITOR_KEY).json()
            if audit["status"] == "finished":
                break
            time.sleep(0.2)
        assert audit["status"] == "finished" and audit["result"]["ok"], audit
        assert redis.Redis.from_url(redis_url).keys("guts:{*") == []  # no table on the queues'
    finally:
        served.kill()


def test_a_worker_makes_the_store_client_once_for_the_webhook_jobs_it_forks(
    cluster_client, redis_url
):
    """`guts worker` runs each webhook attempt as a job in a process of its own; it makes the
    store's cluster client before it forks them, so the jobs do not each make one (reading
    Redis's command table and the map of the slots: most of what held a worker to 3-5
    attempts a second on a loaded machine). Every delivery arrives all the same."""
    import os
    import subprocess
    import sys
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import redis
    from redis.cluster import RedisCluster

    from service.projections.follower import Followed
    from service.projections.webhooks import Schedule
    from service.rules.events import PlayerSeated

    arrived: list[str] = []

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            arrived.append(self.headers["webhook-id"])
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    queues = redis.Redis.from_url(redis_url)
    queues.flushall()
    hooks = WebhookStore(cluster_client, prefix="forked", private_ok=True)
    hooks.register("default", f"http://127.0.0.1:{server.server_port}/hook", ["player_seated"])
    at = "2026-11-26T00:00:00Z"
    seated = tuple((v, PlayerSeated(v, f"p{v}", 100, at)) for v in range(1, 7))
    hooks.apply(Followed("forked-1", "default", 0, seated))
    assert hooks.queue_due(Schedule(), queues=queues) == 6
    cluster_client.config_resetstat(target_nodes=RedisCluster.PRIMARIES)
    node = cluster_client.get_default_node()
    env = {
        **os.environ,
        "REDIS_URL": f"redis://127.0.0.1:{node.port}/0",
        "GUTS_REDIS_CLUSTER": "1",
        "GUTS_QUEUE_REDIS_URL": redis_url,
        "GUTS_LOG_LEVEL": "warning",
    }
    try:
        subprocess.run(
            [sys.executable, "-m", "service.cli", "worker", "--burst"],
            env=env,
            check=True,
            timeout=120,
        )
    finally:
        server.shutdown()
        server.server_close()
        queues.close()
    assert len(set(arrived)) == 6
    stats = cluster_client.info("commandstats", target_nodes=RedisCluster.PRIMARIES)
    made = sum(int(s.get("cmdstat_command", {}).get("calls", 0)) for s in stats.values())
    assert made == 1  # the worker's one client, not one a job


@pytest.mark.parametrize("shortcut", [False, True], ids=["redis-py", "the store's shortcut"])
def test_a_debit_is_recorded_in_the_round_trip_of_the_players_protections(
    cluster_client, shortcut: bool
):
    """A wallet-funded seat's debit rides the pipeline that reads the player's protections
    (docs/wallet.md): the ledger's keys and the wallet's are two hash tags, here on two
    masters, and redis-py's cluster pipeline sends each its part (also when the stores are
    given the event store's shortcut, which sends one connection's commands to one master);
    the debit's script is sent whole (EVAL), so a master that never saw it runs it all the
    same. A change of its record (as the wallet's projection confirms it) goes to the wallet's
    master either way."""
    from service.projections.wallet import WalletStore
    from service.projections.wallet_calls import Wallet
    from service.rules import wallet as w

    events = RedisEventStore(cluster_client)
    commands = events.commands if shortcut else None
    store = WalletStore(cluster_client, events.idempotency_key, commands=commands, private_ok=True)
    ledger, wallet = LedgerStore(cluster_client, commands=commands), Wallet(store)
    ledger_slot = cluster_client.keyslot(ledger.key("casino-a", "limits"))
    wallet_slot = cluster_client.keyslot(store.key("casino-a", "tx"))
    assert cluster_client.nodes_manager.slots_cache[ledger_slot][0].name != (
        cluster_client.nodes_manager.slots_cache[wallet_slot][0].name
    )
    store.put_settings("casino-a", "http://127.0.0.1:9/w", "EUR", 100)

    def make(n: int):
        def debit(settings: dict) -> dict:
            return w.new_debit(
                w.BUY_IN,
                datetime.now(UTC),
                transaction_id=f"d-{n}",
                player_id="ann",
                table_id="table-1",
                chips=30,
                currency=settings["currency"],
                chip_value_minor=settings["chip_value_minor"],
            )

        return debit

    assert wallet.carry_debit("casino-a", make(0)) is None  # (its settings not known yet)
    assert wallet.begin_debit("casino-a", make(0)) is not None
    carried = wallet.carry_debit("casino-a", make(1))
    assert carried is not None
    assert ledger.seating("casino-a", "ann", carried) == (None, "default", None)
    begun = wallet.begin_debit("casino-a", make(1), carried)
    assert begun is not None and begun[2] and begun[0]["transaction_id"] == "d-1"
    assert store.transaction("casino-a", "d-1") == begun[0]
    wallet.withdraw("casino-a", begun[0])
    assert store.transaction("casino-a", "d-1") is None
    carried = wallet.carry_debit("casino-a", make(2))
    ledger.seating("casino-a", "ann", carried)
    begun = wallet.begin_debit("casino-a", make(2), carried)
    assert begun is not None and begun[2]
    assert store.settle("casino-a", begun[0], {"status": w.CONFIRMED}, None) is not None
    confirmed = store.transaction("casino-a", "d-2")
    assert confirmed is not None and confirmed["status"] == w.CONFIRMED


def test_the_loss_limits_and_the_due_index_follow_their_slots_through_the_shortcut(
    cluster_client,
):
    """A request's loss-limit read and due record go the event store's way (its shortcut,
    straight to the slot's master): when the tenant's ledger slot or the index's slot moves
    to another master, the first read after the move still answers every player's limits (a
    moved slot answers only the first of two commands sent together: the read is made again
    whole, never taken for "no limit") and the due is recorded where the slot now is."""
    from service.rules.limits import Limits

    store = RedisEventStore(cluster_client)  # with the shortcut around redis-py
    ledger = LedgerStore(cluster_client, commands=store.commands)
    index = DueIndex(cluster_client, commands=store.commands)
    ledger.set_limits("casino-a", "ann", Limits(loss_limit_24h=40))
    ledger.set_profile("casino-a", "ukgc")
    assert ledger.limits("casino-a", ["ann", "bob"]) == ({"ann": Limits(40)}, "ukgc")
    assert ledger.seating("casino-a", "ann") == (Limits(40), "ukgc", None)
    assert index.record("table-1", 3, 1_000.0)
    for key in (ledger.key("casino-a", "limits"), index.index_key):
        slot = cluster_client.keyslot(key)
        source = cluster_client.nodes_manager.slots_cache[slot][0]
        target = next(n for n in cluster_client.get_primaries() if n.name != source.name)
        try:
            _move_slot(cluster_client, slot, target)
            assert ledger.limits("casino-a", ["ann", "bob"]) == ({"ann": Limits(40)}, "ukgc")
            assert ledger.limits("casino-a", []) == ({}, "ukgc")
            assert ledger.seating("casino-a", "ann") == (Limits(40), "ukgc", None)
            assert index.record("table-1", 4, 2_000.0)
            assert not index.record("table-1", 3, 500.0)  # (an older version: ignored)
            assert cluster_client.zscore(index.index_key, "table-1") == 2_000.0
        finally:
            _move_slot(cluster_client, slot, source)
        index.record("table-1", 3, 1_000.0)
