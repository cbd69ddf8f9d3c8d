"""Reading requests: every body is validated by its schema (through the shortcut around
Flask's request, as the app reads them by default), and what one view makes of a body is its
own; the request being handled is current for the helpers only while it is."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from marshmallow import ValidationError

from service.api import flask_request_bypass, http, schemas
from service.api.errors import BadRequest


class Counted(schemas.Declare):
    """The declare schema, counting the bodies it validates."""

    loads = 0

    def load(self, data: Any, **kwargs: Any) -> Any:
        Counted.loads += 1
        return super().load(data, **kwargs)


@pytest.fixture
def app() -> Iterator[Flask]:
    Counted.loads = 0
    yield Flask("bodies")


def _load(app: Flask, schema: Any, body: bytes, content_type: str = "application/json") -> Any:
    with app.test_request_context(
        "/", method="POST", data=body, headers={"Content-Type": content_type}
    ) as context:
        token = flask_request_bypass.ENVIRON.set(context.request.environ)  # the shortcut's path
        try:
            return http.load_body(schema)
        finally:
            flask_request_bypass.ENVIRON.reset(token)


def test_every_body_is_validated_and_each_caller_gets_its_own(app: Flask):
    schema = Counted()
    first = _load(app, schema, b'{"decision": "in"}')
    first["decision"] = "changed by a view"
    second = _load(app, schema, b'{"decision": "in"}')
    assert second == {"decision": "in"}
    assert Counted.loads == 2
    assert _load(app, schema, b'{"decision": "out"}') == {"decision": "out"}
    assert Counted.loads == 3


def test_a_body_seen_before_still_needs_a_json_content_type(app: Flask):
    _load(app, schemas.DECLARE, b'{"decision": "in"}')
    with pytest.raises(BadRequest) as refused:
        _load(app, schemas.DECLARE, b'{"decision": "in"}', content_type="text/plain")
    assert refused.value.status == 415


def test_the_same_bytes_are_validated_again_for_another_schema(app: Flask):
    assert _load(app, schemas.EMPTY, b"{}") == {}
    assert _load(app, schemas.DEAL, b"{}") == {"client_seed": ""}
    with pytest.raises(ValidationError):
        _load(app, schemas.DECLARE, b"{}")


def test_refused_bodies_are_refused_each_time_and_nested_results_are_the_callers(app: Flask):
    schema = Counted()
    for _ in range(2):
        with pytest.raises(ValidationError):
            _load(app, schema, b'{"decision": "maybe"}')
    assert Counted.loads == 2
    draw = b'{"discard": ["As", "Kd"]}'
    first = _load(app, schemas.DRAW, draw)
    first["discard"].append("2c")
    assert _load(app, schemas.DRAW, draw) == {"discard": ["As", "Kd"]}
    padded = b'{"client_seed": "x"' + b" " * 256 + b"}"
    assert _load(app, schemas.DEAL, padded) == {"client_seed": "x"}


def test_the_request_being_handled_is_current_only_while_it_is(app: Flask):
    seen: list[Any] = []

    def inner(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        seen.append((flask_request_bypass.current(), http.services()))
        start_response("204 No Content", [])
        return []

    services = object()
    current = flask_request_bypass.CurrentEnviron(inner, {http.SERVICES: services}, None)
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/"}
    current(environ, lambda status, headers, exc_info=None: None)
    assert seen == [(environ, services)]
    assert flask_request_bypass.current() is None  # nothing left for the thread's next request
    with app.test_request_context("/elsewhere"):  # without the middleware: Flask's request
        assert flask_request_bypass.current() is None
        assert http._environ()["PATH_INFO"] == "/elsewhere"
