"""Reading requests and writing responses, for the routes: the caller, bodies, a command's
conditions (If-Match, Idempotency-Key), and the response that says a use case's `Outcome`
(this module alone maps what a use case did to HTTP: its status, body and headers).

Through Flask's `request` and `g`; or, in an app built with its measured shortcut
`flask_request_bypass` (the default), from the WSGI environ.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from flask import Response, current_app, g, request
from marshmallow import Schema

from service.application import Caller, Conditions, Outcome

from . import flask_request_bypass as bypass
from .auth import Unauthorized
from .errors import BadRequest
from .json import RefusedJson, dumps, loads
from .rate_limits import QUOTA, QUOTA_TABLE
from .services import Services

IDEMPOTENCY_KEY = re.compile(r"^[\x21-\x2b\x2d-\x7e]{1,128}$")
"""1-128 visible ASCII characters but the comma: servers join repeated headers with commas,
so a comma means the request sent two keys (refused, 400)."""
COMMAND = "guts.command"
"""Set in the WSGI environ when the request runs a table command (for its log line)."""
OUTCOME = "guts.outcome"
"""... and its outcome when it went through (ok, replayed); the app's middleware reads both."""
SERVICES = "guts.services"
"""Where the request shortcuts keep the app's `Services`, in the WSGI environ."""
_CALLER = "guts.caller"


def _environ() -> dict[str, Any]:
    return bypass.current() or request.environ


# Each helper looks up the request's environ once (`bypass.current()`: None on the plain path,
# through Flask) and hands it on to the ones it calls: a hand's request asked 14 times.


def services() -> Services:
    """What the routes work with (built once by `create_app`)."""
    return _services(bypass.current())


def _services(env: dict[str, Any] | None) -> Services:
    if env is not None:
        return env[SERVICES]  # type: ignore[no-any-return]
    return current_app.extensions["guts"]  # type: ignore[no-any-return]


def header(name: str) -> str | None:
    return _header(bypass.current(), name)


def _header(env: dict[str, Any] | None, name: str) -> str | None:
    return request.headers.get(name) if env is None else bypass.header(env, name)


def body_bytes() -> bytes:
    """The request's body, read once; 413, naming the limit, when it is larger than the
    limit, whether it says its length or comes in chunks."""
    return _body_bytes(bypass.current())


def _body_bytes(env: dict[str, Any] | None) -> bytes:
    found = None if env is None else bypass.body(env)
    if found is not None:
        return found
    environ = request.environ
    limit: int | None = current_app.config["MAX_CONTENT_LENGTH"]
    length = request.content_length
    if limit is not None and length is not None and length > limit:
        raise too_large(limit)
    if length is None and limit is not None:  # chunked: Werkzeug would cut it at the limit
        cached: bytes | None = environ.get(_UNSIZED)
        if cached is None:
            cached = environ[_UNSIZED] = _read_unsized(environ, limit)
        return cached
    return request.get_data(cache=True)


_UNSIZED = "guts.unsized_body"


def _read_unsized(environ: dict[str, Any], limit: int) -> bytes:
    """A body without a Content-Length (the server took its chunks apart and says so with
    ``wsgi.input_terminated``; otherwise there is none), read up to one byte past `limit`."""
    if not environ.get("wsgi.input_terminated"):
        return b""
    stream, parts, size = environ["wsgi.input"], [], 0
    while size <= limit:
        part = stream.read(limit + 1 - size)
        if not part:
            break
        parts.append(part)
        size += len(part)
    if size > limit:
        raise too_large(limit)
    return b"".join(parts)


def too_large(limit: int) -> BadRequest:
    """The refusal of a body over `limit` bytes."""
    return BadRequest(f"the body is larger than the limit of {limit} bytes", 413)


def caller() -> Caller:
    """The authenticated caller (401 when there is none), authenticated once per request,
    within the rate limits (429: `service.api.rate_limits`)."""
    env = bypass.current()
    found: Caller | None = g.get("caller") if env is None else env.get(_CALLER)
    if found is None:
        known = _services(env)
        environ = request.environ if env is None else env
        address = str(environ.get("REMOTE_ADDR") or "")
        credential = _header(env, "Authorization")
        try:
            found = known.auth.authenticate(credential)
        except Unauthorized:
            known.limits.failed_authentication(address)
            raise
        known.limits.authenticated(address)
        quota = known.limits.admit(found, credential or "", str(environ.get("REQUEST_METHOD")))
        if quota is not None:  # (counted where the command lands: rate_limits)
            environ[QUOTA], environ[QUOTA_TABLE] = quota, found.table_id
        if env is None:
            g.caller = found
        else:
            env[_CALLER] = found
    return found


