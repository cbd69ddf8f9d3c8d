"""Audits rebuild a table from its log alone and name the first bad event."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import pytest

from service.audit.jobs import audit_key
from tests.apiclient import AUDITOR, Api
from tests.spec import load_spec
from tests.tampering import rewrite_entries, rewrite_log


def _played_table(api: Api) -> str:
    """A table with a few complete hands: a showdown with matches, an all-out, a lone win."""
    table = api.table("three-card")
    tokens = [api.seat(table, f"p{i}")["token"] for i in range(3)]
    plays = [
        ({"1": "As Ah Ad".split(), "2": "Ks Kh 2c".split()}, {1: "in", 2: "in", 0: "out"}),
        ({}, {0: "out", 1: "out", 2: "out"}),
        ({}, {0: "in", 1: "out", 2: "out"}),
        ({}, {0: "in", 1: "in", 2: "in"}),
    ]
    for stacked, decisions in plays:
        dealt = api.post(f"/v1/tables/{table}/deal", {"stacked_deck": stacked} if stacked else {})
        assert dealt.status_code == 201, dealt.text
        for seat in dealt.json()["order"]:
            api.post(
                f"/v1/tables/{table}/declare", {"decision": decisions[seat]}, token=tokens[seat]
            )
        assert api.post(f"/v1/tables/{table}/resolve").status_code == 200
    return table


def _audit(api: Api, run_jobs: Callable[[], None], table: str) -> dict[str, Any]:
    started = api.post(f"/v1/tables/{table}/audit", token=AUDITOR)
    assert started.status_code == 202, started.text
    audit_id = started.json()["audit_id"]
    assert api.get(f"/v1/audits/{audit_id}", token=AUDITOR).json()["status"] == "queued"
    run_jobs()
    report = api.get(f"/v1/audits/{audit_id}", token=AUDITOR).json()
    assert report["status"] == "finished"
    return dict(report["result"])


def _rewrite(client, table: str, change: Callable[[list[dict]], list[dict]], rechain: bool):
    """Rewrite the table's stream as someone with Redis access could: read, change, re-add."""
    rewrite_log(client, table, change, rechain)


def _find(records: list[dict], event_type: str, nth: int = 0) -> int:
    return [i for i, r in enumerate(records) if r["type"] == event_type][nth]


def test_a_clean_table_audits_ok(api: Api, run_jobs):
    table = _played_table(api)
    report = _audit(api, run_jobs, table)
    version = api.get(f"/v1/tables/{table}").json()["version"]
    assert report["ok"] and report["first_discrepancy"] is None
    assert report["events_checked"] == report["version"] == version


def _change_payout(records):
    i = _find(records, "hand_resolved")
    records[i]["data"]["won"]["1"] += 1
    return records


def _edit_card(records):
    i = _find(records, "hand_dealt", 1)  # a deal from the seeded deck (not stacked)
    cards = records[i]["data"]["cards"]
    seat = next(iter(cards))
    deck = records[i]["data"]["deck"]
    cards[seat][0], deck[0] = deck[0], cards[seat][0]  # swap with an undealt card
    return records


def _drop(records):
    del records[_find(records, "decision_made", 2)]
    return records


def _reorder(records):
    i = _find(records, "hand_dealt", 2)
    records[i], records[i + 1] = records[i + 1], records[i]
    return records


@pytest.mark.parametrize(
    ("tamper", "anchor", "problem"),
    [
        (_change_payout, ("hand_resolved", 0), "hash chain"),
        (_edit_card, ("hand_dealt", 1), "hash chain"),
        (_drop, ("decision_made", 2), "hash chain"),
        (_reorder, ("hand_dealt", 2), "hash chain"),
    ],
)
def test_tampering_breaks_the_chain_at_the_first_bad_event(
    api: Api, run_jobs, redis_client, tamper, anchor, problem
):
    table = _played_table(api)
    original = [
        orjson.loads(f[b"data"]) for _, f in redis_client.xrange(f"guts:{{{table}}}:events")
    ]
    bad_version = _find(original, *anchor) + 1
    _rewrite(redis_client, table, tamper, rechain=False)
    report = _audit(api, run_jobs, table)
    assert not report["ok"]
    assert report["first_discrepancy"]["version"] == bad_version
    assert problem in report["first_discrepancy"]["problem"]


