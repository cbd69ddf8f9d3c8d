"""Rake over HTTP: in the outcome, the hand's history, the ledger, the PHH export and the
fairness verifier's settlement check; an audit of a raked table is ok, and a tampered rake
is named by the audit and failed by the verifier."""

from __future__ import annotations

from collections.abc import Callable

from service.fairness.checks import verify_history
from tests.apiclient import AUDITOR, Api
from tests.tampering import rewrite_log
from tests.workers.test_audit import _audit, _find


def _raked_table(api: Api) -> str:
    table = api.table("three-card", ante=10, rake_percent=5, rake_cap=2)
    tokens = [api.seat(table, f"p{i}")["token"] for i in range(3)]
    stacked = {"0": "As Ah Ad".split(), "1": "Ks Kh 2c".split()}
    dealt = api.post(f"/v1/tables/{table}/deal", {"stacked_deck": stacked})
    assert dealt.status_code == 201, dealt.text
    decisions = {0: "in", 1: "in", 2: "out"}
    for seat in dealt.json()["order"]:
        api.post(f"/v1/tables/{table}/declare", {"decision": decisions[seat]}, token=tokens[seat])
    resolved = api.post(f"/v1/tables/{table}/resolve")
    assert resolved.status_code == 200, resolved.text
    outcome = resolved.json()
    assert outcome["outcome"] == "showdown" and outcome["pot_in_play"] == 30
    assert outcome["rake"] == 1 and outcome["won"] == {"0": 29}  # 5% of 30, rounded down
    return table


def test_a_raked_hand_shows_its_rake_everywhere_and_audits_ok(api: Api, run_jobs: Callable):
    table = _raked_table(api)
    history = api.get(f"/v1/tables/{table}/hands/1", token=AUDITOR).json()
    assert history["outcome"]["rake"] == 1
    report = verify_history(history)
    assert {c.name: c.passed for c in report.checks}["rake"] is True
    assert {c.name: c.passed for c in report.checks}["settlement chips"] is True
    phh = api.get(f"/v1/tables/{table}/hands/1?format=phh", token=AUDITOR)
    assert phh.status_code == 200 and "_guts_rake = 1" in phh.text
    rake = [
        e for e in api.get(f"/v1/ledger?table_id={table}").json()["entries"] if e["kind"] == "rake"
    ]
    assert [(e["player_id"], e["amount"], e["balance_after"]) for e in rake] == [(None, 1, 1)]
    assert _audit(api, run_jobs, table)["ok"]


def test_a_tampered_rake_is_named_by_the_audit_and_failed_by_the_verifier(
    api: Api, redis_client, run_jobs: Callable
):
    table = _raked_table(api)

    def skim(records):
        i = _find(records, "hand_resolved")
        records[i]["data"]["rake"] += 1
        records[i]["data"]["won"]["0"] -= 1
        return records

    original = list(redis_client.xrange(f"guts:{{{table}}}:events"))
    rewrite_log(redis_client, table, skim, rechain=True)
    report = _audit(api, run_jobs, table)
    resolved_at = [i for i, (_, f) in enumerate(original) if b'"hand_resolved"' in f[b"data"]][0]
    assert not report["ok"] and report["first_discrepancy"]["version"] == resolved_at + 1
    history = api.get(f"/v1/tables/{table}/hands/1", token=AUDITOR).json()
    checks = {c.name: c for c in verify_history(history).checks}
    assert checks["settlement chips"].passed  # the chips still add up...
    assert not checks["rake"].passed  # ...but the rake is not the rules'
    assert "the rules say 1" in checks["rake"].detail


def _ended_table(api: Api) -> str:
    table, tokens = api.rules_table(3, ante=10)
    dealt = api.post(f"/v1/tables/{table}/deal").json()
    for seat in dealt["order"]:
        api.post(f"/v1/tables/{table}/declare", {"decision": "out"}, token=tokens[seat])
    assert api.post(f"/v1/tables/{table}/resolve").status_code == 200
    assert api.post(f"/v1/tables/{table}/end").status_code == 200
    return table


def test_an_ended_table_audits_ok(api: Api, run_jobs: Callable):
    report = _audit(api, run_jobs, _ended_table(api))
    assert report["ok"], report


def test_a_tampered_refund_is_named_by_the_audit(api: Api, redis_client, run_jobs: Callable):
    table = _ended_table(api)

    def favour(records):
        i = _find(records, "table_ended")
        data = records[i]["data"]
        data["refunds"]["0"] += 1
        data["refunds"]["1"] -= 1
        data["cash_outs"]["0"] += 1
        data["cash_outs"]["1"] -= 1
        return records

    rewrite_log(redis_client, table, favour, rechain=True)
    report = _audit(api, run_jobs, table)
    assert not report["ok"]
    assert "end of the table" in report["first_discrepancy"]["problem"]
    assert "refunds" in report["first_discrepancy"]["problem"]
