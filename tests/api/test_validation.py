"""Bad input gets a clear 4xx problem+json naming the field, never a 500, never a partial write."""

from __future__ import annotations

import pytest

from tests.apiclient import Api


def _problem(response, status: int) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["Content-Type"].startswith("application/problem+json")
    body = response.json()
    assert {"type", "title", "status", "detail"} <= set(body)
    assert body["status"] == status
    return body


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"preset": "three-card", "colour": "red"}, "colour"),
        ({"preset": "nine-card"}, "preset"),
        ({"preset": "three-card", "ante": "1"}, "ante"),
        ({"preset": "three-card", "ante": 0}, "ante"),
        ({"preset": "three-card", "seats": 40}, "seats"),
        ({"preset": "three-card", "rules": {"cap_mode": "cap"}}, "cap"),
        ({"preset": "three-card", "rules": {"wobble": 1}}, "wobble"),
        ({"preset": "three-card", "rules": "loose"}, "rules"),
        ({"preset": "three-card", "table_id": "bad id!"}, "table_id"),
    ],
)
def test_bad_table_creation_names_the_field(api: Api, body, field):
    problem = _problem(api.post("/v1/tables", body), 422)
    assert field in problem["errors"]


def test_bad_json_and_wrong_shapes(api: Api):
    bad = api.call(
        "POST", "/v1/tables", headers={"Content-Type": "application/json"}, data=b"{nope"
    )
    _problem(bad, 400)
    _problem(api.post("/v1/tables", [1, 2]), 422)
    text = api.call("POST", "/v1/tables", headers={"Content-Type": "text/plain"}, data=b"hello")
    _problem(text, 415)


def test_a_huge_body_is_413(api: Api):
    huge = {"preset": "three-card", "rules": {"x": "y" * 200_000}}
    _problem(api.post("/v1/tables", huge), 413)


def test_bad_cards_in_a_stacked_deck_are_422_and_write_nothing(api: Api):
    table = api.table("three-card")
    api.seat(table, "a")
    api.seat(table, "b")
    before = api.get(f"/v1/tables/{table}").json()["version"]
    for stacked in (
        {"0": ["As", "As", "Kd"]},
        {"0": ["Xx", "As", "Kd"]},
        {"0": ["As", "Kd"]},
        {"5": ["As", "Kd", "Qh"]},
        {"0": ["As", "Kd", "Qh"], "1": ["As", "2c", "3c"]},
    ):
        problem = _problem(api.post(f"/v1/tables/{table}/deal", {"stacked_deck": stacked}), 422)
        assert problem["errors"]
    assert api.get(f"/v1/tables/{table}").json()["version"] == before


def test_bad_ids_and_unknown_tables_are_404(api: Api):
    _problem(api.get("/v1/tables/no-such-table"), 404)
    _problem(api.get("/v1/tables/" + "x" * 100), 404)
    _problem(api.post("/v1/tables/nope/deal"), 404)
    table = api.table("three-card")
    _problem(api.post(f"/v1/tables/{table}/players/3/chips", {"amount": 1}), 404)
    _problem(api.get(f"/v1/tables/{table}/hands/1"), 404)
    _problem(api.get("/v1/nowhere"), 404)


def test_bad_query_and_headers_are_4xx(api: Api):
    table = api.table("three-card")
    _problem(api.get(f"/v1/tables/{table}/events?after=-1"), 422)
    _problem(api.get(f"/v1/tables/{table}/events?limit=lots"), 422)
    _problem(api.post(f"/v1/tables/{table}/deal", headers={"If-Match": "soon"}), 400)
    _problem(api.post(f"/v1/tables/{table}/deal", headers={"Idempotency-Key": "a b"}), 400)


def test_a_player_body_with_wrong_types_is_422(api: Api):
    table = api.table("three-card")
    problem = _problem(api.post(f"/v1/tables/{table}/players", {"player_id": 7, "buy_in": -3}), 422)
    assert set(problem["errors"]) == {"player_id", "buy_in"}


def test_a_field_inside_another_is_named_by_its_dotted_path(api: Api):
    """`errors` is one flat map of messages in every 422, whether the schema or the rules
    refused the field: what clients generated from openapi.yaml type as a map of lists."""
    table = api.table("three-card")
    api.seat(table, "a")
    api.seat(table, "b")
    deal = f"/v1/tables/{table}/deal"
    by_schema = _problem(api.post(deal, {"stacked_deck": {"0": ["As", 3], "1": "Kd"}}), 422)
    assert by_schema["errors"] == {
        "stacked_deck.0.value.1": ["Not a valid string."],
        "stacked_deck.1.value": ["Not a valid list."],
    }
    by_rules = _problem(api.post(deal, {"stacked_deck": {"0": ["As", "As", "Kd"]}}), 422)
    assert list(by_rules["errors"]) == ["stacked_deck.0"]
    top_level = _problem(api.post(f"/v1/tables/{table}/players", {"player_id": ["a"]}), 422)
    assert top_level["errors"] == {
        "player_id": ["Not a valid string."],
        "buy_in": ["Missing data for required field."],
    }


def test_stacked_deck_is_refused_without_sandbox(production_api: Api):
    table = production_api.table("three-card")
    production_api.seat(table, "a")
    production_api.seat(table, "b")
    refused = production_api.post(
        f"/v1/tables/{table}/deal", {"stacked_deck": {"0": ["As", "Kd", "Qh"]}}
    )
    _problem(refused, 403)
    assert production_api.post(f"/v1/tables/{table}/deal", {}).status_code == 201