@pytest.mark.parametrize(
    ("tamper", "anchor", "problem"),
    [
        (_change_payout, ("hand_resolved", 0), "settlement differs"),
        (_edit_card, ("hand_dealt", 1), "not the deck derived from the seed"),
    ],
)
def test_tampering_with_a_recomputed_chain_is_still_caught(
    api: Api, run_jobs, redis_client, tamper, anchor, problem
):
    table = _played_table(api)
    original = [
        orjson.loads(f[b"data"]) for _, f in redis_client.xrange(f"guts:{{{table}}}:events")
    ]
    _rewrite(redis_client, table, tamper, rechain=True)
    report = _audit(api, run_jobs, table)
    assert not report["ok"]
    assert report["first_discrepancy"]["version"] == _find(original, *anchor) + 1
    assert problem in report["first_discrepancy"]["problem"]


def test_a_tampered_seed_fails_the_commitment(api: Api, run_jobs, redis_client):
    table = _played_table(api)

    def change_seed(records):
        i = _find(records, "hand_dealt", 1)
        records[i]["data"]["seed"] = "00" * 32
        return records

    _rewrite(redis_client, table, change_seed, rechain=True)
    report = _audit(api, run_jobs, table)
    assert "commitment" in report["first_discrepancy"]["problem"]


def test_audits_are_for_operators_and_auditors_only(api: Api):
    table = api.table("three-card")
    token = api.seat(table, "p0")["token"]
    assert api.post(f"/v1/tables/{table}/audit", token=token).status_code == 403
    assert api.post("/v1/tables/none/audit", token=AUDITOR).status_code == 404
    assert api.get("/v1/audits/unknown", token=AUDITOR).status_code == 404


def test_an_audit_with_an_idempotency_key_is_queued_once(api: Api, run_jobs):
    table = _played_table(api)
    headers = {"Idempotency-Key": "audit-1"}
    first = api.post(f"/v1/tables/{table}/audit", token=AUDITOR, headers=headers).json()
    again = api.post(f"/v1/tables/{table}/audit", token=AUDITOR, headers=headers).json()
    assert first["audit_id"] == again["audit_id"]
    run_jobs()
    done = api.post(f"/v1/tables/{table}/audit", token=AUDITOR, headers=headers).json()
    assert done == {**first, "status": "finished"}


def test_creating_a_table_with_an_idempotency_key_twice_makes_one_table(api: Api):
    headers = {"Idempotency-Key": "create-1"}
    first = api.post("/v1/tables", {"preset": "three-card"}, headers=headers)
    again = api.post("/v1/tables", {"preset": "three-card"}, headers=headers)
    assert first.status_code == again.status_code == 201
    assert first.json() == again.json()
    assert again.headers.get("Idempotent-Replayed") == "true"


def test_a_seed_swapped_after_its_commitment_is_caught(api: Api, run_jobs, redis_client):
    """The house cannot pick a deck after the fact: each hand's seed was committed before."""
    import hashlib

    table = _played_table(api)

    def swap_seed(records):
        i = _find(records, "hand_dealt", 1)
        other = "11" * 32
        records[i]["data"]["seed"] = other
        records[i]["data"]["commitment"] = hashlib.sha256(bytes.fromhex(other)).hexdigest()
        return records

    _rewrite(redis_client, table, swap_seed, rechain=True)
    report = _audit(api, run_jobs, table)
    assert "committed before the deal" in report["first_discrepancy"]["problem"]


