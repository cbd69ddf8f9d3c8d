"""GET /v1/tables?status=: only the tables of a status, paged over the whole list (not a page
of 50 filtered afterwards), a page looking at no more than FILTER_BUDGET tables."""

from __future__ import annotations

from typing import Any

import pytest

from service.application import reads
from tests.apiclient import Api


def _tables_of_every_status(api: Api) -> dict[str, str]:
    """Nine tables, three open, three playing, three ended, created in an interleaved order;
    table id -> status."""
    made: dict[str, str] = {}
    for _ in range(3):
        for status in ("ended", "open", "playing"):
            table, _tokens = api.rules_table(2)
            if status == "playing":
                assert api.post(f"/v1/tables/{table}/deal").status_code == 201
            if status == "ended":
                assert api.post(f"/v1/tables/{table}/end").status_code == 200
            made[table] = status
    return made


def _all_pages(api: Api, **query: Any) -> list[list[dict[str, Any]]]:
    pages, after = [], None
    while True:
        params = {**query, **({"after": after} if after else {})}
        answer = api.get("/v1/tables", params=params)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        pages.append(body["tables"])
        after = body["next_after"]
        if after is None:
            return pages
        assert len(pages) < 50, "the pages never end"


@pytest.mark.parametrize("chunk", [reads.LIST_CHUNK, 1])
def test_a_status_lists_exactly_the_tables_of_that_status_newest_first(
    api: Api, monkeypatch: pytest.MonkeyPatch, chunk: int
):
    """With the list read 100 tables at a time (one read a page here), and one at a time (a
    page reads on from where its last read ended)."""
    monkeypatch.setattr(reads, "LIST_CHUNK", chunk)
    made = _tables_of_every_status(api)
    newest_first = [t["table_id"] for page in _all_pages(api, limit=200) for t in page]
    assert sorted(newest_first) == sorted(made)
    for status in ("open", "playing", "ended"):
        pages = _all_pages(api, status=status, limit=2)
        assert [len(page) for page in pages] == [2, 1]
        listed = [t["table_id"] for page in pages for t in page]
        assert listed == [table for table in newest_first if made[table] == status]
        assert all(t["status"] == status for page in pages for t in page)


def _model(statuses: list[str], wanted: str, limit: int, budget: int) -> list[int]:
    """How many tables each page holds, as the contract says: a page looks at the tables
    newest first, until it holds `limit` or has looked at `budget`."""
    sizes, looked, held = [], 0, 0
    for at, status in enumerate(statuses):
        looked, held = looked + 1, held + (status == wanted)
        if held == limit or looked == budget or at == len(statuses) - 1:
            sizes.append(held)
            looked = held = 0
    return sizes


def test_a_filtered_page_stops_looking_after_its_budget_and_says_where_to_go_on(
    api: Api, monkeypatch: pytest.MonkeyPatch
):
    made = _tables_of_every_status(api)
    newest_first = [t["table_id"] for t in api.get("/v1/tables").json()["tables"]]
    monkeypatch.setattr(reads, "FILTER_BUDGET", 2)
    pages = _all_pages(api, status="ended", limit=1)
    sizes = _model([made[t] for t in newest_first], "ended", 1, 2)
    assert [len(page) for page in pages] == sizes
    assert 0 in sizes  # a page that holds none still names the next
    listed = [t["table_id"] for page in pages for t in page]
    assert listed == [t for t in newest_first if made[t] == "ended"]


def test_the_unfiltered_list_is_unchanged(api: Api):
    made = _tables_of_every_status(api)
    pages = _all_pages(api, limit=4)
    assert [len(page) for page in pages] == [4, 4, 1]
    assert {t["table_id"]: t["status"] for page in pages for t in page} == made


@pytest.mark.parametrize("status", ["closed", "", "OPEN", "open,ended"])
def test_an_unknown_status_is_422(api: Api, status: str):
    answer = api.get("/v1/tables", params={"status": status})
    assert answer.status_code == 422, answer.text
    assert answer.headers["Content-Type"] == "application/problem+json"
    assert "status" in answer.text
