"""The reference web client (`/play`): one HTML page, its script modules and its style sheet,
shipped as package data under `web/` and served as they are (no build step, no templating).

The page uses only the public API, from the browser. Every response here carries a
Content-Security-Policy that lets the page load only its own files and talk only to this
origin (no inline script or style, no other host, no framing), and sends no referrer: a
player's seat link keeps its token in the URL's fragment, which browsers never send, and the
page never copies it into a request URL.
"""

from __future__ import annotations

from importlib.resources import files

from flask import Blueprint, Response
from werkzeug.exceptions import NotFound

play = Blueprint("play", __name__)

_WEB = files("service.api") / "web"
ASSETS = {
    "play.js": "text/javascript",
    "fairness.js": "text/javascript",
    "play.css": "text/css",
}
"""The files under /play/ (anything else is 404), with their media types."""

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


def _file(name: str, mimetype: str) -> Response:
    response = Response(_WEB.joinpath(name).read_bytes(), mimetype=mimetype)
    response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Cache-Control"] = "no-cache"
    return response


@play.get("/play")
def page() -> Response:
    return _file("play.html", "text/html")


@play.get("/play/<asset>")
def asset(asset: str) -> Response:
    if asset not in ASSETS:
        raise NotFound(f"no file {asset!r} under /play/")
    return _file(asset, ASSETS[asset])
