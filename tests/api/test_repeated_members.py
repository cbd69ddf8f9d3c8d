"""A body whose objects repeat a member's name, at any depth, is 400 naming the member, on every
operation that takes a body, and writes nothing: the last copy does not win
(`{"player_id": "x", "buy_in": 1, "buy_in": 100000000}` once seated a stack of 100,000,000)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.apiclient import OPERATOR, Api
from tests.spec import load_spec

SPEC = load_spec()


def _schema(node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        found: Any = SPEC
        for part in node["$ref"].removeprefix("#/").split("/"):
            found = found[part]
        node = found
    return node


def _member(operation: dict[str, Any]) -> str:
    """A member the operation's body may have (its first documented one), else "note"."""
    body = _schema(operation["requestBody"])["content"]["application/json"]["schema"]
    return next(iter(_schema(body).get("properties", {})), "note")


OPERATIONS = [
    (method.upper(), path, _member(operation), "operator" in operation["x-roles"])
    for path, item in SPEC["paths"].items()
    for method, operation in item.items()
    if isinstance(operation, dict) and "requestBody" in operation
]
REPEATS = {  # where the repeat is -> (the body, with the member's name in it; the repeated name)
    "at the top": ('{"%s": 1, "%s": 100000000}', "%s"),
    "in a nested object": ('{"%s": {"ante": 1, "ante": 100000000}}', "ante"),
    "in an object in an array": ('{"%s": [{"card": "As"}, {"card": "As", "card": "Kd"}]}', "card"),
    "spelt with an escape": ('{"%s": 1, "\\u0062uy_in": 2, "buy_in": 3}', "buy_in"),
}


def _everything(redis_client: Any) -> dict[bytes, bytes]:
    """Every key in Redis and its value (DUMP): what a refused request must leave as it was."""
    return {key: redis_client.dump(key) for key in sorted(redis_client.scan_iter())}


@pytest.mark.parametrize(("method", "template", "member", "as_operator"), OPERATIONS)
@pytest.mark.parametrize("where", list(REPEATS))
def test_a_repeated_member_is_refused_naming_it_and_writes_nothing(
    api: Api,
    redis_client: Any,
    method: str,
    template: str,
    member: str,
    as_operator: bool,
    where: str,
) -> None:
    table = api.table()
    player = api.seat(table, "p0")["token"]
    api.seat(table, "p1")
    path = template.format(
        table_id=table, seat=0, player_id="p0", webhook_id="wh_x", delivery_id="dl_x"
    )
    text, repeated = REPEATS[where]
    body = text.replace("%s", member) if where != "at the top" else text % (member, member)
    named = repeated.replace("%s", member)
    before = _everything(redis_client)
    response = api.call(
        method,
        path,
        token=OPERATOR if as_operator else player,
        headers={"Content-Type": "application/json"},
        data=body.encode(),
    )
    assert response.status_code == 400, response.text
    assert response.headers["Content-Type"] == "application/problem+json"
    problem = response.json()
    assert problem["title"] == "Bad Request" and problem["status"] == 400
    assert problem["type"] == "https://guts.example/problems/bad-request"
    assert problem["detail"] == f'the body repeats the member "{named}" in one object'
    assert _everything(redis_client) == before


def test_a_repeated_buy_in_seats_nobody_and_the_body_without_the_repeat_seats_the_player(
    api: Api,
) -> None:
    table = api.table()
    json = {"Content-Type": "application/json"}
    path = f"/v1/tables/{table}/players"
    repeated = b'{"player_id": "x", "buy_in": 1, "buy_in": 100000000}'
    assert api.call("POST", path, headers=json, data=repeated).status_code == 400
    assert api.get(f"/v1/tables/{table}").json()["seats"] == []
    once = b'{"player_id": "x", "buy_in": 100}'
    assert api.call("POST", path, headers=json, data=once).status_code == 201
    assert [s["stack"] for s in api.get(f"/v1/tables/{table}").json()["seats"]] == [100]
