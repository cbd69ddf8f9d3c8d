"""What the browser tests share: the keys of the served node, one person's browser, reading
the API beside the pages, axe-core run inside a page, and screenshots for a person to look at."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import requests

from tests.test_cli import Served

OPERATOR = "browser-test-operator-key"
AUDITOR = "browser-test-auditor-key"
WAIT_MS = 15_000  # how long the page may take to show what is asked (a bound, not a timing)
SIZES = {"wide": (1280, 800), "phone": (390, 844)}
"""The screen sizes the screenshots are taken at."""


class Person:
    """One browser context with one page, every URL the page asked for, every script error and
    every answer 404 (a missing file, the favicon included)."""

    def __init__(self, browser: Any, contexts: list[Any], **options: Any) -> None:
        # Reduced motion: the countdown ring steps instead of gliding (its transition redrew
        # the page 60 times a second while a clock ran, in software here: a quarter of the
        # browser's CPU in tests/browser/test_play_protection.py).
        self.context = browser.new_context(**{"reduced_motion": "reduce", **options})
        contexts.append(self.context)
        self.urls: list[str] = []
        self.errors: list[str] = []
        self.missing: list[str] = []
        self.context.on("request", lambda request: self.urls.append(request.url))
        self.context.on(
            "response",
            lambda response: response.status == 404 and self.missing.append(response.url),
        )
        self.page = self.context.new_page()
        self.page.set_default_timeout(WAIT_MS)
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))

    def text(self, selector: str) -> str:
        return str(self.page.locator(selector).inner_text())


def playwright_expect() -> Any:
    """Playwright's `expect`, waiting up to WAIT_MS (a feed reconnecting after a restart backs
    off up to 10 s)."""
    from playwright.sync_api import expect

    expect.set_options(timeout=WAIT_MS)
    return expect


def need_the_live_feed(served: Served) -> None:
    """The page follows tables over the live feed (branch `stream`); a build without it
    skips these tests, saying so, rather than failing on what it does not offer."""
    spec = requests.get(served.base + "/openapi.yaml", timeout=10).text
    if "/v1/tables/{table_id}/stream-tickets:" not in spec:
        pytest.skip("BROWSER PLAY TESTS SKIPPED: this build has no live feed (stream-tickets)")


def seat_link(served: Served, table: str, seat: int, token: str) -> str:
    """A player's link to their seat in /play (the token in the fragment, never sent)."""
    return f"{served.base}/play#{urlencode({'table': table, 'seat': str(seat), 'token': token})}"


def get(served: Served, path: str, token: str) -> dict[str, Any]:
    response = requests.get(
        served.base + path, headers={"Authorization": f"Bearer {token}"}, timeout=10
    )
    assert response.status_code == 200, response.text
    return dict(response.json())


def post(served: Served, path: str, token: str, body: Any = None) -> dict[str, Any]:
    response = requests.post(
        served.base + path, json=body, headers={"Authorization": f"Bearer {token}"}, timeout=10
    )
    assert response.status_code < 300, response.text
    return dict(response.json())


def put(served: Served, path: str, token: str, body: Any) -> dict[str, Any]:
    response = requests.put(
        served.base + path, json=body, headers={"Authorization": f"Bearer {token}"}, timeout=10
    )
    assert response.status_code < 300, response.text
    return dict(response.json())


def axe_violations(page: Any) -> list[dict[str, Any]]:
    """axe-core's violations on the page as it is now: axe.min.js (from the
    axe-playwright-python package) is evaluated in the page through the DevTools protocol,
    which the page's Content-Security-Policy does not govern; the app never serves it."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    return list(results.response["violations"])


def screenshots_dir() -> Path:
    """Where the screenshots go (GUTS_SCREENSHOTS, else a folder under the system's temp)."""
    where = Path(os.environ.get("GUTS_SCREENSHOTS", "/tmp/guts-screenshots"))
    where.mkdir(parents=True, exist_ok=True)
    return where


def screenshot(page: Any, name: str, full_page: bool = True) -> Path:
    """The whole page (or, `full_page` False, the screen as a person sees it: a modal dialog
    over its backdrop) as a PNG, named for what it shows; printed so a person can find it."""
    path = screenshots_dir() / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    print(f"screenshot: {path}")
    return path
