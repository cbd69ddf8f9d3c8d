"""What ``guts serve`` checks before it starts anything: that every module its children load
imports (standard library only here, so that the check itself cannot fail to import)."""

from __future__ import annotations

import importlib

SERVED_MODULES = {
    "service.processes.gunicorn_overrides": "gunicorn's gevent worker and logger",
    "service.api.app": "the API",
    "workers.dispatcher": "the dispatcher",
    "workers.worker": "the RQ worker",
    "psycopg": "the archive's PostgreSQL driver",
}
"""What the children of ``guts serve`` import (each module, and what it is for). The modules
that have an effect when imported (``service.processes.gunicorn_conf`` patches the standard library,
``service.wsgi`` builds the app) are left out: what they import is imported here."""

DISTRIBUTIONS = {"yaml": "pyyaml", "psycopg_binary": "psycopg[binary]", "psycopg_c": "psycopg[c]"}
"""Distributions whose name is not the module they give."""


def missing_dependency(modules: dict[str, str] = SERVED_MODULES) -> str | None:
    """One line naming the distribution that is missing, when one of `modules` (and so a
    child of ``guts serve``) would fail to import; None when all of them import.

    Without this check a missing dependency shows as a child dying at start with a
    traceback further up the log (gunicorn: ``class uri ... invalid or not found``)."""
    for module, what in modules.items():
        try:
            importlib.import_module(module)
        except ImportError as error:
            return missing_line(error, f"{what} ({module})")
    return None


def missing_line(error: ImportError, what: str) -> str:
    """One line saying that `what` cannot start for `error`, naming the distribution that is
    missing when a module of one is."""
    name = (error.name or "").partition(".")[0]
    if name in ("", "service", "workers"):  # not a dependency that is missing
        return f"cannot start: {what} does not import: {error}"
    distribution = DISTRIBUTIONS.get(name, name)
    return (
        f"cannot start: {what} needs the Python distribution {distribution!r}, which is not "
        f"installed: reinstall guts with its dependencies, or add it (pip install "
        f"'{distribution}')"
    )