def test_a_snapshot_that_is_not_the_log_is_caught(api: Api, run_jobs, redis_client):
    table = _played_table(api)
    meta = f"guts:{{{table}}}:meta"
    version, since = (int(v) for v in redis_client.hmget(meta, "version", "snapshot_version"))
    assert since < version  # the snapshot is older than the table: the audit applies the rest
    assert _audit(api, run_jobs, table)["ok"]
    snapshot = orjson.loads(redis_client.hget(meta, "snapshot"))
    snapshot["state"]["seats"]["1"]["player_id"] = "mallory"  # no later event sets it again
    redis_client.hset(meta, "snapshot", orjson.dumps(snapshot))
    found = _audit(api, run_jobs, table)["first_discrepancy"]
    assert found["event_type"] == "snapshot" and "seats" in found["problem"]


def test_an_audit_starts_on_a_log_with_a_missing_event_and_reports_it(
    api: Api, run_jobs, redis_client
):
    table = _played_table(api)
    redis_client.xdel(f"guts:{{{table}}}:events", "20-0")  # a gap among the events
    report = _audit(api, run_jobs, table)
    assert not report["ok"] and report["events_checked"] == 19
    assert report["first_discrepancy"] == {
        "version": 20,
        "event_type": "?",
        "kind": "missing",
        "problem": "version 20 is missing: the log goes from version 19 to 21 (deleted?)",
    }


def _seeded_table(api: Api) -> tuple[str, list[str]]:
    """A table whose first hand mixed in two players' client seeds (context v2), and a second
    hand without any (v1)."""
    table = api.table("three-card")
    tokens = [api.seat(table, f"p{i}")["token"] for i in range(3)]
    for seat, seed in ((2, "b|b"), (0, "alice-01")):
        chosen = api.call(
            "PUT",
            f"/v1/tables/{table}/players/{seat}/client-seed",
            {"client_seed": seed},
            token=tokens[seat],
        )
        assert chosen.status_code == 200, chosen.text
    for _ in range(2):
        dealt = api.post(f"/v1/tables/{table}/deal", {})
        assert dealt.status_code == 201, dealt.text
        for seat in dealt.json()["order"]:
            api.post(f"/v1/tables/{table}/declare", {"decision": "in"}, token=tokens[seat])
        assert api.post(f"/v1/tables/{table}/resolve").status_code == 200
    return table, tokens


def test_a_table_with_players_seeds_audits_ok(api: Api, run_jobs):
    table, _ = _seeded_table(api)
    report = _audit(api, run_jobs, table)
    assert report["ok"], report["first_discrepancy"]


def _swap_client_seed(records):
    i = _find(records, "hand_dealt")
    records[i]["data"]["client_seeds"]["0"] = "chosen-by-the-house"
    return records


def _drop_client_seed(records):
    i = _find(records, "hand_dealt")
    del records[i]["data"]["client_seeds"]["2"]
    return records


def _context_without_seeds(records):
    """The deal claims a v1 context (and no seeds) though the players chose some."""
    i = _find(records, "hand_dealt")
    data = records[i]["data"]
    data["client_seeds"] = {}
    data["deck_context"] = f"guts-v1|{data['deck_context'].split(',')[0].split(':')[1]}|1|"
    return records


@pytest.mark.parametrize("tamper", [_swap_client_seed, _drop_client_seed, _context_without_seeds])
def test_a_deal_that_did_not_mix_in_the_chosen_seeds_is_caught(
    api: Api, run_jobs, redis_client, tamper
):
    table, _ = _seeded_table(api)
    original = [
        orjson.loads(f[b"data"]) for _, f in redis_client.xrange(f"guts:{{{table}}}:events")
    ]
    _rewrite(redis_client, table, tamper, rechain=True)
    report = _audit(api, run_jobs, table)
    assert not report["ok"]
    assert report["first_discrepancy"]["version"] == _find(original, "hand_dealt") + 1
    assert "client seeds" in report["first_discrepancy"]["problem"]


