"""Request plumbing shared by the views: the caller, bodies, headers, and running a command
through `Tables` (idempotency, If-Match)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from contextvars import ContextVar
from datetime import datetime
from typing import Any

from flask import Response, current_app, request
from marshmallow import Schema

from service.rules import events as ev
from service.rules.state import TableState
from service.tables import Result, Tables

from .auth import Principal
from .errors import BadRequest, NotFound
from .json import dumps, loads

TABLE_ID = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
IDEMPOTENCY_KEY = re.compile(r"^[\x21-\x7e]{1,128}$")
COMMAND = "guts.command"
"""Set in the WSGI environ by `run` when the request ran a table command (for the log)."""
PRINCIPAL = "guts.principal"
"""Where `principal` keeps the authenticated caller, in the WSGI environ."""
BODY = "guts.body"
"""Where `body_bytes` keeps the body it read, in the WSGI environ."""
OUTCOME = "guts.outcome"
"""... and its outcome when it went through (ok, replayed); the app's middleware reads both."""
SERVICES = "guts.services"
"""Where the app's middleware puts the app's `Services`, in the WSGI environ."""

ENVIRON: ContextVar[dict[str, Any] | None] = ContextVar("guts.environ", default=None)
"""The WSGI environ of the request being handled, set by the app's middleware for the length
of the request. The helpers here read the request from it: Flask's `request` proxy costs a
few Python calls per use, and a command used it a dozen times."""


def environ() -> dict[str, Any]:
    """The current request's WSGI environ (from Flask when the middleware did not run)."""
    found = ENVIRON.get()
    return found if found is not None else request.environ


def services() -> Any:
    found = environ().get(SERVICES)
    return found if found is not None else current_app.extensions["guts"]


def tables() -> Tables:
    return services().tables  # type: ignore[no-any-return]


def principal() -> Principal:
    """The authenticated caller (401 when there is none)."""
    env = environ()
    found: Principal | None = env.get(PRINCIPAL)
    if found is None:
        found = env[PRINCIPAL] = services().auth.authenticate(header("Authorization"))
    return found


def header(name: str) -> str | None:
    """A request header (read from the WSGI environ, as werkzeug would, without building the
    headers object)."""
    value: str | None = environ().get("HTTP_" + name.upper().replace("-", "_"))
    return value


def json_response(body: Any, status: int = 200, version: int | None = None) -> Response:
    response = Response(dumps(body), status, mimetype="application/json")
    if version is not None:
        response.headers["ETag"] = f'"{version}"'
    return response


def body_bytes() -> bytes:
    """The request's body, read once. A body with a Content-Length within the limit is read
    straight from the server's input stream; anything else (no length, too long) goes
    through werkzeug, which applies the limit (413) and the framing."""
    env = environ()
    cached: bytes | None = env.get(BODY)
    if cached is None:
        length = env.get("CONTENT_LENGTH") or ""
        limit = current_app.config["MAX_CONTENT_LENGTH"]
        if length.isdigit() and (limit is None or int(length) <= limit):
            cached = env["wsgi.input"].read(int(length)) if int(length) else b""
        else:
            cached = request.get_data(cache=True)
        env[BODY] = cached
    return cached


_VALIDATED_MAX_BODY = 256
_VALIDATED_MAX_ENTRIES = 1024
_validated: dict[tuple[Schema, bytes], dict[str, Any]] = {}
"""Small bodies this process has validated, by schema and bytes, with what the schema made
of them. The same few bodies (``{"decision": "in"}``, ``{}``) come again and again, and
running a schema costs more than the rest of reading the request. Only results made of
scalars are kept, and each caller gets its own copy, so a view cannot change what the next
request gets. At most `_VALIDATED_MAX_ENTRIES` entries (then it starts again, empty)."""
_SCALARS = (str, int, float, bool, type(None))


def load_body(schema: Schema) -> dict[str, Any]:
    """The request's JSON body, validated (an empty body is an empty object)."""
    raw = body_bytes()
    if raw:
        mimetype = environ().get("CONTENT_TYPE", "").partition(";")[0].strip().lower()
        if not mimetype.endswith("json"):
            raise BadRequest("the body must be JSON (Content-Type: application/json)", 415)
    known = _validated.get((schema, raw))
    if known is not None:
        return dict(known)
    data: Any = {}
    if raw:
        try:
            data = loads(raw)
        except ValueError:
            raise BadRequest("the body is not valid JSON") from None
    if not isinstance(data, dict):
        raise BadRequest("the body must be a JSON object", 422)
    loaded: dict[str, Any] = schema.load(data)
    if len(raw) <= _VALIDATED_MAX_BODY and all(isinstance(v, _SCALARS) for v in loaded.values()):
        if len(_validated) >= _VALIDATED_MAX_ENTRIES:
            _validated.clear()
        _validated[(schema, raw)] = dict(loaded)
    return loaded


def check_table_id(table_id: str) -> str:
    if not TABLE_ID.fullmatch(table_id):
        raise NotFound(f"no table {table_id!r}"[:100])
    return table_id


def if_match() -> int | None:
    raw = header("If-Match")
    if raw is None:
        return None
    text = raw.strip().removeprefix("W/").strip('"')
    if not (text.isascii() and text.isdigit()) or len(text) > 15:
        raise BadRequest('If-Match must be a table version, such as "17"', field="If-Match")
    return int(text)


def idempotency() -> tuple[str | None, str]:
    """The Idempotency-Key and a hash of who sent what where (the same key from another caller
    or with another body is a different request). Without a key there is nothing to hash."""
    key = header("Idempotency-Key")
    if key is None:
        return None, ""
    if not IDEMPOTENCY_KEY.fullmatch(key):
        raise BadRequest(
            "Idempotency-Key must be 1-128 visible ASCII characters", field="Idempotency-Key"
        )
    digest = hashlib.sha256()
    for part in (request.method, request.path, header("Authorization") or ""):
        digest.update(part.encode() + b"\0")
    digest.update(body_bytes())
    return key, digest.hexdigest()


Decide = Callable[[TableState, datetime], list[ev.Event]]
Respond = Callable[[TableState, list[ev.Event]], tuple[int, Any]]


def run(table_id: str, decide: Decide, respond: Respond, *, create: bool = False) -> Response:
    """Execute a command and answer with its (possibly replayed) response."""
    key, request_hash = idempotency()
    env = environ()
    env[COMMAND] = True
    result: Result = tables().execute(
        table_id,
        decide,
        respond,
        create=create,
        if_match=None if create else if_match(),
        idempotency_key=key,
        request_hash=request_hash,
    )
    env[OUTCOME] = "replayed" if result.replayed else "ok"
    body = result.body
    version = body.get("version") if isinstance(body, dict) else None
    response = json_response(body, result.status, version)
    if result.replayed:
        response.headers["Idempotent-Replayed"] = "true"
    return response
