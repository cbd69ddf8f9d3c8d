"""The WSGI entry point: ``gunicorn service.wsgi:app`` (settings come from the environment,
REDIS_URL included; ``guts serve`` sets it before starting gunicorn). Add
``-c python:service.gunicorn_conf``, as ``guts serve`` does, for the workers to share their
tables' newest events (see service/snapshots.py); without it each worker keeps its own."""

from __future__ import annotations

from service.api.app import create_app
from service.config import Settings

app = create_app(Settings.from_env())