# --- Every kind of tampering is named at its first bad version ------------------------------
#
# On `_seeded_table`'s log (18 events: the table, three seats, two players' seeds, then two
# hands of deal, three decisions, reveal and resolve), each tampering starts at version 7, the
# first hand's deal, and the audit must name exactly version 7 and the kind of problem:
# without the chain recomputed, the chain (or the stream's ids) gives it away at 7; with the
# chain recomputed, the rules do, since what is at 7 then is not what they decide there.

AT = 7


def _card(records):
    data = records[AT - 1]["data"]
    seat = next(iter(data["cards"]))
    data["cards"][seat][0], data["deck"][0] = data["deck"][0], data["cards"][seat][0]
    return records


def _ante(records):
    antes = records[AT - 1]["data"]["antes"]
    seat = next(iter(antes))
    antes[seat] += 1  # (the chips stay on the table: only the rules see it)
    return records


def _seed(records):
    records[AT - 1]["data"]["seed"] = "00" * 32
    return records


def _hash(records):
    records[AT - 1]["hash"] = "ab" * 32
    return records


def _delete(records):
    del records[AT - 1]
    return records


def _reorder(records):
    records[AT - 1], records[AT] = records[AT], records[AT - 1]
    return records


def _insert(records):
    """A copy of the second hand's deal, replayed before the first's."""
    again = records[_find(records, "hand_dealt", 1)]
    records.insert(AT - 1, {**again, "data": {**again["data"]}})
    return records


def _xdel(client, table):
    assert client.xdel(f"guts:{{{table}}}:events", f"{AT}-0") == 1


def _under_an_id_of_its_own(client, table):
    """An event added between versions 6 and 7 under the stream id `6-1`: the stream keeps its
    ids, nothing is renumbered."""

    def change(entries):
        at, record = entries[AT - 2]
        return [*entries[: AT - 1], (f"{AT - 1}-1", dict(record)), *entries[AT - 1 :]]

    rewrite_entries(client, table, change)


def _truncate(client, table):
    key = f"guts:{{{table}}}:events"
    for version in range(AT, client.xlen(key) + 1):
        client.xdel(key, f"{version}-0")


def _rewritten(tamper, rechain):
    return lambda client, table: rewrite_log(client, table, tamper, rechain)


@pytest.mark.parametrize(
    ("tamper", "kind", "problem"),
    [
        pytest.param(_rewritten(_card, False), "chain", "hash chain", id="card"),
        pytest.param(_rewritten(_card, True), "rules", "not the deck", id="card-rechained"),
        pytest.param(_rewritten(_ante, False), "chain", "hash chain", id="chips"),
        pytest.param(_rewritten(_ante, True), "rules", "in: antes", id="chips-rechained"),
        pytest.param(_rewritten(_seed, False), "chain", "hash chain", id="seed"),
        pytest.param(_rewritten(_seed, True), "rules", "commitment", id="seed-rechained"),
        pytest.param(_rewritten(_hash, False), "chain", "hash chain", id="hash"),
        pytest.param(_xdel, "missing", "version 7 is missing", id="delete-xdel"),
        pytest.param(_rewritten(_delete, False), "chain", "hash chain", id="delete-renumbered"),
        pytest.param(
            _rewritten(_delete, True), "rules", "no hand 1 in play", id="delete-rechained"
        ),
        pytest.param(_rewritten(_reorder, False), "chain", "hash chain", id="reorder"),
        pytest.param(_rewritten(_reorder, True), "rules", "no hand 1", id="reorder-rechained"),
        pytest.param(_under_an_id_of_its_own, "unexpected", "id 6-1", id="insert-own-id"),
        pytest.param(_rewritten(_insert, False), "chain", "hash chain", id="insert-renumbered"),
        pytest.param(_rewritten(_insert, True), "rules", "committed", id="insert-rechained"),
        pytest.param(_truncate, "missing", "versions 7 to 18 are missing", id="truncate"),
    ],
)
def test_every_kind_of_tampering_is_named_at_its_first_bad_version(
    api: Api, run_jobs, redis_client, tamper, kind, problem
):
    table, _ = _seeded_table(api)
    key = f"guts:{{{table}}}:events"
    original = [orjson.loads(f[b"data"]) for _, f in redis_client.xrange(key)]
    assert len(original) == 18 and original[AT - 1]["type"] == "hand_dealt"
    assert _audit(api, run_jobs, table)["ok"]
    tamper(redis_client, table)
    report = _audit(api, run_jobs, table)
    found = report["first_discrepancy"]
    assert not report["ok"] and report["events_checked"] == AT - 1, found
    assert (found["version"], found["kind"]) == (AT, kind), found
    assert problem in found["problem"], found
    if kind in ("missing", "unexpected"):
        assert found["event_type"] == "?"
    else:
        assert found["event_type"] != "?"


