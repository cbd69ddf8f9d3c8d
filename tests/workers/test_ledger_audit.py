"""An audit reconciles the table's stored ledger with its log: a changed, missing or extra
entry is named with its tx_id and version, and so is a tampered event that moved chips."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import psycopg
import pytest
from psycopg.types.json import Jsonb

from tests.apiclient import Api
from tests.tampering import rewrite_log
from tests.workers.test_audit import _audit, _find, _played_table

PREFIX = "guts:{%ledger:default}"


def _caught_up(api: Api) -> str:
    table = _played_table(api)
    assert api.post(f"/v1/tables/{table}/players/0/chips", {"amount": 5}).status_code == 200
    assert api.get("/v1/ledger", params={"table_id": table}).status_code == 200  # caught up
    return table


def _stored(redis_client: Any, table: str) -> list[tuple[bytes, dict[str, Any]]]:
    seqs = redis_client.zrange(f"{PREFIX}:table:{table}", 0, -1)
    rows = redis_client.hmget(f"{PREFIX}:entries", seqs)
    return [(seq, orjson.loads(row)) for seq, row in zip(seqs, rows, strict=True)]


def test_a_caught_up_ledger_reconciles_with_the_log(api: Api, run_jobs):
    table = _caught_up(api)
    report = _audit(api, run_jobs, table)
    assert report["ok"], report
    version = api.get(f"/v1/tables/{table}").json()["version"]
    entries = api.get("/v1/ledger", params={"table_id": table, "limit": 1000}).json()["entries"]
    assert report["ledger"] == {"position": version, "entries": len(entries)}


# Tampering with the ledger where it is kept: in Redis (no archive), in PostgreSQL (archive).


def _change_amount(redis_client: Any, table: str) -> str:
    seq, entry = next((s, e) for s, e in _stored(redis_client, table) if e["kind"] == "match")
    redis_client.hset(f"{PREFIX}:entries", seq, orjson.dumps({**entry, "amount": 0}))
    return f"entry {entry['tx_id']} differs in amount"


def _drop(redis_client: Any, table: str) -> str:
    seq, entry = next((s, e) for s, e in _stored(redis_client, table) if e["kind"] == "win")
    redis_client.hdel(f"{PREFIX}:entries", seq)
    redis_client.zrem(f"{PREFIX}:table:{table}", seq)
    return f"entry {entry['tx_id']} is missing"


def _add(redis_client: Any, table: str) -> str:
    _, entry = next((s, e) for s, e in _stored(redis_client, table) if e["kind"] == "ante")
    forged = {**entry, "tx_id": f"{entry['tx_id']}:again"}
    redis_client.hset(f"{PREFIX}:entries", 999_999, orjson.dumps(forged))
    redis_client.zadd(f"{PREFIX}:table:{table}", {"999999": 999_999})
    return f"entry {forged['tx_id']} is extra"


def _archived(database_url: str, table: str) -> list[tuple[int, dict[str, Any]]]:
    with psycopg.connect(database_url) as conn:
        return conn.execute(
            "SELECT seq, entry FROM ledger_entries WHERE table_id = %s ORDER BY seq", (table,)
        ).fetchall()


def _change_archived_amount(database_url: str, table: str) -> str:
    seq, entry = next((s, e) for s, e in _archived(database_url, table) if e["kind"] == "match")
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "UPDATE ledger_entries SET entry = %s WHERE seq = %s",
            (Jsonb({**entry, "amount": 0}), seq),
        )
    return f"entry {entry['tx_id']} differs in amount"


def _drop_archived(database_url: str, table: str) -> str:
    seq, entry = next((s, e) for s, e in _archived(database_url, table) if e["kind"] == "win")
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("DELETE FROM ledger_entries WHERE seq = %s", (seq,))
    return f"entry {entry['tx_id']} is missing"


def _add_archived(database_url: str, table: str) -> str:
    _, entry = next((s, e) for s, e in _archived(database_url, table) if e["kind"] == "ante")
    forged = {**entry, "tx_id": f"{entry['tx_id']}:again"}
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO ledger_entries (tenant, table_id, player_id, kind, amount, at, entry)"
            " VALUES ('default', %s, %s, %s, %s, %s, %s)",
            (table, entry["player_id"], "ante", entry["amount"], entry["at"], Jsonb(forged)),
        )
    return f"entry {forged['tx_id']} is extra"


@pytest.mark.parametrize("tamper", [_change_amount, _drop, _add])
def test_a_changed_missing_or_extra_entry_in_redis_is_named(
    plain_api: Api, run_jobs, redis_client, monkeypatch, tamper: Callable[[Any, str], str]
):
    api = plain_api
    table = _caught_up(api)
    entries = {e["tx_id"]: e for _, e in _stored(redis_client, table)}
    expected = tamper(redis_client, table)
    monkeypatch.delenv("GUTS_DATABASE_URL")  # (run_jobs configured the archive's)
    report = _audit(api, run_jobs, table)
    assert not report["ok"]
    found = report["first_discrepancy"]
    assert expected in found["problem"], found
    tx_id = expected.split()[1].removesuffix(":again")
    assert found["version"] == entries[tx_id]["version"]


@pytest.mark.parametrize("tamper", [_change_archived_amount, _drop_archived, _add_archived])
def test_a_changed_missing_or_extra_entry_in_the_archive_is_named(
    api: Api, run_jobs, database_url: str, tamper: Callable[[str, str], str]
):
    table = _caught_up(api)
    entries = {e["tx_id"]: e for _, e in _archived(database_url, table)}
    expected = tamper(database_url, table)
    report = _audit(api, run_jobs, table)
    assert not report["ok"]
    found = report["first_discrepancy"]
    assert expected in found["problem"], found
    tx_id = expected.split()[1].removesuffix(":again")
    assert found["version"] == entries[tx_id]["version"]


def test_a_tampered_top_up_is_named_by_the_ledger(api: Api, run_jobs, redis_client):
    table = _caught_up(api)

    def more_chips(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        at = _find(records, "chips_added")
        records[at]["data"]["amount"] = 500
        return records

    rewrite_log(redis_client, table, more_chips, rechain=True)
    report = _audit(api, run_jobs, table)
    found = report["first_discrepancy"]
    version = api.get(f"/v1/tables/{table}/events", params={"limit": 1000}).json()["events"]
    top_up = next(e["version"] for e in version if e["type"] == "chips_added")
    assert (found["version"], found["event_type"]) == (top_up, "chips_added"), found
    assert f"entry {table}:{top_up}:0:top_up differs in amount, balance_after" in found["problem"]
