"""gunicorn settings that ``guts serve`` adds to its command line (``-c python:...``)."""

from __future__ import annotations

from typing import Any

from service.snapshots import share_between_workers


def on_starting(server: Any) -> None:
    """In the master, before any worker is forked: the memory where the workers will share the
    events they store (service/snapshots.py)."""
    share_between_workers()
