"""HTTP conveniences around every response: conditional GETs (`If-None-Match` -> 304), CORS
for the browser origins an operator lists (`GUTS_CORS_ORIGINS`; none by default), and `Allow`
on every answer to OPTIONS.

All are Flask `after_request` functions: they look at the finished response and add to it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from flask import Flask, Response, request

from . import flask_request_bypass as bypass

ALLOWED_HEADERS = (
    "Authorization, Content-Type, If-Match, If-None-Match, Idempotency-Key, Last-Event-ID"
)
EXPOSED_HEADERS = "ETag, Location, Retry-After, Idempotent-Replayed, WWW-Authenticate"


def not_modified(response: Response) -> Response:
    """A 304 without a body for a GET whose `If-None-Match` names the response's ETag (the
    table's version: a table, its events or a hand read at the same version by the same
    caller are the same). `Vary: Authorization`: each caller sees the table their way."""
    if _method() not in ("GET", "HEAD") or response.status_code != 200:
        return response
    etag = response.headers.get("ETag")
    if etag is None:
        return response
    response.vary.add("Authorization")
    asked = request.headers.get("If-None-Match")
    if asked is None:
        return response
    tags = {t.strip().removeprefix("W/") for t in asked.split(",")}
    if etag in tags or "*" in tags:
        unchanged = Response(status=304)
        unchanged.headers["ETag"] = etag
        unchanged.vary.add("Authorization")
        return unchanged
    return response


def _method() -> str:
    """The request's method (from the WSGI environ when the app's shortcut around Flask's
    `request` makes it current: every answer asks, twice)."""
    env = bypass.current()
    return request.method if env is None else bypass.method(env)


def cors(origins: Iterable[str]) -> Callable[[Response], Response]:
    """An `after_request` function allowing the browser origins `origins` (exact matches,
    never `*`: the API's credentials are bearer tokens, which a page sends itself). A
    preflight (`OPTIONS` with `Access-Control-Request-Method`) learns the methods the route
    allows and the request headers the API reads."""
    allowed = frozenset(origins)

    def add_cors(response: Response) -> Response:
        origin = request.headers.get("Origin")
        response.vary.add("Origin")
        if origin is None or origin not in allowed:
            return response
        response.headers["Access-Control-Allow-Origin"] = origin
        if request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers:
            methods = response.headers.get("Allow", "")
            response.headers["Access-Control-Allow-Methods"] = methods
            response.headers["Access-Control-Allow-Headers"] = ALLOWED_HEADERS
            response.headers["Access-Control-Max-Age"] = "600"
        else:
            response.headers["Access-Control-Expose-Headers"] = EXPOSED_HEADERS
        return response

    return add_cors


def no_content_options(allowed: Iterable[str]) -> Response:
    """The answer to OPTIONS on a path the API serves: 204, no body, and `Allow` naming the
    methods of the path (Flask's own answer is a 200 with an empty text/html body)."""
    response = Response(status=204)
    response.allow.update(allowed)
    del response.headers["Content-Type"]
    return response


def allow_on_options(app: Flask) -> Callable[[Response], Response]:
    """An `after_request` function that makes every answer to OPTIONS carry `Allow`: on a path
    the API serves it is there already (`no_content_options`); on ``*`` (the server as a
    whole) the answer is 204 naming every method the API serves anywhere; on a path it does
    not serve the answer stays 404 (problem+json) with an empty `Allow` (RFC 9110 10.2.1: the
    resource allows no method)."""
    everywhere: list[str] = []

    def add_allow(response: Response) -> Response:
        if _method() != "OPTIONS" or "Allow" in response.headers:
            return response
        if request.environ.get("RAW_URI", request.environ.get("REQUEST_URI")) == "*":
            if not everywhere:
                methods = {m for rule in app.url_map.iter_rules() for m in rule.methods or ()}
                everywhere.extend(sorted(methods))
            return no_content_options(everywhere)
        response.headers["Allow"] = ""
        return response

    return add_allow
