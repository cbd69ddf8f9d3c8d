"""The WSGI entry point: ``gunicorn service.wsgi:app`` (settings come from the environment,
REDIS_URL included; ``guts serve`` sets it before starting gunicorn)."""

from __future__ import annotations

from service.api.app import create_app

app = create_app()
