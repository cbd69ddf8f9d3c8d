"""gunicorn settings that ``guts serve`` adds to its command line (``-c python:...``).

The limits below bound what gunicorn reads of a request before the app sees it (so a client
cannot make a worker buffer an unbounded request line or header block); a request over them
is answered by ``service.gunicorn_overrides`` in problem+json (414, 431). Command-line options
(``GUNICORN_CMD_ARGS``) override them. README "Limits" and openapi.yaml name them.
"""

from __future__ import annotations

from typing import Any

from service.snapshots import share_between_workers

worker_class = "service.gunicorn_overrides.ProblemSyncWorker"

limit_request_line = 4094
"""Longest request line (method, target and version), bytes: gunicorn's default."""
limit_request_fields = 100
"""Most header fields in one request: gunicorn's default."""
limit_request_field_size = 8190
"""Longest header field (name and value), bytes: gunicorn's default."""

logger_class = "service.gunicorn_overrides.JsonLogger"
"""gunicorn's error log (and its access log, when one is asked for with --access-logfile) in
the service's JSON lines."""
access_log_format = '%(h)s "%(r)s" %(s)s %(B)s bytes %(D)s us'
"""Without gunicorn's own timestamp (every line has its ``ts``)."""


def on_starting(server: Any) -> None:
    """In the master, before any worker is forked: the memory where the workers will share the
    events they store (service/snapshots.py)."""
    share_between_workers()