def _services(api: Api) -> Any:
    from tests.apiclient import SERVED

    return SERVED[api.base].extensions["guts"]


def test_a_log_truncated_with_its_meta_is_caught_by_the_archive(api: Api, run_jobs, redis_client):
    """Truncating the stream and rewriting the table's version and snapshot to match leaves a
    consistent table in Redis; the archive, which held the events before, still names the
    first one missing."""
    from service.eventlog.codec import decode_event, encode_snapshot
    from service.rules.state import TableState, evolve

    table, _ = _seeded_table(api)
    assert _services(api).usecases.archiver.catch_up(table) == 18
    key, meta = f"guts:{{{table}}}:events", f"guts:{{{table}}}:meta"
    kept = [f[b"data"] for _, f in redis_client.xrange(key)][: AT - 1]
    state = TableState()
    for raw in kept:
        evolve(state, decode_event(raw))
    _truncate(redis_client, table)
    snapshot = encode_snapshot(state, orjson.loads(kept[-1])["hash"])
    redis_client.hset(meta, mapping={"version": AT - 1, "snapshot": snapshot})
    redis_client.hdel(meta, "snapshot_version")
    found = _audit(api, run_jobs, table)["first_discrepancy"]
    assert (found["version"], found["kind"]) == (AT, "missing"), found
    assert "the archive holds it up to version 18" in found["problem"]


def test_an_archived_event_rewritten_in_redis_is_named_by_the_archive(
    api: Api, run_jobs, redis_client
):
    """An edit the rules cannot see (a decision's time moved by a millisecond), with the chain
    recomputed: the archive's copy of the event still differs."""
    table, _ = _seeded_table(api)
    assert _services(api).usecases.archiver.catch_up(table) == 18
    decision = AT + 2

    def later(records):
        at = records[decision - 1]["data"]["at"]
        records[decision - 1]["data"]["at"] = at[:-4] + f"{(int(at[-4:-1]) + 1) % 1000:03d}Z"
        return records

    rewrite_log(redis_client, table, later, rechain=True)
    found = _audit(api, run_jobs, table)["first_discrepancy"]
    assert (found["version"], found["kind"]) == (decision, "archive"), found
    assert found["event_type"] == "decision_made"


def test_the_kinds_of_discrepancy_are_the_ones_the_api_documents():

    from service.audit.findings import KINDS

    spec = load_spec()
    found = spec["components"]["schemas"]["AuditReport"]["properties"]["first_discrepancy"]
    assert found["oneOf"][0]["properties"]["kind"]["enum"] == list(KINDS)


def test_an_event_appended_after_the_tables_version_is_named(api: Api, run_jobs, redis_client):
    table, _ = _seeded_table(api)
    key = f"guts:{{{table}}}:events"
    last = redis_client.xrevrange(key, count=1)[0][1][b"data"]
    redis_client.xadd(key, {"data": last}, id="19-0")  # the table's version stays 18
    found = _audit(api, run_jobs, table)["first_discrepancy"]
    assert (found["version"], found["kind"], found["event_type"]) == (
        19,
        "unexpected",
        "hand_resolved",
    ), found


