"""The WSGI entry point: ``gunicorn service.wsgi:app`` (settings come from the environment,
REDIS_URL and GUTS_LOG_LEVEL included; ``guts serve`` sets them before starting gunicorn). Add
``-c python:service.processes.gunicorn_conf``, as ``guts serve`` does, for the workers to share
their
tables' newest events (see service/tables/state_cache.py), for gunicorn's own log lines in the
service's JSON format, and for problem+json answers to requests gunicorn refuses; without it
each worker keeps its own events and gunicorn logs and refuses in its own formats."""

from __future__ import annotations

from service.api.app import create_app
from service.config import Settings
from service.logs import configure_logging

settings = Settings.from_env()
configure_logging(settings.log_level)
app = create_app(settings)
