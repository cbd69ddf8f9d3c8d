"""Browser tests: Debian's headless Chromium driven by Playwright for Python, against real
servers. No browser is downloaded: Playwright launches Debian's old headless shell,
/usr/bin/chromium-headless-shell (`.ci/run` installs the `chromium-headless-shell` package when
it is missing), the build Playwright itself runs headless; the full browser, /usr/bin/chromium,
where only it is installed. The shell is Chromium's engine without the desktop browser around
it: the same pages cost it about half the CPU (19.4 against 38.1 CPU-s for
test_accessibility.py and test_admin.py, 2026-12-07), and the suite is bound by its CPU.

Without Chromium (or Playwright) every test here is skipped, and the run's summary says so in
a line of its own, so a green run without them cannot pass for a run with them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.pages import AUDITOR, OPERATOR, need_the_live_feed
from tests.test_cli import Served, _env

CHROMIUMS = ("/usr/bin/chromium-headless-shell", "/usr/bin/chromium")
CHROMIUM = os.environ.get("GUTS_TEST_CHROMIUM") or next(
    (path for path in CHROMIUMS if os.access(path, os.X_OK)), CHROMIUMS[0]
)
_skipped: list[str] = []


def _why_not() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    if not os.access(CHROMIUM, os.X_OK):
        return f"no Chromium at {CHROMIUM} (apt-get install -y chromium-headless-shell)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed (pip install -e '.[dev]')"
    return None


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One headless Chromium for the session."""
    why = _why_not()
    if why is not None:
        _skipped.append(why)
        pytest.skip(f"BROWSER TESTS SKIPPED: {why}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def contexts(browser: Any) -> Iterator[list[Any]]:
    """Browser contexts (each a separate profile: its own storage, like another person's
    browser) opened by the test with `contexts.append(browser.new_context())`; closed after."""
    opened: list[Any] = []
    yield opened
    for context in opened:
        context.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """`guts serve` with its own embedded Redis, as the README's first command runs it."""
    where = tmp_path_factory.mktemp("play")
    env = _env(GUTS_OPERATOR_KEYS=OPERATOR, GUTS_AUDITOR_KEYS=AUDITOR)
    server = Served(where / "data", where, env=env)
    try:
        server.wait_healthy()
        need_the_live_feed(server)
        yield server
    finally:
        server.kill()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _skipped:
        terminalreporter.section("browser tests", sep="!", red=True, bold=True)
        terminalreporter.line(f"BROWSER TESTS SKIPPED: {_skipped[0]}", red=True, bold=True)