def test_events_appended_while_the_audit_runs_are_left_to_the_next_audit(api: Api, redis_client):
    """The audit covers the table as it loaded it: a log that has grown since (the table is
    live) is not a discrepancy."""
    from dataclasses import replace

    from service.audit.rebuild import audit_table
    from service.eventlog.redis_store import RedisEventStore

    table, _ = _seeded_table(api)
    store = RedisEventStore(redis_client)
    now = store.load(table)
    assert now.version == 18 and len(now.tail) >= 1
    before = replace(now, version=17, tail=now.tail[:-1])  # as loaded before the last append
    loads = iter([before])

    class Live(RedisEventStore):
        def load(self, table_id):
            return next(loads, None) or super().load(table_id)

    report = audit_table(Live(redis_client), table)
    assert report["ok"], report["first_discrepancy"]
    assert (report["events_checked"], report["version"]) == (17, 17)


def test_events_trimmed_while_the_audit_reads_are_read_from_the_archive(
    api: Api, redis_client, database_url
):
    from service.archive.archive import Archive
    from service.audit.rebuild import audit_table
    from service.eventlog.redis_store import RedisEventStore

    table, _ = _seeded_table(api)
    assert _services(api).usecases.archiver.catch_up(table) == 18
    archive = Archive.open(database_url, size=1)
    trims = []

    class Trimming(RedisEventStore):
        def stream_entries(self, table_id, start, limit):
            if not trims:  # the archiver trims between the audit's two reads
                trims.append(self.trim(table_id, 18))
            return super().stream_entries(table_id, start, limit)

    try:
        report = audit_table(Trimming(redis_client, archive=archive, keep=0), table)
    finally:
        archive.close()
    assert trims[0] > 0  # (up to the snapshot)
    assert report["ok"], report["first_discrepancy"]
    assert report["events_checked"] == 18


def test_an_archive_that_cannot_be_reached_is_an_error_not_a_finding(api: Api, redis_client):
    import socket

    from service.archive.archive import Archive
    from service.audit.rebuild import audit_table
    from service.eventlog.redis_store import RedisEventStore

    table, _ = _seeded_table(api)
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    archive = Archive.open(f"postgresql://guts@127.0.0.1:{port}/guts?connect_timeout=2", size=1)
    try:
        report = audit_table(RedisEventStore(redis_client, archive=archive), table)
    finally:
        archive.close()
    assert report["ok"] is False and "first_discrepancy" not in report
    assert report["error"].startswith("the log cannot be read"), report


def test_a_first_seed_that_is_not_its_commitment_is_named_at_the_tables_creation(
    api: Api, run_jobs, redis_client
):
    table, _ = _seeded_table(api)

    def other_seed(records):
        records[0]["data"]["next_seed"] = "22" * 32
        return records

    rewrite_log(redis_client, table, other_seed, rechain=True)
    found = _audit(api, run_jobs, table)["first_discrepancy"]
    assert (found["version"], found["event_type"], found["kind"]) == (1, "table_created", "rules")
    assert "commitment" in found["problem"]


def test_an_audit_whose_record_cannot_be_read_is_named_not_a_500(api: Api, redis_client):
    table = api.table("three-card")
    started = api.post(f"/v1/tables/{table}/audit", token=AUDITOR)
    assert started.status_code == 202, started.text
    audit_id = started.json()["audit_id"]
    redis_client.set(audit_key("guts", audit_id), b"{not json", keepttl=True)
    read = api.get(f"/v1/audits/{audit_id}", token=AUDITOR)
    assert read.status_code == 409, read.text
    assert read.json()["title"] == "Record Failed Verification"
    assert read.json()["detail"] == "its record cannot be read; start another"
