"""The interactive API reference (`/docs`): Swagger UI over `/openapi.yaml`.

Swagger UI's files come with an installed package (``swagger-ui-bundle-v2``, pinned in
pyproject.toml) and are served from here, under `/docs/`; the page and the script that starts
Swagger UI (its usual inline script, made a file) are ours, under ``web/``. Nothing is loaded
from another host, and every response carries the Content-Security-Policy of `/play`.

That policy allows images from this origin only, and Swagger UI's style sheet draws a few
icons (the select arrow, the copy button, the model toggle, a checkbox's tick) as ``data:``
SVG URLs. So its style sheet is served with each of those taken out into a file of its own,
``/docs/icon-N.svg`` (the same SVG, unchanged), and the rule pointing there (`_split_css`).
"""

from __future__ import annotations

import functools
import re
from importlib.resources import files
from typing import Any
from urllib.parse import unquote

from flask import Blueprint, Response
from swagger_ui_bundle import swagger_ui_path  # type: ignore[import-untyped]
from werkzeug.exceptions import NotFound

from .play_page import CONTENT_SECURITY_POLICY

docs = Blueprint("docs", __name__)

_WEB = files("service.api") / "web"
ASSETS: dict[str, tuple[Any, str]] = {
    "swagger-ui-bundle.js": (swagger_ui_path, "text/javascript"),
    "swagger-ui.css": (swagger_ui_path, "text/css"),
    "favicon-32x32.png": (swagger_ui_path, "image/png"),
    "docs.js": (_WEB, "text/javascript"),
    "docs.css": (_WEB, "text/css"),
}
"""The files under /docs/ (anything else is 404): where each is, and its media type."""


def _file(data: bytes, mimetype: str, cache: str = "no-cache") -> Response:
    response = Response(data, mimetype=mimetype)
    response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Cache-Control"] = cache
    return response


@docs.get("/docs")
def page() -> Response:
    return _file(_WEB.joinpath("docs.html").read_bytes(), "text/html")


_DATA_SVG = re.compile(r'url\("data:image/svg\+xml;charset=utf-8,((?:[^"\\]|\\.)*)"\)')
"""A ``data:`` SVG URL in Swagger UI's style sheet (its quotes inside escaped as ``\\"``)."""
_PACKAGED = "public, max-age=86400"
"""Swagger UI's files change only with the package: a day's cache (about 1.5 MB)."""


@functools.cache
def _split_css() -> tuple[bytes, tuple[bytes, ...]]:
    """Swagger UI's style sheet with its ``data:`` SVG icons made URLs of this server, and
    the icons (icon N is served as ``/docs/icon-N.svg``)."""
    css = swagger_ui_path.joinpath("swagger-ui.css").read_text()
    icons: list[bytes] = []

    def out(match: re.Match[str]) -> str:
        icons.append(unquote(match.group(1).replace('\\"', '"')).encode())
        return f'url("/docs/icon-{len(icons) - 1}.svg")'

    return _DATA_SVG.sub(out, css).encode(), tuple(icons)


@docs.get("/docs/<asset>")
def asset(asset: str) -> Response:
    icon = re.fullmatch(r"icon-(\d{1,3})\.svg", asset)
    if icon is not None and int(icon.group(1)) < len(_split_css()[1]):
        return _file(_split_css()[1][int(icon.group(1))], "image/svg+xml", _PACKAGED)
    if asset not in ASSETS:
        raise NotFound(f"no file {asset!r} under /docs/")
    if asset == "swagger-ui.css":
        return _file(_split_css()[0], "text/css", _PACKAGED)
    where, mimetype = ASSETS[asset]
    cache = _PACKAGED if where is swagger_ui_path else "no-cache"
    return _file(where.joinpath(asset).read_bytes(), mimetype, cache)
