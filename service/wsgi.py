"""The WSGI entry point: ``gunicorn service.wsgi:app`` (settings come from the environment,
REDIS_URL and GUTS_LOG_LEVEL included; ``guts serve`` sets them before starting gunicorn). Add
``-c python:service.processes.gunicorn_conf``, as ``guts serve`` does, for the workers to share
their
tables' newest events (see service/tables/state_cache.py), for gunicorn's own log lines in the
service's JSON format, and for problem+json answers to requests gunicorn refuses; without it
each worker keeps its own events and gunicorn logs and refuses in its own formats."""

from __future__ import annotations

import gc

from service.api.app import create_app
from service.config import Settings
from service.logs import configure_logging

settings = Settings.from_env()
configure_logging(settings.log_level)
app = create_app(settings)
# What is loaded by now (the modules, the rules' tables, the app) lives as long as the worker:
# frozen, the collector's full collections no longer walk it (Python's gc.freeze). Measured
# in one process playing bench_http's hands (2026-12-01: tests/bench/bench_request_cost.py's,
# --gevent, each collection timed through gc.callbacks): 12.5 us a request went to the
# collector, 2.4 us frozen (of ~520 us a request).
gc.freeze()
