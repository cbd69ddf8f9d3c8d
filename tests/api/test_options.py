"""OPTIONS on any path answers with `Allow`: on every path the API serves, 204 naming exactly
the methods openapi.yaml documents for it (with HEAD beside GET, and OPTIONS); on ``*``, 204
naming every method the API serves; on a path it does not serve, 404 problem+json with an
empty `Allow` (no method is allowed there)."""

from __future__ import annotations

import http.client
import re
from urllib.parse import urlsplit

import pytest

from tests.apiclient import Api
from tests.spec import load_spec

SPEC = load_spec()
METHODS = {"get", "put", "post", "delete", "patch"}
PARAMETERS = {
    "table_id": "t1",
    "seat": "0",
    "language": "en",
    "hand": "1",
    "asset": "play.js",
    "player_id": "p0",
    "webhook_id": "wh_x",
    "delivery_id": "dl_x",
    "audit_id": "a1",
    "report_id": "r1",
}


def _documented(item: dict[str, object]) -> set[str]:
    methods = {method.upper() for method in item if method in METHODS}
    return methods | ({"HEAD"} if "GET" in methods else set()) | {"OPTIONS"}


def _serving(path: str) -> set[str]:
    """The methods documented for `path`, by every template it matches (``/v1/reports/
    collusion`` is also a report's id)."""
    methods: set[str] = set()
    for template, item in SPEC["paths"].items():
        if re.fullmatch(re.sub(r"\\\{[a-z_]+\\\}", "[^/]+", re.escape(template)), path):
            methods |= _documented(item)
    return methods


def _allowed(value: str) -> set[str]:
    return {method.strip() for method in value.split(",") if method.strip()}


@pytest.mark.parametrize("template", list(SPEC["paths"]))
def test_options_on_a_path_the_api_serves_is_204_allowing_its_documented_methods(
    api: Api, template: str
) -> None:
    path = template.format(**PARAMETERS)
    response = api.call("OPTIONS", path, token=None)
    assert response.status_code == 204, (path, response.text)
    assert response.content == b""
    assert _documented(SPEC["paths"][template]) <= _serving(path)
    assert _allowed(response.headers["Allow"]) == _serving(path)


@pytest.mark.parametrize("path", ["/nope", "/v1/tables/t1/players/not-a-seat", "/v1/nothing/"])
def test_options_on_a_path_the_api_does_not_serve_is_404_allowing_nothing(
    api: Api, path: str
) -> None:
    response = api.call("OPTIONS", path, token=None)
    assert response.status_code == 404
    assert response.headers["Content-Type"] == "application/problem+json"
    assert response.headers["Allow"] == ""


def test_options_on_the_server_as_a_whole_names_every_method_it_serves(api: Api) -> None:
    where = urlsplit(api.base)
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=10)
    try:
        conn.request("OPTIONS", "*")
        response = conn.getresponse()
        assert response.status == 204, response.read()
        every = set().union(*(_documented(item) for item in SPEC["paths"].values()))
        assert _allowed(response.headers["Allow"]) == every
    finally:
        conn.close()
