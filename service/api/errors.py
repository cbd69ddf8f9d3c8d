"""Every error becomes an RFC 9457 problem+json response here, and only here.

Details say what was wrong with the request and never echo secrets (cards of other seats,
seeds, keys, tokens). Unexpected exceptions are logged with a reference and answered 500
without internals.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from flask import Flask, Response, current_app
from marshmallow import ValidationError
from werkzeug.exceptions import HTTPException

from service.application.errors import (
    ArchiveUnavailable,
    AuditNotFound,
    BadCursor,
    Contention,
    CorruptLog,
    CorruptRecord,
    Forbidden,
    HandNotFound,
    IdempotencyReused,
    LedgerUnavailable,
    LogUnreadable,
    OutcomeUnknown,
    OverLimit,
    PreconditionFailed,
    ReportNotFound,
    StoreError,
    StoreRefusesWrites,
    StoreUnavailable,
    TableExists,
    TableNotFound,
    WalletNotSet,
    WalletOutcomeUnknown,
    WalletRefused,
    WebhookNotFound,
)
from service.infrastructure import REDIS_ERRORS, store_error
from service.logs import REQUEST_ID
from service.rules.errors import (
    GutsError,
    InvalidCard,
    InvalidRules,
    RuleViolation,
    UnknownSeat,
)

from .auth import Unauthorized
from .feed import ShuttingDown
from .json import dumps
from .rate_limits import RateLimited, over_limit
from .refusal import ApiError
from .stream_slots import StreamsFull

log = logging.getLogger("guts.api")
PROBLEM = "application/problem+json"
RETRY_AFTER_S = "1"
"""What a 503 asks the client to wait before it tries again (seconds): Redis restarts and
busy tables pass in about that."""
STREAMS_RETRY_AFTER_S = "5"
"""What a stream refused at a node's capacity asks the client to wait before it tries this
node again (another node may take it at once)."""


def problem_body(
    status: int, title: str, detail: str, request_id: str | None = None, **extra: Any
) -> bytes:
    """The JSON of a problem: its type is named after its title; `request_id` (default: the
    request's being handled, when there is one) says which request it answers."""
    slug = title.lower().replace(" ", "-")
    body = {
        "type": f"https://guts.example/problems/{slug}",
        "title": title,
        "status": status,
        "detail": detail,
        **extra,
    }
    request_id = request_id or REQUEST_ID.get()
    if request_id is not None:
        body["request_id"] = request_id
    return dumps(body)


def too_many(exc: RateLimited) -> Response:
    """The 429 of a request over a rate limit, saying when to try again."""
    log.warning("rate limited: %s", exc.detail)
    response = problem(429, "Too Many Requests", exc.detail)
    response.headers["Retry-After"] = str(exc.retry_after_s)
    return response


def problem(status: int, title: str, detail: str, **extra: Any) -> Response:
    """A problem+json response."""
    response = Response(
        problem_body(status, title, detail, **extra), status=status, mimetype=PROBLEM
    )
    if status == 401:
        response.headers["WWW-Authenticate"] = 'Bearer realm="guts"'
    if status == 503:
        response.headers["Retry-After"] = RETRY_AFTER_S
    return response


def field_errors(messages: Mapping[Any, Any], prefix: str = "") -> dict[str, list[str]]:
    """marshmallow's nested messages as one map from each bad field's dotted path to its
    messages: `{"stacked_deck": {"0": {"value": {"1": [...]}}}}` becomes
    `{"stacked_deck.0.value.1": [...]}` (a map's entries add `key` or `value`, a list's items
    their index). A top-level field keeps its name, and a field inside another is named by a
    dotted path as the rules' own refusals name it (`stacked_deck.0`), so every 422's `errors`
    has one shape: a map of string lists, which every client generator can type (a recursive
    union of lists and maps, marshmallow's shape, is beyond the most used ones)."""
    flat: dict[str, list[str]] = {}
    for key, value in messages.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(field_errors(value, f"{path}."))
        else:
            flat[path] = [str(message) for message in value]
    return flat


class BadRequest(ApiError):
    """A malformed request outside the schemas (bad JSON, bad header, bad query)."""

    def __init__(self, detail: str, status: int = 400, field: str | None = None) -> None:
        super().__init__(detail)
        self.detail, self.status, self.field = detail, status, field


_TITLES = {413: "Payload Too Large", 415: "Unsupported Media Type", 422: "Validation Failed"}
"""The title of a refusal that is not a plain 400, by its status."""

# exception class -> (status, title); the first match in this order wins.
_GUTS: list[tuple[type[GutsError], int, str]] = [
    (TableNotFound, 404, "Not Found"),
    (UnknownSeat, 404, "Not Found"),
    (HandNotFound, 404, "Not Found"),
    (AuditNotFound, 404, "Not Found"),
    (ReportNotFound, 404, "Not Found"),
    (WebhookNotFound, 404, "Not Found"),
    (TableExists, 409, "Conflict"),
    (WalletNotSet, 409, "No Wallet"),
    (WalletRefused, 409, "Wallet Refused"),
    (WalletOutcomeUnknown, 502, "Wallet Outcome Unknown"),
    (LogUnreadable, 409, "Log Failed Verification"),
    (PreconditionFailed, 412, "Precondition Failed"),
    (IdempotencyReused, 422, "Idempotency Key Reused"),
    (Contention, 503, "Busy"),
    (LedgerUnavailable, 503, "Unavailable"),
    (OutcomeUnknown, 503, "Outcome Unknown"),
    (InvalidRules, 422, "Invalid Rules"),
    (InvalidCard, 422, "Invalid Cards"),
    (RuleViolation, 409, "Not Allowed Now"),
]


def _guts_error(exc: GutsError) -> Response:
    status, title = next(
        ((status, title) for cls, status, title in _GUTS if isinstance(exc, cls)),
        (422, "Invalid Command"),
    )
    extra: dict[str, Any] = {}
    if exc.field is not None and status == 422:
        extra["errors"] = {exc.field: [exc.detail]}
    return problem(status, title, exc.detail, **extra)


def _validation(exc: ValidationError) -> Response:
    messages = exc.messages if isinstance(exc.messages, dict) else {"_schema": exc.messages}
    return problem(
        422, "Validation Failed", "the request is not valid", errors=field_errors(messages)
    )


def _bad_request(exc: BadRequest) -> Response:
    extra = {"errors": {exc.field: [exc.detail]}} if exc.field else {}
    return problem(exc.status, _TITLES.get(exc.status, "Bad Request"), exc.detail, **extra)


def _unavailable(exc: StoreUnavailable) -> Response:
    log.error("store unavailable: %s", type(exc).__name__)
    if isinstance(exc, ArchiveUnavailable):
        return problem(503, "Unavailable", "the archive cannot be reached; retry")
    if isinstance(exc, StoreRefusesWrites):
        detail = "the event store refuses writes (Redis is out of memory or cannot persist)"
        return problem(503, "Unavailable", f"{detail}; nothing was written; retry")
    return problem(503, "Unavailable", "the event store cannot be reached; retry")


def _redis(exc: Exception) -> Response:
    """A redis-py error that reached the API as it was (a store that reads or writes Redis
    without turning its errors into the store's): Redis away, failing over or refusing writes
    is a 503, anything else unexpected."""
    found = store_error(exc)
    if isinstance(found, StoreUnavailable):
        return _unavailable(found)
    return _unexpected(exc)


def _corrupt(exc: CorruptLog) -> Response:
    # (Tables quarantines what it finds unreadable; this is a read outside it.)
    log.error("unreadable table: %s", exc)
    return problem(
        409,
        "Log Failed Verification",
        "the table's stored log or state failed verification; it is set aside until an "
        "operator repairs it",
    )


def _streams_full(exc: StreamsFull) -> Response:
    response = problem(503, "Unavailable", str(exc))
    response.headers["Retry-After"] = STREAMS_RETRY_AFTER_S
    return response


def _http(exc: HTTPException) -> Response:
    status = exc.code or 500
    title, detail = exc.name, exc.description or exc.name
    if status == 413:
        title = _TITLES[413]
        limit = current_app.config["MAX_CONTENT_LENGTH"]
        detail = f"the body is larger than the limit of {limit} bytes"
    response = problem(status, title, detail)
    for name, value in exc.get_headers():
        if name.lower() != "content-type":  # e.g. Allow on a 405
            response.headers[name] = value
    return response


def _unexpected(exc: Exception) -> Response:
    ref = uuid.uuid4().hex[:12]
    log.exception("unexpected error ref=%s", ref, extra={"ref": ref})
    return problem(500, "Internal Server Error", f"unexpected error (ref {ref})")


HANDLERS: list[tuple[type[Exception], Callable[[Any], Response]]] = [
    (GutsError, lambda exc: _guts_error(exc)),
    (ValidationError, _validation),
    (BadRequest, _bad_request),
    (BadCursor, lambda exc: _bad_request(BadRequest(str(exc), 422, "after"))),
    (Unauthorized, lambda exc: problem(401, "Unauthorized", str(exc))),
    (Forbidden, lambda exc: problem(403, "Forbidden", str(exc))),
    (StoreUnavailable, _unavailable),
    (CorruptLog, _corrupt),
    (CorruptRecord, lambda exc: problem(409, "Record Failed Verification", exc.detail)),
    (RateLimited, lambda exc: too_many(exc)),
    (OverLimit, lambda exc: too_many(over_limit(exc))),
    (ShuttingDown, lambda exc: problem(503, "Unavailable", f"{exc}; retry")),
    (ApiError, lambda exc: problem(exc.status, exc.title, str(exc))),
    (StreamsFull, _streams_full),
    (HTTPException, _http),
    (StoreError, _unexpected),
    *((kind, _redis) for kind in REDIS_ERRORS),
    (Exception, _unexpected),
]
"""Each error root (and the subclasses answered apart) and its answer; Flask picks the
handler of the nearest class in an exception's MRO."""


def install(app: Flask) -> None:
    """Register the handlers on `app`."""
    for kind, handler in HANDLERS:
        app.register_error_handler(kind, handler)
