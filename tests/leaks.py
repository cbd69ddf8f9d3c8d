"""A pytest plugin that names the test behind a PostgreSQL connection left to the garbage
collector.

psycopg warns (ResourceWarning) when a connection still open is collected, but the warning
fires in whichever test the collector happens to run in, and says nothing of where the
connection was made: it failed unrelated tests in 2 of 4 CI runs (2026-11-26), and
pyproject.toml ignores it since. Here every connection remembers the test that was running
and the code that made it; one collected open is written down (a file per process in a
directory the controller makes, which xdist's workers inherit through the environment), and
the session's summary lists them, so a run in which it happens says who leaked.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import traceback
from pathlib import Path
from typing import Any

import pytest

_DIRECTORY = "GUTS_TEST_LEAKS_DIR"


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist)
        os.environ[_DIRECTORY] = tempfile.mkdtemp(prefix="guts-leaks-")
    _watch(Path(os.environ[_DIRECTORY]))


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return
    directory = Path(os.environ.pop(_DIRECTORY, ""))
    if not directory.name:
        return
    found = sorted(directory.glob("*.txt"))
    if found:
        terminalreporter.section("PostgreSQL connections left open to the garbage collector")
        for leak in found:
            terminalreporter.write(leak.read_text())
    shutil.rmtree(directory, ignore_errors=True)


def _watch(directory: Path) -> None:
    import psycopg

    made, collected = psycopg.Connection.__init__, psycopg.Connection.__del__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        made(self, *args, **kwargs)
        ours = [f for f in traceback.extract_stack()[:-1] if not _theirs(f.filename)]
        self._guts_made_in = (
            os.environ.get("PYTEST_CURRENT_TEST", "outside any test"),
            "".join(traceback.format_list(ours[-8:])),
        )

    def __del__(self: Any) -> None:
        try:
            if not self.closed and not hasattr(self, "_pool"):
                test, stack = getattr(self, "_guts_made_in", ("?", ""))
                with open(directory / f"{os.getpid()}.txt", "a") as out:
                    out.write(f"made in {test}, collected open:\n{stack}\n")
        except Exception:  # noqa: BLE001, S110 - a finalizer must not raise
            pass
        collected(self)

    psycopg.Connection.__init__ = __init__  # type: ignore[method-assign]
    psycopg.Connection.__del__ = __del__  # type: ignore[method-assign]


def _theirs(filename: str) -> bool:
    """A frame of psycopg or of the test runner (not what made the connection)."""
    return any(
        f"{os.sep}{name}{os.sep}" in filename
        for name in ("psycopg", "_pytest", "pluggy", "xdist", "execnet")
    )
