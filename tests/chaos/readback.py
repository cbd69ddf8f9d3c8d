"""Reading everything back at the end of a chaos run, once the faults have stopped and the
system has settled: each table's log from the cluster (its stream) and from PostgreSQL (the
archive), once the archive has caught up; its ledger's pages and an audit through the API; the
webhooks received, once every one due has arrived (or a deadline passed)."""

from __future__ import annotations

import functools
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import orjson
import psycopg
import requests
from redis.cluster import RedisCluster

from service.eventlog.redis_store import table_key_tag
from tests.chaos import checker
from tests.chaos.receiver import Receiver
from tests.chaos.topology import AUDITOR_KEY, OPERATOR_KEY, Topology
from tests.chaos.workload import History
from tests.waiting import holds_within

WAIT_S = 90.0
EVERY_S = 0.5  # (each look is a request through the API, or a query of the archive)


def _redis_log(client: RedisCluster, table: str) -> dict[int, bytes]:
    entries = client.xrange(f"guts:{{{table_key_tag(table)}}}:events".encode(), "-", "+")
    return {int(entry_id.split(b"-")[0]): fields[b"data"] for entry_id, fields in entries}


def _redis_version(client: RedisCluster, table: str) -> int:
    raw = client.hget(f"guts:{{{table_key_tag(table)}}}:meta".encode(), "version")
    return int(raw or 0)


def _archive(url: str, table: str) -> dict[int, bytes]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT version, data FROM archive_events WHERE table_id = %s ORDER BY version",
            (table,),
        ).fetchall()
    return {int(v): bytes(d) for v, d in rows}


def _api(topology: Topology, method: str, path: str, key: str = OPERATOR_KEY) -> Any:
    node = topology.api[0]
    last = ""
    started = time.monotonic()
    while time.monotonic() < started + WAIT_S:  # (a node restarted by a fault may take a while)
        try:
            response = requests.request(
                method, node.base + path, headers={"Authorization": f"Bearer {key}"}, timeout=30
            )
            if response.status_code < 500:
                if last:  # (shown with a failed run's output)
                    waited = time.monotonic() - started
                    print(f"read-back: {method} {path} answered after {waited:.1f} s ({last})")
                return response.json()
            last = f"{response.status_code} {response.text[:500]}"
        except requests.RequestException as error:
            last = repr(error)
        time.sleep(1)
    # (what it last answered, and the end of the node's log: a CI run keeps nothing else)
    raise RuntimeError(
        f"{method} {path} never answered in {WAIT_S:g} s; last: {last}\n"
        f"{node.name}'s log ends:\n{node.log.read_text(errors='replace')[-4000:]}"
    )


def _archived(url: str, table: str, version: int) -> bool:
    """Whether the archive holds `table` up to `version`."""
    return max(_archive(url, table), default=0) >= version


def _ledger(topology: Topology, table: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    after = ""
    while True:
        query = f"/v1/ledger?table_id={table}&limit=500" + (f"&after={after}" if after else "")
        page = _api(topology, "GET", query)
        if not page.get("entries"):
            return entries
        entries += page["entries"]
        after = page["next_after"]


def _audit(topology: Topology, table: str) -> dict[str, Any] | None:
    started = _api(topology, "POST", f"/v1/tables/{table}/audit", AUDITOR_KEY)
    audit_id = started.get("audit_id")
    if audit_id is None:
        return {"ok": False, "refused": started}
    found: dict[str, Any] = {}

    def finished() -> bool:
        found.update(_api(topology, "GET", f"/v1/audits/{audit_id}", AUDITOR_KEY))
        return found.get("status") == "finished"

    return found.get("result") if holds_within(finished, WAIT_S, every_s=EVERY_S) else None


def read_back(
    topology: Topology, history: History, receiver: Receiver, tables: list[str]
) -> checker.Observed:
    """Everything the checker needs, read once the system has settled."""
    topology.cluster.wait_settled(WAIT_S)
    client = RedisCluster.from_url(topology.cluster.url)
    observed = checker.Observed(records=list(history.records), redis={}, archive={})
    try:
        for table in tables:
            version = _redis_version(client, table)
            archived = functools.partial(_archived, topology.database_url, table, version)
            if not holds_within(archived, WAIT_S, every_s=EVERY_S):
                observed.behind[table] = f"the archive did not reach version {version}"
            observed.redis[table] = _redis_log(client, table)
            observed.archive[table] = _archive(topology.database_url, table)
    finally:
        client.close()
    for table in tables:
        observed.ledgers[table] = _ledger(topology, table)
        observed.audits[table] = _audit(topology, table)

    def undelivered() -> int:
        observed.webhooks = receiver.snapshot()
        missing = checker.webhooks(observed, tables)
        return sum(1 for _, detail in missing if "not delivered" in detail)

    started = time.monotonic()
    if _drained(undelivered):
        observed.drained_s = time.monotonic() - started
    else:
        observed.undelivered = _undelivered(topology, observed, tables)
    return observed


DRAIN_S, STALLED_S = 600.0, 60.0
"""How long the webhooks due are waited for at most (the queue draining), and how long without
one more of them delivered before they are judged."""


def _drained(undelivered: Callable[[], int]) -> bool:
    """Whether `undelivered()` reached 0: polled each second while it goes down, for at most
    DRAIN_S, or until it has not gone down for STALLED_S."""
    deadline = time.monotonic() + DRAIN_S
    fewest, since = undelivered(), time.monotonic()
    while fewest:
        now = time.monotonic()
        if now > deadline or now - since > STALLED_S:
            return False
        time.sleep(1.0)
        left = undelivered()
        if left < fewest:
            fewest, since = left, time.monotonic()
    return True


def _undelivered(
    topology: Topology, observed: checker.Observed, tables: list[str]
) -> dict[str, int]:
    """What the webhook store holds of each webhook not delivered, counted by kind: no
    delivery derived (and whether the projection's position is past the event), or the
    delivery's status and attempts (why the run did not see it)."""
    missing = [
        d.split(" ")[0] for k, d in checker.webhooks(observed, tables) if "not delivered" in d
    ]
    client = RedisCluster.from_url(topology.cluster.url)
    states: Counter[str] = Counter()
    try:
        records: dict[tuple[str, int], list[dict[str, Any]]] = {}
        positions: dict[str, int] = {}
        for tenant in client.smembers("guts:{%hooks}:tenants"):
            tag = f"guts:{{%hooks:{tenant.decode()}}}"
            for table, position in client.hgetall(f"{tag}:positions").items():
                positions[table.decode()] = int(position)
            for raw in client.hgetall(f"{tag}:deliveries").values():
                record = orjson.loads(raw)
                records.setdefault((record["table_id"], record["version"]), []).append(record)
        for where in missing:
            table, version = where.rsplit("@", 1)
            found = records.get((table, int(version)), [])
            if not found:
                past = positions.get(table, 0) >= int(version)
                states["no delivery, position " + ("past it" if past else "before it")] += 1
            for record in found:
                last = f"last {record['last_status']} {record['last_error']}"[:80]
                states[f"{record['status']}, {record['attempts']} attempts, {last}"] += 1
    finally:
        client.close()
    return dict(states)
