"""The service's log: one line per record, as written (the records are JSON already), on
stderr, under the logger ``guts``."""

from __future__ import annotations

import logging
import sys


def configure_logging() -> None:
    """Send the ``guts`` logger's records to stderr (once per process)."""
    service = logging.getLogger("guts")
    if not service.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        service.addHandler(handler)
        service.setLevel(logging.INFO)
        service.propagate = False
