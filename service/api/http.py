"""Request plumbing shared by the views: the caller, bodies, headers, and running a command
through `Tables` (idempotency, If-Match)."""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from flask import Response, current_app, g, request
from marshmallow import Schema

from service.rules import events as ev
from service.rules.state import TableState
from service.tables import Result, Tables

from .auth import Principal
from .errors import BadRequest, NotFound
from .json import dumps, loads

log = logging.getLogger("guts.api")
TABLE_ID = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
IDEMPOTENCY_KEY = re.compile(r"^[\x21-\x7e]{1,128}$")
COMMAND = "guts.command"
"""Where `run` leaves the command's name (its endpoint) in the WSGI environ, for the log."""
OUTCOME = "guts.outcome"
"""... and its outcome when it went through (ok, replayed); the app's middleware reads both."""


def services() -> Any:
    return current_app.extensions["guts"]


def tables() -> Tables:
    return services().tables  # type: ignore[no-any-return]


def principal() -> Principal:
    """The authenticated caller (401 when there is none)."""
    if "principal" not in g:
        g.principal = services().auth.authenticate(request.headers.get("Authorization"))
    return g.principal  # type: ignore[no-any-return]


def json_response(body: Any, status: int = 200, version: int | None = None) -> Response:
    response = Response(dumps(body), status=status, mimetype="application/json")
    if version is not None:
        response.headers["ETag"] = f'"{version}"'
    return response


def load_body(schema: Schema) -> dict[str, Any]:
    """The request's JSON body, validated (an empty body is an empty object)."""
    raw = request.get_data(cache=True)
    if not raw:
        data: Any = {}
    else:
        if not request.mimetype or not request.mimetype.endswith("json"):
            raise BadRequest("the body must be JSON (Content-Type: application/json)", 415)
        try:
            data = loads(raw)
        except ValueError:
            raise BadRequest("the body is not valid JSON") from None
    if not isinstance(data, dict):
        raise BadRequest("the body must be a JSON object", 422)
    loaded: dict[str, Any] = schema.load(data)
    return loaded


def check_table_id(table_id: str) -> str:
    if not TABLE_ID.fullmatch(table_id):
        raise NotFound(f"no table {table_id!r}"[:100])
    return table_id


def if_match() -> int | None:
    raw = request.headers.get("If-Match")
    if raw is None:
        return None
    text = raw.strip().removeprefix("W/").strip('"')
    if not (text.isascii() and text.isdigit()) or len(text) > 15:
        raise BadRequest('If-Match must be a table version, such as "17"', field="If-Match")
    return int(text)


def idempotency() -> tuple[str | None, str]:
    """The Idempotency-Key and a hash of who sent what where (the same key from another caller
    or with another body is a different request). Without a key there is nothing to hash."""
    key = request.headers.get("Idempotency-Key")
    if key is None:
        return None, ""
    if not IDEMPOTENCY_KEY.fullmatch(key):
        raise BadRequest(
            "Idempotency-Key must be 1-128 visible ASCII characters", field="Idempotency-Key"
        )
    digest = hashlib.sha256()
    for part in (request.method, request.path, request.headers.get("Authorization", "")):
        digest.update(part.encode() + b"\0")
    digest.update(request.get_data(cache=True))
    return key, digest.hexdigest()


Decide = Callable[[TableState, datetime], list[ev.Event]]
Respond = Callable[[TableState, list[ev.Event]], tuple[int, Any]]


def run(table_id: str, decide: Decide, respond: Respond, *, create: bool = False) -> Response:
    """Execute a command and answer with its (possibly replayed) response."""
    key, request_hash = idempotency()
    environ = request.environ
    environ[COMMAND] = request.endpoint
    result: Result = tables().execute(
        table_id,
        decide,
        respond,
        create=create,
        if_match=None if create else if_match(),
        idempotency_key=key,
        request_hash=request_hash,
    )
    environ[OUTCOME] = "replayed" if result.replayed else "ok"
    body = result.body
    version = body.get("version") if isinstance(body, dict) else None
    response = json_response(body, result.status, version)
    if result.replayed:
        response.headers["Idempotent-Replayed"] = "true"
    return response
