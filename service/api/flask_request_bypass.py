"""A shortcut around Flask's `request` proxy (and Werkzeug's request object): the routes'
helpers read the caller, headers and body straight from the WSGI environ, which
`CurrentEnviron` makes current for the length of a request.

Worth it, measured (2026-11-26, ``tests/bench/bench_http.py --shortcuts``: real gunicorn and
wrk, the service with every shortcut and without this one taking turns with the baseline, 8
rounds; docs/benchmarks.md): without it the web workers spend 8.4% more CPU per declare
(median per round, +4.3% to +9.3%; 1,401 against 1,312 us), the worth that decides, since
the machine's two cores are saturated; declare throughput, which the shared machine swung by
half from one run to the next, changed by a median -4.4% (-25.2% to +11.7%; 652 against 705
declares/s, baseline 2,538); in two earlier runs (with a third shortcut, since removed) 7.8%
and 7.4%. It relies on what Werkzeug
reads from the environ (``HTTP_*`` headers, ``CONTENT_LENGTH``, ``CONTENT_TYPE``,
``wsgi.input``), so Flask and Werkzeug are pinned to the versions it was checked against
(3.1; pyproject.toml). ``GUTS_SHORTCUTS_OFF=flask_request_bypass`` leaves it out, and CI runs
the API's tests on the plain path too (``pytest tests/api --plain-requests``).
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

ENVIRON: ContextVar[dict[str, Any] | None] = ContextVar("guts.environ", default=None)
"""The WSGI environ of the request being handled, while `CurrentEnviron` handles it."""


class CurrentEnviron:
    """WSGI middleware: makes each request's environ current (`current`), with `values`
    (the app's services, ...) put in it, and its body limit."""

    def __init__(self, wsgi_app: Any, values: dict[str, Any], max_body_bytes: int | None):
        self.wsgi_app = wsgi_app
        self.values = values
        self.max_body_bytes = max_body_bytes

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        environ.update(self.values)
        environ[_LIMIT] = self.max_body_bytes
        token = ENVIRON.set(environ)
        try:
            return self.wsgi_app(environ, start_response)
        finally:
            ENVIRON.reset(token)


_LIMIT = "guts.max_body_bytes"
_BODY = "guts.body"


def current() -> dict[str, Any] | None:
    """The environ of the request being handled, or None outside `CurrentEnviron` (then
    read the request through Flask)."""
    return ENVIRON.get()


def header(environ: dict[str, Any], name: str) -> str | None:
    """A request header, as Werkzeug would read it, without building the headers object."""
    value: str | None = environ.get("HTTP_" + name.upper().replace("-", "_"))
    return value


def method(environ: dict[str, Any]) -> str:
    """The request's method, as Werkzeug reads it."""
    return str(environ.get("REQUEST_METHOD", "GET")).upper()


def mimetype(environ: dict[str, Any]) -> str:
    """The body's media type, lowercase, without parameters."""
    content_type: str = environ.get("CONTENT_TYPE", "")
    return content_type.partition(";")[0].strip().lower()


def body(environ: dict[str, Any]) -> bytes | None:
    """The request's body, read once, when it has a Content-Length within the limit; None
    otherwise (no length, too long: Werkzeug then applies the limit, 413, and the framing)."""
    cached: bytes | None = environ.get(_BODY)
    if cached is None:
        length: str = environ.get("CONTENT_LENGTH") or ""
        limit = environ.get(_LIMIT)
        if not length.isdigit() or (limit is not None and int(length) > limit):
            return None
        cached = environ["wsgi.input"].read(int(length)) if int(length) else b""
        environ[_BODY] = cached
    return cached
