"""Idempotency keys, If-Match, and commands racing each other over real HTTP and Redis."""

from __future__ import annotations

import threading
from collections import Counter

import orjson
import pytest

from service.eventlog.redis_store import RedisEventStore
from tests.apiclient import Api


def _table_with_players(api: Api, players: int, **rules) -> tuple[str, dict[int, str]]:
    rules.setdefault("seats", max(players, 2))
    table = api.table("three-card", **rules)
    tokens = {}
    for i in range(players):
        seated = api.seat(table, f"p{i}")
        tokens[seated["seat"]] = seated["token"]
    return table, tokens


def test_same_idempotency_key_and_body_replays_the_first_response(api: Api):
    table, _ = _table_with_players(api, 3)
    headers = {"Idempotency-Key": "deal-1"}
    first = api.post(f"/v1/tables/{table}/deal", {}, headers=headers)
    again = api.post(f"/v1/tables/{table}/deal", {}, headers=headers)
    assert first.status_code == again.status_code == 201
    assert first.json() == again.json()
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert api.get(f"/v1/tables/{table}").json()["version"] == first.json()["version"]


@pytest.mark.parametrize(
    ("path", "body", "status"),
    [("deal", {}, 201), ("players/0/chips", {"amount": 5}, 200)],
    ids=["made", "changed"],
)
def test_a_record_kept_as_an_http_response_before_the_deploy_replays_as_before(
    api: Api, redis_client, path: str, body: dict, status: int
):
    """Idempotency records keep what a command did (its effect and facts); those written
    before kept the response, {"status", "body"}, and live 24 h across a deploy: a retry
    that finds one is answered exactly as the first request was."""
    table, _ = _table_with_players(api, 3)
    headers = {"Idempotency-Key": f"old-{path}"}
    first = api.post(f"/v1/tables/{table}/{path}", body, headers=headers)
    assert first.status_code == status, first.text
    store = RedisEventStore(redis_client, prefix="guts")
    record = store.idempotency_key(table, headers["Idempotency-Key"])
    kept = orjson.loads(redis_client.hget(record, "response"))
    assert kept == {"effect": "made" if status == 201 else "changed", "facts": first.json()}
    older = orjson.dumps({"status": first.status_code, "body": first.json()})
    redis_client.hset(record, "response", older)
    again = api.post(f"/v1/tables/{table}/{path}", body, headers=headers)
    assert (again.status_code, again.content) == (first.status_code, first.content)
    for name in ("ETag", "Location", "Content-Type"):
        assert again.headers.get(name) == first.headers.get(name), name
    assert again.headers["Idempotent-Replayed"] == "true"
    assert api.get(f"/v1/tables/{table}").json()["version"] == first.json()["version"]


def test_same_idempotency_key_with_another_body_is_422(api: Api):
    table, _ = _table_with_players(api, 2)
    headers = {"Idempotency-Key": "top-up"}
    ok = api.post(f"/v1/tables/{table}/players/0/chips", {"amount": 5}, headers=headers)
    assert ok.status_code == 200
    other = api.post(f"/v1/tables/{table}/players/0/chips", {"amount": 6}, headers=headers)
    assert other.status_code == 422
    assert other.headers["Content-Type"].startswith("application/problem+json")
    assert api.get(f"/v1/tables/{table}").json()["seats"][0]["stack"] == 105


def test_replayed_seat_returns_the_same_token_without_seating_twice(api: Api):
    table = api.table("three-card")
    body = {"player_id": "alice", "buy_in": 10}
    headers = {"Idempotency-Key": "seat-alice"}
    first = api.post(f"/v1/tables/{table}/players", body, headers=headers)
    second = api.post(f"/v1/tables/{table}/players", body, headers=headers)
    assert first.json() == second.json()
    assert len(api.get(f"/v1/tables/{table}").json()["seats"]) == 1


def test_if_match_with_a_stale_version_is_412_and_writes_nothing(api: Api):
    table, _ = _table_with_players(api, 2)
    view = api.get(f"/v1/tables/{table}")
    version = view.json()["version"]
    assert view.headers["ETag"] == f'"{version}"'
    stale = api.post(
        f"/v1/tables/{table}/players/0/chips", {"amount": 1}, headers={"If-Match": str(version - 1)}
    )
    assert stale.status_code == 412
    fresh = api.post(
        f"/v1/tables/{table}/players/0/chips", {"amount": 1}, headers={"If-Match": f'"{version}"'}
    )
    assert fresh.status_code == 200 and fresh.json()["version"] == version + 1


def test_ten_players_declaring_at_once_all_succeed_with_one_event_each(api: Api):
    table, tokens = _table_with_players(api, 10)
    assert api.post(f"/v1/tables/{table}/deal").status_code == 201
    barrier = threading.Barrier(len(tokens))
    statuses: list[int] = []

    def declare(token: str) -> None:
        barrier.wait()
        response = api.post(f"/v1/tables/{table}/declare", {"decision": "in"}, token=token)
        statuses.append(response.status_code)

    threads = [threading.Thread(target=declare, args=(t,)) for t in tokens.values()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statuses == [200] * 10
    events = api.get(f"/v1/tables/{table}/events?limit=1000").json()["events"]
    decisions = Counter(e["data"]["seat"] for e in events if e["type"] == "decision_made")
    assert decisions == Counter({seat: 1 for seat in tokens})
    assert [e["type"] for e in events].count("declarations_revealed") == 1
    assert api.get(f"/v1/tables/{table}").json()["hand"]["phase"] == "showdown"


def test_racing_resolves_settle_exactly_once(api: Api):
    for _ in range(5):
        table, tokens = _table_with_players(api, 3)
        api.post(f"/v1/tables/{table}/deal")
        for token in tokens.values():
            api.post(f"/v1/tables/{table}/declare", {"decision": "in"}, token=token)
        barrier = threading.Barrier(2)
        statuses: list[int] = []

        def resolve(table: str, barrier: threading.Barrier, statuses: list[int]) -> None:
            barrier.wait()
            statuses.append(api.post(f"/v1/tables/{table}/resolve").status_code)

        threads = [
            threading.Thread(target=resolve, args=(table, barrier, statuses)) for _ in range(2)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(statuses) == [200, 409]
        view = api.get(f"/v1/tables/{table}").json()
        assert sum(s["stack"] for s in view["seats"]) + view["pot"] == 300
        events = api.get(f"/v1/tables/{table}/events?limit=1000").json()["events"]
        assert [e["type"] for e in events].count("hand_resolved") == 1


def test_conflicting_state_commands_are_409_with_a_reason(api: Api):
    table, tokens = _table_with_players(api, 2)
    early = api.post(f"/v1/tables/{table}/resolve")
    assert early.status_code == 409 and "no hand" in early.json()["detail"]
    api.post(f"/v1/tables/{table}/deal")
    again = api.post(f"/v1/tables/{table}/deal")
    assert again.status_code == 409 and "still in play" in again.json()["detail"]
    api.post(f"/v1/tables/{table}/declare", {"decision": "in"}, token=tokens[0])
    twice = api.post(f"/v1/tables/{table}/declare", {"decision": "out"}, token=tokens[0])
    assert twice.status_code == 409 and "already declared" in twice.json()["detail"]
    not_done = api.post(f"/v1/tables/{table}/resolve")
    assert not_done.status_code == 409 and "not complete" in not_done.json()["detail"]
