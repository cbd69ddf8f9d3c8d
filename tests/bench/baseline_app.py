"""The benchmark's baseline: the least a Flask endpoint can do with Redis.

One endpoint, ``POST /baseline``, reads a small JSON body, makes ONE Redis round trip (an
``EVALSHA`` of a two-line script that counts the call) and answers with small JSON. Served
under the same gunicorn settings as the service, it shows what Flask, gunicorn and one
loopback round trip cost on this machine, so the service's numbers can be read against it::

    REDIS_URL=redis://127.0.0.1:6380/0 gunicorn tests.bench.baseline_app:app
"""

from __future__ import annotations

import os

import redis
from flask import Flask, Response, jsonify, request

COUNT_SCRIPT = "local n = redis.call('INCR', KEYS[1]) return n"


def create_app(redis_url: str | None = None) -> Flask:
    """The baseline app on `redis_url` (default: REDIS_URL)."""
    client = redis.Redis.from_url(redis_url or os.environ["REDIS_URL"])
    count = client.register_script(COUNT_SCRIPT)
    app = Flask("guts-baseline")

    @app.post("/baseline")
    def baseline() -> Response:
        body = request.get_json(silent=True) or {}
        calls = count(keys=["guts-bench:baseline-calls"])
        return jsonify({"calls": int(calls), "decision": body.get("decision")})

    return app


app = create_app()