def test_an_empty_body_is_an_empty_object_and_white_space_is_not_json(api: Api):
    json = {"Content-Type": "application/json"}
    created = api.call("POST", "/v1/tables", headers=json, data=b"")
    assert created.status_code == 201, created.text
    assert created.json()["rules"]["cards"] == 3  # the default preset, as for {}
    _problem(api.call("POST", "/v1/tables", headers=json, data=b" \r\n\t "), 400)


def test_whole_numbers_written_with_a_fraction_part_of_zero_are_integers(api: Api):
    """JSON Schema's `integer` admits 100.0; the server takes what the schema says."""
    table = api.table("three-card")
    seated = api.post(f"/v1/tables/{table}/players", {"player_id": "a", "buy_in": 100.0})
    assert seated.status_code == 201, seated.text
    assert seated.json()["stack"] == 100 and isinstance(seated.json()["stack"], int)
    for wrong in (100.5, "100", True):
        refused = api.post(f"/v1/tables/{table}/players", {"player_id": "b", "buy_in": wrong})
        assert "buy_in" in _problem(refused, 422)["errors"]


def test_an_invalid_body_is_422_even_with_a_stale_if_match(api: Api):
    table = api.table("three-card")
    tokens = [api.seat(table, f"p{i}")["token"] for i in range(3)]
    api.post(f"/v1/tables/{table}/deal")
    stale = {"If-Match": '"1"'}
    for body in ({"decision": 5}, {"decision": "maybe"}, {}):
        answer = api.call(
            "POST", f"/v1/tables/{table}/declare", body, token=tokens[0], headers=stale
        )
        assert "decision" in _problem(answer, 422)["errors"]
    seat = api.call(
        "POST", f"/v1/tables/{table}/players", {"player_id": "x", "buy_in": -1}, headers=stale
    )
    assert "buy_in" in _problem(seat, 422)["errors"]
    # A well-formed command on a table that moved on is 412.
    well_formed = api.call(
        "POST", f"/v1/tables/{table}/players/0/chips", {"amount": 5}, headers=stale
    )
    _problem(well_formed, 412)


def test_unknown_query_parameters_are_refused_on_every_read(api: Api):
    table = api.table("three-card")
    for path in (f"/v1/tables/{table}?colour=red", f"/v1/tables/{table}/events?colour=red"):
        assert "colour" in _problem(api.get(path), 422)["errors"]
    tokens = [api.seat(table, f"p{i}")["token"] for i in range(2)]
    api.post(f"/v1/tables/{table}/deal")
    for token in tokens:
        api.post(f"/v1/tables/{table}/declare", {"decision": "out"}, token=token)
    api.post(f"/v1/tables/{table}/resolve")
    assert "colour" in _problem(api.get(f"/v1/tables/{table}/hands/1?colour=red"), 422)["errors"]
    assert api.get(f"/v1/tables/{table}/hands/1?format=phh").status_code == 200
    _problem(api.get(f"/v1/tables/{table}/hands/1?format=xml"), 400)


def test_each_refusal_has_the_title_of_its_status(api: Api):
    text = api.call("POST", "/v1/tables", headers={"Content-Type": "text/plain"}, data=b"hello")
    assert _problem(text, 415)["title"] == "Unsupported Media Type"
    shape = _problem(api.post("/v1/tables", [1, 2]), 422)
    assert shape["title"] == "Validation Failed"
    huge = _problem(api.post("/v1/tables", {"rules": {"x": "y" * 200_000}}), 413)
    assert huge["title"] == "Payload Too Large" and "65536 bytes" in huge["detail"]


def _raw(api: Api, headers: list[tuple[str, str]], chunks: list[bytes] | None = None):
    """A POST /v1/tables sent by hand: repeated headers, or a body in chunks."""
    import http.client
    import json

    host, port = api.base.split("//")[1].split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    connection.putrequest("POST", "/v1/tables")
    for name, value in headers:
        connection.putheader(name, value)
    if chunks is None:
        connection.putheader("Content-Length", "0")
        connection.endheaders()
    else:
        connection.putheader("Transfer-Encoding", "chunked")
        connection.endheaders()
        for chunk in chunks:
            connection.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        connection.send(b"0\r\n\r\n")
    response = connection.getresponse()
    status, body = response.status, json.loads(response.read())
    connection.close()
    return status, body


def test_a_chunked_body_over_the_limit_is_413_and_one_within_it_is_read_whole(api: Api):
    from tests.apiclient import OPERATOR

    auth = [("Authorization", f"Bearer {OPERATOR}"), ("Content-Type", "application/json")]
    big = b'{"rules": {"x": "' + b"y" * 100_000 + b'"}}'
    status, body = _raw(api, auth, [big[i : i + 8192] for i in range(0, len(big), 8192)])
    assert (status, body["title"]) == (413, "Payload Too Large") and "65536" in body["detail"]
    small = b'{"preset": "two-card", "ante": 2}'
    status, body = _raw(api, auth, [small[:10], small[10:]])
    assert status == 201 and body["rules"]["cards"] == 2 and body["rules"]["ante"] == 2


def test_two_idempotency_key_headers_are_refused(api: Api):
    from tests.apiclient import OPERATOR

    auth = ("Authorization", f"Bearer {OPERATOR}")
    status, body = _raw(api, [auth, ("Idempotency-Key", "a"), ("Idempotency-Key", "b")])
    assert status == 400 and "Idempotency-Key" in body["errors"]
    status, _ = _raw(api, [auth, ("Idempotency-Key", "a")])
    assert status == 201
