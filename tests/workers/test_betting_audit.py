"""The audit re-decides every betting action and the settlement with the bets in the pot."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.test_betting import Table
from tests.apiclient import Api
from tests.tampering import Records, rewrite_log


def _betting_hand(api: Api, basis: str) -> Table:
    t = Table(api, match_basis=basis)
    t.to_betting()
    for seat, action in ((1, "bet"), (2, "raise"), (0, "call"), (1, "fold")):
        assert t.bet(seat, action).status_code == 200
    t.ok("resolve")
    return t


def _audit(api: Api, run_jobs: Any, table: str) -> dict[str, Any]:
    audit = api.post(f"/v1/tables/{table}/audit").json()["audit_id"]
    run_jobs()
    report = api.get(f"/v1/audits/{audit}").json()
    assert report["status"] == "finished", report
    return dict(report["result"])


@pytest.mark.parametrize("basis", ["declared", "after_betting"])
def test_a_betting_table_audits_ok(api: Api, run_jobs, basis: str):
    t = _betting_hand(api, basis)
    report = _audit(api, run_jobs, t.id)
    assert report["ok"], report


def test_a_bet_rewritten_with_a_recomputed_chain_is_caught(api: Api, run_jobs, redis_client):
    t = _betting_hand(api, "declared")
    found: list[int] = []

    def cheaper_raise(records: Records) -> Records:
        for version, record in enumerate(records, start=1):
            if record["type"] == "bet_made" and record["data"]["action"] == "raise":
                record["data"]["amount"] = 1  # a raise of 2 recorded as 1
                found.append(version)
        return records

    rewrite_log(redis_client, t.id, cheaper_raise, rechain=True)
    report = _audit(api, run_jobs, t.id)
    assert not report["ok"]
    assert report["first_discrepancy"]["version"] == found[0]
    assert "bet differs" in report["first_discrepancy"]["problem"]
    assert "amount" in report["first_discrepancy"]["problem"]