def json_response(body: Any, status: int = 200, version: int | None = None) -> Response:
    response = Response(dumps(body), status, content_type="application/json")
    if version is not None:
        response.headers["ETag"] = f'"{version}"'
    return response


STATUS_OF_EFFECT = {"made": 201, "changed": 200, "found": 200, "started": 202, "removed": 204}
"""The status that says each effect of a use case (`service.application.values.Effect`)."""
PATH_OF_SUBJECT = {
    "table": "/v1/tables/{}",
    "webhook": "/v1/webhooks/{}",
    "audit": "/v1/audits/{}",
    "report": "/v1/reports/{}",
}
"""Where what an outcome is about can be read, by its kind."""


def render(outcome: Outcome) -> Response:
    """The response of a use case's outcome: the effect's status; the facts as the JSON body
    (none when something was removed), with the version as the ETag; the Location of what was
    made or started."""
    status = STATUS_OF_EFFECT[outcome.effect]
    if status == 204:
        response = Response(status=204)
    else:
        response = json_response(outcome.facts, status, outcome.version)
    if outcome.replayed:
        response.headers["Idempotent-Replayed"] = "true"
    subject = outcome.subject
    if subject is not None and outcome.effect in ("made", "started"):
        response.headers["Location"] = PATH_OF_SUBJECT[subject.kind].format(subject.id)
    env = _environ()
    if env.get(COMMAND):
        env[OUTCOME] = "replayed" if outcome.replayed else "ok"
    return response


def load_body(schema: Schema) -> dict[str, Any]:
    """The request's JSON body, validated (an empty body is an empty object)."""
    env = bypass.current()
    raw = _body_bytes(env)
    if raw:
        mimetype = request.mimetype if env is None else bypass.mimetype(env)
        if not mimetype.endswith("json"):
            raise BadRequest("the body must be JSON (Content-Type: application/json)", 415)
    data: Any = {}
    if raw:
        try:
            data = loads(raw)
        except RefusedJson as refused:  # valid JSON, but a name repeated in an object
            raise BadRequest(str(refused)) from None
        except ValueError:
            raise BadRequest("the body is not valid JSON") from None
    if not isinstance(data, dict):
        raise BadRequest("the body must be a JSON object", 422)
    loaded: dict[str, Any] = schema.load(data)
    return loaded


def if_match(env: dict[str, Any] | None) -> int | None:
    raw = _header(env, "If-Match")
    if raw is None:
        return None
    text = raw.strip().removeprefix("W/").strip('"')
    if not (text.isascii() and text.isdigit()) or len(text) > 15:
        raise BadRequest('If-Match must be a table version, such as "17"', field="If-Match")
    return int(text)


def idempotency(env: dict[str, Any] | None) -> tuple[str | None, str]:
    """The Idempotency-Key and a hash of who sent what where (the same key from another caller
    or with another body is a different request). Without a key there is nothing to hash."""
    key = _header(env, "Idempotency-Key")
    if key is None:
        return None, ""
    if not IDEMPOTENCY_KEY.fullmatch(key):
        raise BadRequest(
            "Idempotency-Key must be one header of 1-128 visible ASCII characters, no comma",
            field="Idempotency-Key",
        )
    digest = hashlib.sha256()
    for part in (request.method, request.path, _header(env, "Authorization") or ""):
        digest.update(part.encode() + b"\0")
    digest.update(_body_bytes(env))
    return key, digest.hexdigest()


def conditions(*, command: bool = True, versioned: bool = True) -> Conditions:
    """What the request asks of a command: its Idempotency-Key (with the request's hash) and,
    when `versioned`, its If-Match version. A `command` request is marked as one for its log
    line and metrics (from here on, a refusal counts as the command's)."""
    env = bypass.current()
    environ = request.environ if env is None else env
    key, request_hash = idempotency(env)
    if command:
        environ[COMMAND] = True
    expected = if_match(env) if versioned else None
    sender = _header(env, "Authorization") or ""
    return Conditions(expected, key, request_hash, sender, environ.get(QUOTA))
