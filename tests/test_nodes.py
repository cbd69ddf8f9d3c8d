"""Two API nodes: two `guts serve` processes (nothing shared between them but the servers)
on one Redis and one PostgreSQL, under concurrent load on the same tables from clients that
send each command to either node. No update is lost (every command answered with success is
in the log exactly once, and no refused one is), chips are conserved, both nodes' archivers
archive every event exactly once, and every table's audit (run by either node's worker) is
ok."""

from __future__ import annotations

import itertools
import random
import secrets
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg
import pytest
import redis
import requests

from tests.test_cli import AUDITOR_KEY, OPERATOR_KEY, Served, _env
from tests.waiting import eventually

TABLES, PLAYERS, BUY_IN, CLIENTS, COMMANDS = 4, 3, 1000, 8, 60


@pytest.fixture
def two_nodes(tmp_path: Path, redis_url: str, redis_client: redis.Redis, clean_archive: str) -> Any:
    env = _env(
        REDIS_URL=redis_url,
        GUTS_DATABASE_URL=clean_archive,
        GUTS_AUDITOR_KEYS=AUDITOR_KEY,
        GUTS_WEB_WORKERS="2",
        # (the load sends one token's commands faster than the default limit of 10 a second;
        # the limits across nodes are tested in tests/api/test_rate_limits.py)
        GUTS_RATE_LIMIT_COMMANDS="",
    )
    nodes = [Served(tmp_path / f"node{n}", tmp_path, env) for n in range(2)]
    try:
        for node in nodes:
            node.wait_healthy()
        yield nodes
    finally:
        for node in nodes:
            node.kill()


def _call(node: Served, method: str, path: str, body: Any = None, key: str = OPERATOR_KEY) -> Any:
    headers = {"Authorization": f"Bearer {key}", "Idempotency-Key": secrets.token_hex(12)}
    return requests.request(method, node.base + path, json=body, headers=headers, timeout=30)


def test_two_nodes_lose_no_update_conserve_chips_and_audit_ok(
    two_nodes: list[Served], clean_archive: str
) -> None:
    a, b = two_nodes
    tables = set_up(two_nodes, TABLES)
    load = Load(tables)
    with ThreadPoolExecutor(CLIENTS) as pool:
        list(pool.map(lambda seed: load.client(two_nodes, seed, COMMANDS), range(CLIENTS)))
    ok, chips_added, refused = load.ok, load.chips_added, load.refused
    assert set(refused) <= {409}, refused  # only the game's refusals (wrong phase, declared)
    assert sum(n for (_, command), n in ok.items() if command == "declare") > 0

    for table in tables:
        log = _call(a, "GET", f"/v1/tables/{table}/events?limit=1000").json()
        events = log["events"]
        assert [e["version"] for e in events] == list(range(1, len(events) + 1))
        types = Counter(e["type"] for e in events)
        by_players = sum(
            1 for e in events if e["type"] == "decision_made" and e["data"]["by"] == "player"
        )
        assert types["hand_dealt"] == ok[(table, "deal")]
        assert by_players == ok[(table, "declare")]
        assert types["hand_resolved"] + types["hand_voided"] == ok[(table, "resolve")]
        assert types["chips_added"] == ok[(table, "chips")]
        view = _call(b, "GET", f"/v1/tables/{table}").json()
        pools = view["pot"] + view["low_pot"] + view["reserve"] + view["side_pot"]
        stacks = sum(seat["stack"] for seat in view["seats"])
        assert stacks + pools == PLAYERS * BUY_IN + chips_added[table]

    versions = {t: _call(a, "GET", f"/v1/tables/{t}").json()["version"] for t in tables}
    eventually(
        lambda: _archived(clean_archive) == versions, 30, "every table archived", every_s=0.1
    )
    for table, node in zip(tables, itertools.cycle(two_nodes), strict=False):
        started = _call(node, "POST", f"/v1/tables/{table}/audit", key=AUDITOR_KEY)
        assert started.status_code == 202, started.text
        other = b if node is a else a
        path = f"/v1/audits/{started.json()['audit_id']}"
        done = eventually(
            lambda p=path, o=other: (
                (r := _call(o, "GET", p, key=AUDITOR_KEY).json())["status"] == "finished" and r
            ),
            30,
            f"the audit of {table} finished",
            every_s=0.1,
        )
        assert done["result"]["ok"], done["result"]
        assert done["result"]["events_checked"] == versions[table]


def set_up(nodes: list[Served], count: int) -> dict[str, list[str]]:
    """`count` tables (long deadlines: only the clients act), each with `PLAYERS` seated, made
    through the nodes in turn; table id -> the players' tokens."""
    tables: dict[str, list[str]] = {}
    for n in range(count):
        rules = {"preset": "three-card", "decision_timeout_s": 300}
        created = _call(nodes[n % len(nodes)], "POST", "/v1/tables", rules)
        assert created.status_code == 201, created.text
        table = created.json()["table_id"]
        tokens = []
        for seat in range(PLAYERS):
            body = {"player_id": f"p{seat}", "buy_in": BUY_IN}
            node = nodes[seat % len(nodes)]
            seated = _call(node, "POST", f"/v1/tables/{table}/players", body)
            assert seated.status_code == 201, seated.text
            tokens.append(seated.json()["token"])
        tables[table] = tokens
    return tables


class Load:
    """Clients sending random commands (deal, declare, resolve, chips) for random tables to
    random nodes, each with its own Idempotency-Key; what was answered with success."""

    def __init__(self, tables: dict[str, list[str]]) -> None:
        self.tables = tables
        self.ok: Counter[tuple[str, str]] = Counter()  # (table, command) -> successes
        self.chips_added: Counter[str] = Counter()
        self.refused: Counter[int] = Counter()
        self.latencies: list[float] = []
        self._lock = threading.Lock()

    def client(self, nodes: list[Served], seed: int, commands: int) -> None:
        pick = random.Random(seed)
        tables = self.tables
        for _ in range(commands):
            table = pick.choice(list(tables))
            node = pick.choice(nodes)
            command = pick.choice(["deal", "declare", "declare", "declare", "resolve", "chips"])
            seat = pick.randrange(PLAYERS)
            started = time.perf_counter()
            if command == "deal":
                answer = _call(node, "POST", f"/v1/tables/{table}/deal", {})
            elif command == "declare":
                body = {"decision": pick.choice(["in", "out"])}
                answer = _call(
                    node, "POST", f"/v1/tables/{table}/declare", body, key=tables[table][seat]
                )
            elif command == "resolve":
                answer = _call(node, "POST", f"/v1/tables/{table}/resolve", {})
            else:
                answer = _call(
                    node, "POST", f"/v1/tables/{table}/players/{seat}/chips", {"amount": 5}
                )
            took = time.perf_counter() - started
            assert answer.status_code < 500, answer.text
            with self._lock:
                self.latencies.append(took)
                if answer.status_code < 300:
                    self.ok[(table, command)] += 1
                    if command == "chips":
                        self.chips_added[table] += 5
                else:
                    self.refused[answer.status_code] += 1


def _archived(url: str) -> dict[str, int]:
    """Each archived table's event count, checked to be its position (no gap, no twice)."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT t.table_id, t.version, count(e.version), max(e.version)"
            " FROM archive_tables t JOIN archive_events e USING (table_id)"
            " GROUP BY t.table_id, t.version"
        ).fetchall()
    for table_id, position, count, highest in rows:
        assert count == position == highest, (table_id, position, count, highest)
    return {table_id: position for table_id, position, _, _ in rows}
