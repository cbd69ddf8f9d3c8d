"""The Flask app factory: wiring, request ids and logs, metrics, probes, the spec."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis
from flask import Flask, Request, Response
from flask.sessions import NullSession, SessionInterface
from prometheus_client import (
    CONTENT_TYPE_LATEST,
)

from service.application import TableService
from service.application.errors import StoreUnavailable
from service.config import Settings
from service.infrastructure import (
    REDIS_ERRORS,
    TableServiceParts,
    build_table_service,
    feed_confirmation,
    quarantine_list,
    store_client,
    vitals_of,
)
from service.logs import LEVELS

from . import errors
from .auth import Authenticator
from .docs import docs
from .edges import allow_on_options, cors, no_content_options, not_modified
from .feed import Feed
from .flask_request_bypass import CurrentEnviron
from .gauges import FromRedis, Sampler, redis_pool_use
from .health import Readiness, probe_client
from .http import SERVICES
from .json import dumps
from .observed import (
    Metrics,
    Observed,
    remember_route,
    shared_metrics,
)
from .play_page import play
from .rate_limits import RateLimits, counted_late
from .routes import BLUEPRINTS
from .services import Services
from .stream_slots import StreamSlots, default_capacity, inherited_slots

SPEC_PATH = Path(__file__).parent / "openapi.yaml"
"""The contract, installed with the package (in a checkout, a link to the top's openapi.yaml)."""


def _token_secret(settings: Settings, client: redis.Redis) -> bytes | Callable[[], bytes]:
    """GUTS_TOKEN_SECRET, or one kept in Redis so every worker and restart shares it (read
    when first needed: a worker starts while Redis is away, and says 503 until it is back)."""
    if settings.token_secret:
        return settings.token_secret.encode()
    key = f"{settings.key_prefix}:token-secret"

    def shared() -> bytes:
        try:
            client.set(key, secrets.token_hex(32), nx=True)
            value = client.get(key)
        except REDIS_ERRORS as error:
            raise StoreUnavailable(f"Redis is unreachable: {error}") from error
        assert value is not None
        return value if isinstance(value, bytes) else str(value).encode()

    return shared


class _NoSessions(SessionInterface):
    """The API keeps no sessions (callers send a bearer credential each time): every request
    gets the same empty, read-only session. (Flask's public extension point, not a shortcut
    around it; without it, Flask's cookie sessions cost 2.1%, 5.2%, 13.6% of declare
    throughput in three runs of tests/bench/bench_request_plumbing.py, +20.9% in a fourth on
    an overloaded machine.)"""

    _none = NullSession()

    def open_session(self, app: Flask, request: Request) -> NullSession:
        return self._none

    def save_session(self, app: Flask, session: Any, response: Response) -> None:
        """Nothing to save."""


class _Guts(Flask):
    """Flask, answering OPTIONS on a route with 204 (`service.api.edges.no_content_options`)
    through the method Flask offers for it, and deciding once per function whether it must
    be run as async (`ensure_sync`, which Flask says to override)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._sync: dict[Callable[..., Any], Callable[..., Any]] = {}

    def make_default_options_response(self) -> Response:
        return no_content_options(super().make_default_options_response().allow)

    def ensure_sync(self, func: Callable[..., Any]) -> Callable[..., Any]:
        """Flask's answer for `func`, found once per function: Flask asks for every view and
        hook on every request, and its answer (an inspection of the function's code) never
        changes."""
        known = self._sync.get(func)
        if known is None:
            known = self._sync[func] = super().ensure_sync(func)
        return known


REDIS_CONNECTIONS = 32
"""Redis connections one worker's redis-py pool opens at most (the store's hot commands have
as many of their own: service/eventlog/redis_py_bypass.py); past that a request waits for one
(up to `REDIS_WAIT_S`). Each holds ~43 KB of buffers, so a burst of hundreds of streams opening
at once must not leave a connection each behind (it did: 70 KB per idle subscriber)."""
REDIS_WAIT_S = 10.0
"""How long a request waits for a free Redis connection before it fails (503)."""


def create_app(
    settings: Settings,
    *,
    redis_client: redis.Redis | None = None,
) -> Flask:
    """Build the app for `settings` (the entry point reads them from the environment).
    `settings.shortcuts_off` names the shortcuts around libraries the app leaves out (each
    measured worth it): `flask_request_bypass` (off: every request read through Flask) and
    `redis_py_bypass` (off: the store's commands through redis-py's public API)."""
    if redis_client is None:
        if not settings.redis_url:
            raise RuntimeError("REDIS_URL is not set (guts serve starts a Redis of its own)")
        # Under gevent workers hundreds of requests and streams may want a connection at once:
        # they wait for one (redis-py's default pool refused them with "Too many connections").
        redis_client = store_client(
            settings, connections=REDIS_CONNECTIONS, wait_s=REDIS_WAIT_S, fail_fast=True
        )
    app = _Guts("guts")
    app.session_interface = _NoSessions()
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    auth = Authenticator(
        settings.operator_keys, settings.auditor_keys, _token_secret(settings, redis_client)
    )
    built = build_table_service(settings, redis_client, auth.issue, shared=True)
    usecases, archive = built.usecases, built.archive
    feed, slots = _live_feed(settings, redis_client, built)
    limits = RateLimits(settings)
    services = Services(settings, redis_client, auth, usecases, feed, limits)
    app.extensions["guts"] = services
    metrics = Metrics()
    built.tables.on_conflict = metrics.conflicts.inc
    built.wallet.on_call = metrics.wallet_call
    app.extensions["guts_metrics"] = metrics
    _add_routes(app, settings, usecases)
    if "flask_request_bypass" not in settings.shortcuts_off:
        app.wsgi_app = CurrentEnviron(  # type: ignore[method-assign]
            app.wsgi_app, {SERVICES: services}, settings.max_body_bytes
        )
    access_log = LEVELS[settings.log_level] <= logging.INFO
    sampler = Sampler(
        metrics.registry,
        streams=lambda: slots.held,
        redis_pool=lambda: redis_pool_use(redis_client),
        postgres_pool=None if archive is None else archive.pool.use,
    )
    feed.on_change = sampler.open_streams.set
    vitals = vitals_of(settings, redis_client)
    shared = FromRedis(redis_client, settings.key_prefix, vitals, archived=archive is not None)
    app.wsgi_app = Observed(  # type: ignore[method-assign]
        app.wsgi_app, metrics, access_log=access_log, after=sampler.after_request
    )

    _add_operations(app, settings, sampler, metrics, lambda: shared_metrics(built.index, shared))
    return app


def _live_feed(
    settings: Settings, redis_client: redis.Redis, built: TableServiceParts
) -> tuple[Feed, StreamSlots]:
    """The live feed of the tables' events, and the node's stream slots it holds one of per
    open stream (made by `guts serve` before it forked the workers, or this process's own).
    It learns of new events from the store's notices, and with GUTS_REDIS_MIN_REPLICAS sends
    one only once the replicas hold it (`feed_confirmation`)."""
    slots = inherited_slots() or StreamSlots(
        settings.stream_capacity
        or default_capacity(settings.worker_connections, settings.web_workers)
    )
    feed = Feed(
        redis_client,
        built.usecases,
        built.store.notices,
        slots=slots,
        keep_alive_s=settings.stream_keep_alive_s,
        confirm=feed_confirmation(built.store),
    )
    return feed, slots


def _add_routes(app: Flask, settings: Settings, usecases: TableService) -> None:
    """The error answers, the blueprints and what every answer goes through on its way out."""
    errors.install(app)
    for blueprint in BLUEPRINTS:
        app.register_blueprint(blueprint)
    app.register_blueprint(play)
    app.register_blueprint(docs)
    app.teardown_request(remember_route)
    app.after_request(not_modified)
    if settings.cors_origins:
        app.after_request(cors(settings.cors_origins))
    app.after_request(allow_on_options(app))  # (after_request functions run last first)
    app.after_request(counted_late(usecases.count_request, errors.too_many))


def _add_operations(
    app: Flask,
    settings: Settings,
    sampler: Sampler,
    metrics: Metrics,
    shared_text: Callable[[], bytes],
) -> None:
    """The routes of the service itself: the probes (/readyz, /healthz, /livez), /metrics
    (this process's, then `shared_text`: what every node reads from Redis) and the spec."""
    probe = probe_client(settings)
    readiness = Readiness(
        settings, probe, vitals_of(settings, probe), quarantine_list(settings, probe)
    )

    def ready() -> Response:
        status, checks, quarantined = readiness.report()
        body = {"status": status, "checks": checks, "quarantined": quarantined}
        code = 200 if status == "ok" else 503
        response = Response(dumps(body), code, mimetype="application/json")
        if code == 503:
            response.headers["Retry-After"] = errors.RETRY_AFTER_S
        response.headers["Cache-Control"] = "no-store"
        return response

    app.add_url_rule("/readyz", "readyz", ready, methods=["GET"])
    app.add_url_rule("/healthz", "healthz", ready, methods=["GET"])

    @app.get("/livez")
    def livez() -> Response:
        unchecked = {"checked": False}
        checks = dict.fromkeys(("redis", "postgres", "dispatcher", "archive"), unchecked)
        body = {"status": "ok", "checks": checks, "quarantined": []}
        response = Response(dumps(body), 200, mimetype="application/json")
        response.headers["Cache-Control"] = "no-store"
        return response

    @app.get("/metrics")
    def metrics_view() -> Response:
        sampler.sample()
        return Response(metrics.render() + shared_text(), content_type=CONTENT_TYPE_LATEST)

    @app.get("/openapi.yaml")
    def spec() -> Response:
        return Response(SPEC_PATH.read_bytes(), mimetype="application/yaml")
