"""The web pages over the public API: the reference table client (`/play`) and the back office
(`/admin`), each one HTML page, with the script modules, style sheets, icon and string tables
they share under `/play/`, shipped as package data under `web/` and served as they are (no
build step, no templating).

The pages use only the public API, from the browser. Every response here carries a
Content-Security-Policy that lets a page load only its own files and talk only to this origin
(no inline script or style, no other host, no framing), and sends no referrer: a player's seat
link keeps its token in the URL's fragment, which browsers never send, and the pages never copy
a credential into a request URL. `rule-options.json` is the one file made here: every ruleset
option as a form offers it (`service.rules.ruleset.option_kinds`), so the table-creation form
never falls behind the rules.
"""

from __future__ import annotations

import json
from importlib.resources import files

from flask import Blueprint, Response
from werkzeug.exceptions import NotFound

from service.rules.ruleset import option_kinds

play = Blueprint("play", __name__)

_WEB = files("service.api") / "web"
ASSETS = {
    "play.js": "text/javascript",
    "admin.js": "text/javascript",
    "admin-panels.js": "text/javascript",
    "admin-audits.js": "text/javascript",
    "admin-limits.js": "text/javascript",
    "api.js": "text/javascript",
    "feed.js": "text/javascript",
    "i18n.js": "text/javascript",
    "cards.js": "text/javascript",
    "words.js": "text/javascript",
    "seat.js": "text/javascript",
    "protection.js": "text/javascript",
    "create.js": "text/javascript",
    "verify.js": "text/javascript",
    "fairness.js": "text/javascript",
    "play.css": "text/css",
    "admin.css": "text/css",
    "favicon.svg": "image/svg+xml",
}
"""The files under /play/ (anything else is 404), with their media types."""

LANGUAGES = ("en", "es")
"""The string tables under /play/strings/ (`web/strings/<language>.json`)."""

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


def _response(body: bytes, mimetype: str) -> Response:
    response = Response(body, mimetype=mimetype)
    response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Cache-Control"] = "no-cache"
    return response


def _file(name: str, mimetype: str) -> Response:
    return _response(_WEB.joinpath(name).read_bytes(), mimetype)


@play.get("/play")
def page() -> Response:
    return _file("play.html", "text/html")


@play.get("/admin")
def admin_page() -> Response:
    return _file("admin.html", "text/html")


@play.get("/play/<asset>")
def asset(asset: str) -> Response:
    if asset == "rule-options.json":
        return _response(json.dumps(option_kinds()).encode(), "application/json")
    if asset not in ASSETS:
        raise NotFound(f"no file {asset!r} under /play/")
    return _file(asset, ASSETS[asset])


@play.get("/play/strings/<language>.json")
def strings(language: str) -> Response:
    if language not in LANGUAGES:
        raise NotFound(f"no strings for {language!r}")
    return _file(f"strings/{language}.json", "application/json")
