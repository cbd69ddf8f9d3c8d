"""Reading requests: each small body is validated by its schema once per process, and what
is remembered can neither skip a check nor be changed by a view; the request being handled
is current for the helpers only while it is."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from marshmallow import ValidationError

from service.api import flask_request_bypass, http, marshmallow_bypass, schemas
from service.api.errors import BadRequest


class Counted(schemas.Declare):
    """The declare schema, counting the bodies it validates."""

    loads = 0

    def load(self, data: Any, **kwargs: Any) -> Any:
        Counted.loads += 1
        return super().load(data, **kwargs)


@pytest.fixture
def app() -> Iterator[Flask]:
    marshmallow_bypass.forget()
    Counted.loads = 0
    app = Flask("bodies")
    app.config[http.REMEMBER_BODIES] = True  # as create_app sets it with the shortcut on
    yield app
    marshmallow_bypass.forget()


def _load(app: Flask, schema: Any, body: bytes, content_type: str = "application/json") -> Any:
    with app.test_request_context(
        "/", method="POST", data=body, headers={"Content-Type": content_type}
    ) as context:
        token = flask_request_bypass.ENVIRON.set(context.request.environ)  # the shortcut's path
        try:
            return http.load_body(schema)
        finally:
            flask_request_bypass.ENVIRON.reset(token)


def test_a_body_seen_before_is_not_validated_again_and_each_caller_gets_a_copy(app: Flask):
    schema = Counted()
    first = _load(app, schema, b'{"decision": "in"}')
    first["decision"] = "changed by a view"
    second = _load(app, schema, b'{"decision": "in"}')
    assert second == {"decision": "in"}
    assert Counted.loads == 1
    assert _load(app, schema, b'{"decision": "out"}') == {"decision": "out"}
    assert Counted.loads == 2


def test_a_remembered_body_still_needs_a_json_content_type(app: Flask):
    _load(app, schemas.DECLARE, b'{"decision": "in"}')
    with pytest.raises(BadRequest) as refused:
        _load(app, schemas.DECLARE, b'{"decision": "in"}', content_type="text/plain")
    assert refused.value.status == 415


def test_the_same_bytes_are_validated_again_for_another_schema(app: Flask):
    assert _load(app, schemas.EMPTY, b"{}") == {}
    assert _load(app, schemas.DEAL, b"{}") == {"client_seed": ""}
    with pytest.raises(ValidationError):
        _load(app, schemas.DECLARE, b"{}")


def test_refused_bodies_and_nested_results_are_not_remembered(app: Flask):
    schema = Counted()
    for _ in range(2):
        with pytest.raises(ValidationError):
            _load(app, schema, b'{"decision": "maybe"}')
    assert Counted.loads == 2
    draw = b'{"discard": ["As", "Kd"]}'
    first = _load(app, schemas.DRAW, draw)
    first["discard"].append("2c")
    assert _load(app, schemas.DRAW, draw) == {"discard": ["As", "Kd"]}
    assert list(marshmallow_bypass._validated) == []


def test_what_is_remembered_is_bounded(app: Flask, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(marshmallow_bypass, "MAX_ENTRIES", 3)
    for seed in range(7):
        _load(app, schemas.DEAL, b'{"client_seed": "%d"}' % seed)
        assert len(marshmallow_bypass._validated) <= 3
    marshmallow_bypass._validated.clear()
    padded = b'{"client_seed": "x"' + b" " * marshmallow_bypass.MAX_BODY + b"}"
    assert _load(app, schemas.DEAL, padded) == {"client_seed": "x"}
    assert list(marshmallow_bypass._validated) == []


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
