"""The collusion report: the scoring on hands made up for it, and the whole path (hands played
over HTTP, archived, a report queued, run by a real RQ worker over the archive)."""

from __future__ import annotations

import random
from typing import Any

import pytest
import redis
from rq import SimpleWorker

from service.archive.collusion import HandFacts, score_pairs
from tests.apiclient import AUDITOR, SERVED, Api
from workers.queues import QUEUES, SERIALIZER


def _hands(n: int, seed: int = 7) -> list[HandFacts]:
    """Four players; a and b go in together at every hand and b pays what a wins; c and d
    decide at random and settle between themselves."""
    pick = random.Random(seed)
    made = []
    for _ in range(n):
        ins = ["a", "b"] if pick.random() < 0.5 else []
        ins += [p for p in ("c", "d") if pick.random() < 0.5]
        won, paid = {}, {}
        if "a" in ins:
            won["a"], paid["b"] = 4, 4
        elif len(ins) == 2:
            winner, loser = pick.sample(ins, 2)
            won[winner], paid[loser] = 3, 3
        declared = {p: pick.uniform(0, 20) for p in "abcd"}
        declared["b"] = declared["a"] + 0.2
        made.append(HandFacts(["a", "b", "c", "d"], ins, won, paid, declared))
    return made


def test_a_pair_that_goes_in_together_and_dumps_chips_tops_the_report():
    hands = _hands(200)
    report = score_pairs(hands, min_hands=20)
    top, *rest = report["pairs"]
    assert top["players"] == ["a", "b"]
    assert top["both_in"] == sum("a" in h.ins for h in hands) and top["hands_together"] == 200
    assert top["both_in_expected"] < top["both_in"] and top["together"] > 5
    assert top["one_sided"] == 1.0 and top["net"] == top["chips_b_to_a"] > 0  # b pays a
    assert top["in_step"] == 1.0 and top["median_gap_s"] == 0.2
    assert all(row["score"] < top["score"] - 3 for row in rest)
    assert report["hands"] == 200 and report["players"] == 4 and report["pairs_scored"] == 6


def test_pairs_below_the_minimum_are_not_scored_and_nothing_is_divided_by_zero():
    quiet = [HandFacts(["a", "b"], [], {}, {}, {}) for _ in range(5)]
    assert score_pairs(quiet, min_hands=6)["pairs"] == []
    (row,) = score_pairs(quiet, min_hands=5)["pairs"]
    assert (row["together"], row["one_sided"], row["in_step"], row["median_gap_s"]) == (
        0.0,
        0.0,
        0.0,
        None,
    )


def test_a_report_is_queued_run_over_the_archive_and_read_back(
    archived_api: Api,
    redis_client: redis.Redis,
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api = archived_api
    table, tokens = api.rules_table(4, ante_rule="every_hand")
    pick = random.Random(3)
    shared = both_in = 0  # (a player the pots broke is not dealt in any more)
    for _ in range(24):
        dealt = api.post(f"/v1/tables/{table}/deal", {})
        assert dealt.status_code == 201, dealt.text
        together = pick.random() < 0.5
        if {0, 1} <= set(dealt.json()["order"]):
            shared += 1
            both_in += together
        for seat in dealt.json()["order"]:
            decision = together if seat < 2 else pick.random() < 0.5
            body = {"decision": "in" if decision else "out"}
            assert api.post(f"/v1/tables/{table}/declare", body, token=tokens[seat]).ok
        assert api.post(f"/v1/tables/{table}/resolve").status_code == 200
    SERVED[api.base].extensions["guts"].usecases.archiver.catch_up(table)
    started = api.post("/v1/reports/collusion", {"min_hands": 10}, token=AUDITOR)
    assert started.status_code == 202, started.text
    assert started.headers["Location"] == f"/v1/reports/{started.json()['report_id']}"
    path = started.headers["Location"]
    assert api.get(path, token=AUDITOR).json()["status"] == "queued"
    monkeypatch.setenv("GUTS_DATABASE_URL", database_url)  # the worker's environment
    SimpleWorker(list(QUEUES), connection=redis_client, serializer=SERIALIZER).work(
        burst=True, logging_level="WARNING"
    )
    report: dict[str, Any] = api.get(path, token=AUDITOR).json()
    assert report["status"] == "finished", report
    result = report["result"]
    assert result["hands"] == 24 and result["players"] == 4
    top = next(row for row in result["pairs"] if row["players"] == ["p0", "p1"])
    assert (top["hands_together"], top["both_in"]) == (shared, both_in)
    assert top["timed_hands"] == shared  # both declared themselves at every hand


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"min_hands": 0}, 422),
        ({"from": "2026-01-02T00:00:00Z", "to": "2026-01-01T00:00:00Z"}, 422),
        ({"colour": "red"}, 422),
    ],
)
def test_bad_report_requests_are_refused(archived_api: Api, body: Any, status: int) -> None:
    answer = archived_api.post("/v1/reports/collusion", body, token=AUDITOR)
    assert answer.status_code == status, answer.text
    assert archived_api.get("/v1/reports/nosuchreport", token=AUDITOR).status_code == 404
