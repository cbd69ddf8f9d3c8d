"""POST /v1/tables/{id}/end: never during a hand; the pots go back, everyone is cashed out,
the table is `ended` and readable, every command after is 409; ended once however many ask."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tests.apiclient import Api


def _table_with_a_pot(api: Api) -> tuple[str, list[str]]:
    table, tokens = api.rules_table(3, ante=10)
    dealt = api.post(f"/v1/tables/{table}/deal").json()
    for seat in dealt["order"]:  # nobody in: the pot of 30 carries over
        api.post(f"/v1/tables/{table}/declare", {"decision": "out"}, token=tokens[seat])
    assert api.post(f"/v1/tables/{table}/resolve").status_code == 200
    return table, tokens


def test_ending_returns_the_pot_cashes_everyone_out_and_the_table_reads_ended(api: Api):
    table, tokens = _table_with_a_pot(api)
    ended = api.post(f"/v1/tables/{table}/end")
    assert ended.status_code == 200, ended.text
    body = ended.json()
    assert body["status"] == "ended" and body["refunds"] == {"0": 10, "1": 10, "2": 10}
    assert body["cash_outs"] == {"0": 100, "1": 100, "2": 100}
    view = api.get(f"/v1/tables/{table}").json()
    assert view["status"] == "ended" and view["pot"] == 0
    assert view["seats"] == []  # everyone was cashed out
    listed = {t["table_id"]: t["status"] for t in api.get("/v1/tables").json()["tables"]}
    assert listed[table] == "ended"
    kinds = [e["kind"] for e in api.get(f"/v1/ledger?table_id={table}").json()["entries"]]
    assert kinds[-6:] == ["refund", "refund", "refund", "cash_out", "cash_out", "cash_out"]


def test_a_table_cannot_end_during_a_hand(api: Api):
    table, _ = api.rules_table(2)
    api.post(f"/v1/tables/{table}/deal")
    refused = api.post(f"/v1/tables/{table}/end")
    assert refused.status_code == 409 and "in play" in refused.json()["detail"]


COMMANDS: list[tuple[str, str, Any]] = [
    ("POST", "/players", {"player_id": "zed", "buy_in": 5}),
    ("POST", "/players/0/chips", {"amount": 5}),
    ("POST", "/players/0/sit-out", None),
    ("POST", "/players/0/sit-in", None),
    ("DELETE", "/players/0", None),
    ("POST", "/deal", None),
    ("POST", "/close", None),
    ("POST", "/resolve", None),
    ("POST", "/void", {"reason": "misdeal"}),
    ("POST", "/end", None),
]


@pytest.mark.parametrize(("method", "path", "body"), COMMANDS)
def test_every_command_after_the_end_is_409(api: Api, method: str, path: str, body: Any):
    table, tokens = _table_with_a_pot(api)
    assert api.post(f"/v1/tables/{table}/end").status_code == 200
    refused = api.call(method, f"/v1/tables/{table}{path}", body)
    assert refused.status_code == 409, refused.text
    assert "ended" in refused.json()["detail"], refused.json()["detail"]


@pytest.mark.parametrize(
    ("path", "body"),
    [("/declare", {"decision": "in"}), ("/players/0/client-seed", {"client_seed": "x"})],
)
def test_a_former_players_token_acts_no_more(api: Api, path: str, body: Any):
    table, tokens = _table_with_a_pot(api)
    assert api.post(f"/v1/tables/{table}/end").status_code == 200
    method = "PUT" if "client-seed" in path else "POST"
    refused = api.call(method, f"/v1/tables/{table}{path}", body, token=tokens[0])
    assert refused.status_code in (403, 409), refused.text


def test_ten_parallel_ends_end_the_table_once(api: Api):
    table, _ = _table_with_a_pot(api)
    barrier = threading.Barrier(10)
    statuses: list[int] = []

    def end() -> None:
        barrier.wait()
        statuses.append(Api(api.base).post(f"/v1/tables/{table}/end").status_code)

    threads = [threading.Thread(target=end) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [200] + [409] * 9
    events = api.get(f"/v1/tables/{table}/events?limit=1000").json()["events"]
    assert [e["type"] for e in events].count("table_ended") == 1
