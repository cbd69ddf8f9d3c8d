"""The Flask app factory: wiring, request ids and logs, metrics, probes, the spec."""

from __future__ import annotations

import logging
import os
import secrets
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import redis
from flask import Flask, Request, Response, request
from flask.sessions import NullSession, SessionInterface
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    CollectorRegistry,
    Counter,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from werkzeug.routing import Rule

from service.application import TableService
from service.audit.jobs import QueuedJobs
from service.config import Settings
from service.eventlog.due_index import DueIndex, QuarantineView
from service.eventlog.store import StoreUnavailable
from service.eventlog.table_list import TableList
from service.infrastructure import (
    archiver,
    event_store,
    ledger_of,
    open_archive,
    queue_client,
    store_client,
)
from service.logs import LEVELS, REQUEST_ID, json_line
from service.projections.follower import Follower
from service.projections.webhooks import WebhookStore
from service.tables import Tables
from service.tables.state_cache import StateCache, inherited

from . import errors
from .auth import Authenticator
from .docs import docs
from .edges import allow_on_options, cors, no_content_options, not_modified
from .feed import Feed
from .flask_request_bypass import CurrentEnviron
from .gauges import FromRedis, Sampler, WorkerProcesses, redis_pool_use
from .health import Readiness, probe_client
from .http import COMMAND, OUTCOME, SERVICES
from .json import dumps
from .play_page import play
from .rate_limits import RateLimits
from .routes import v1
from .services import Services

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
        except redis.RedisError as error:
            raise StoreUnavailable(f"Redis is unreachable: {error}") from error
        assert value is not None
        return value if isinstance(value, bytes) else str(value).encode()

    return shared


class _Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "guts_requests",
            "HTTP requests by endpoint and status",
            ["endpoint", "method", "status"],
            registry=self.registry,
        )
        self.commands = Counter(
            "guts_commands",
            "Table commands by type and outcome",
            ["command", "outcome"],
            registry=self.registry,
        )
        self.conflicts = Counter(
            "guts_version_conflicts",
            "Appends that lost the race to another command on the same table (decided again)",
            registry=self.registry,
        )
        self.latency = Histogram(
            "guts_request_seconds",
            "Request latency by endpoint",
            ["endpoint"],
            registry=self.registry,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
        )
        self._children: dict[tuple[Any, ...], tuple[Any, Any, Any]] = {}
        self._process_metrics = False

    def observe(
        self,
        endpoint: str,
        method: str,
        status: int,
        elapsed: float,
        command: str | None,
        outcome: str | None,
    ) -> None:
        """Count one request (label children are looked up once and kept)."""
        key = (endpoint, method, status, command, outcome)
        children = self._children.get(key)
        if children is None:
            children = (
                self.requests.labels(endpoint, method, str(status)),
                self.latency.labels(endpoint),
                self.commands.labels(command, outcome) if command else None,
            )
            self._children[key] = children
        children[0].inc()
        children[1].observe(elapsed)
        if children[2] is not None:
            children[2].inc()

    def render(self) -> bytes:
        """This process's metrics, or under gunicorn (``PROMETHEUS_MULTIPROC_DIR``) every
        worker's (summed by prometheus_client; the process metrics per worker, by pid)."""
        directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
        if directory:
            from prometheus_client import multiprocess

            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
            registry.register(WorkerProcesses(directory))
            registry.register(PLATFORM_COLLECTOR)
            return generate_latest(registry)
        if not self._process_metrics:
            ProcessCollector(registry=self.registry)
            self.registry.register(PLATFORM_COLLECTOR)
            self.registry.register(GC_COLLECTOR)
            self._process_metrics = True
        return generate_latest(self.registry)


class _Quarantined:
    """A collector of how many tables are quarantined right now (read from Redis when
    scraped, so every process reports the same)."""

    def __init__(self, index: DueIndex) -> None:
        self.index = index

    def collect(self) -> Iterator[GaugeMetricFamily]:
        try:
            count = float(len(self.index.quarantined()))
        except redis.RedisError:
            count = float("nan")
        yield GaugeMetricFamily(
            "guts_quarantined_tables",
            "Tables set aside because something stored about them does not load or parse",
            value=count,
        )


def _shared_metrics(index: DueIndex, shared: FromRedis) -> bytes:
    """The metrics read from Redis at each scrape (the same on every node)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Quarantined(index))
    registry.register(shared)
    return generate_latest(registry)


def access_line(fields: dict[str, Any]) -> None:
    """Write one access-log line to stderr, in the format of every log line
    (`service.logs.json_line`), at level info under the logger ``guts.access``: one
    write(2), no logging machinery, since it runs on every request. (Lines are far below
    PIPE_BUF, so lines from several workers writing to one pipe never interleave.)"""
    msg = f"{fields['method']} {fields['endpoint']} {fields['status']}"
    line = json_line(time.time(), "info", "guts.access", msg, fields)
    stream = sys.stderr
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (a test capturing stderr)
        stream.write(line.decode())
        return
    stream.flush()  # what went through sys.stderr before goes out first
    os.write(fd, line)


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
    through the method Flask offers for it."""

    def make_default_options_response(self) -> Response:
        return no_content_options(super().make_default_options_response().allow)


def request_id_of(environ: dict[str, Any]) -> str:
    """The client's ``X-Request-Id`` when it is 1-128 visible ASCII characters, else a new
    one (32 hex digits)."""
    sent = environ.get("HTTP_X_REQUEST_ID")
    if sent and len(sent) <= 128 and all("!" <= c <= "~" for c in sent):
        return str(sent)
    return uuid.uuid4().hex


class _Observed:
    """WSGI middleware around the Flask app: gives every request its id (``X-Request-Id``,
    answered on every response, set in `REQUEST_ID` for the log lines and problem bodies the
    request causes), times it, then counts it in the metrics and writes its access-log line.
    It reads what Flask found (the URL rule and its arguments) from the environ, where
    `_remember_route` leaves it before Flask lets go of the request, and whether a route ran
    a command, and how it went, from `COMMAND` and `OUTCOME` there."""

    def __init__(
        self,
        wsgi_app: Any,
        metrics: _Metrics,
        *,
        access_log: bool = True,
        after: Callable[[], None] | None = None,
    ) -> None:
        self.wsgi_app = wsgi_app
        self.metrics = metrics
        self.access_log = access_log
        self.after = after

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        started = time.perf_counter()
        statuses: list[str] = []
        request_id = request_id_of(environ)
        environ[REQUEST_ID_KEY] = request_id
        token = REQUEST_ID.set(request_id)

        def start(status: str, headers: Any, exc_info: Any = None) -> Any:
            statuses.append(status)
            headers = [(k, v) for k, v in headers if k.lower() != "x-request-id"]
            headers.append(("X-Request-Id", request_id))
            return start_response(status, headers, exc_info)

        try:
            return self.wsgi_app(environ, start)
        finally:  # (an exception Flask let through is answered 500 by the server)
            elapsed = time.perf_counter() - started
            self._observe(environ, int(statuses[-1][:3]) if statuses else 500, elapsed)
            REQUEST_ID.reset(token)
            if self.after is not None:
                self.after()

    def _observe(self, environ: dict[str, Any], status: int, elapsed: float) -> None:
        route: tuple[Rule | None, dict[str, Any]] = environ.get(ROUTE) or (None, {})
        rule, view_args = route
        endpoint = rule.rule if rule is not None else "unmatched"
        name = outcome = None
        if environ.get(COMMAND) and rule is not None and rule.endpoint:
            name = rule.endpoint.removeprefix("v1.")
            outcome = environ.get(OUTCOME) or ("ok" if status < 400 else "refused")
        method = environ.get("REQUEST_METHOD", "")
        self.metrics.observe(endpoint, method, status, elapsed, name, outcome)
        if not self.access_log:
            return
        access_line(
            {
                "method": method,
                "endpoint": endpoint,
                "status": status,
                "ms": round(elapsed * 1000, 2),
                "table_id": view_args.get("table_id"),
                "command": name,
                "request_id": environ[REQUEST_ID_KEY],
            }
        )


REQUEST_ID_KEY = "guts.request_id"
"""Where `_Observed` keeps the request's id, in the WSGI environ."""
ROUTE = "guts.route"
"""Where `_remember_route` keeps the request's URL rule and arguments, in the WSGI environ."""


def _remember_route(exc: BaseException | None) -> None:
    """Keep what Flask matched for `_Observed`, which runs after Flask has let go of the
    request (a teardown function: it runs for every request, whatever happened in it)."""
    request.environ[ROUTE] = (request.url_rule, request.view_args or {})


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
        redis_client = store_client(settings, connections=REDIS_CONNECTIONS, wait_s=REDIS_WAIT_S)
    queue = queue_client(settings, redis_client)  # RQ's (audits, reports)
    # The events trimmed from Redis are read from the archive, when there is one.
    archive = open_archive(settings)
    store = event_store(settings, redis_client, archive)
    app = _Guts("guts")
    app.session_interface = _NoSessions()
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    auth = Authenticator(
        settings.operator_keys, settings.auditor_keys, _token_secret(settings, redis_client)
    )
    # Stored events are shared with the sibling workers when the parent set that up (guts serve).
    where = redis_client.get_connection_kwargs()
    namespace = "|".join(str(where.get(k)) for k in ("host", "port", "path", "db"))
    namespace += f"|{settings.key_prefix}"
    cache = StateCache(shared=inherited(), namespace=namespace)
    index = DueIndex(redis_client, prefix=settings.key_prefix)
    listing = TableList(redis_client, prefix=settings.key_prefix)
    # Every read and command of a quarantined table is refused (409); one found unreadable
    # here is quarantined (service.eventlog.decoding).
    held = QuarantineView(index)
    tables = Tables(store, cache=cache, index=index, listing=listing, held=held)
    # The ledger is kept by the dispatchers' followers (with an archive, by its archiver);
    # this one catches a table up when a request needs it current (a page of one table, a
    # loss-limit decision, a page of its hands).
    ledger = ledger_of(settings, redis_client, archive)
    follower = Follower(
        store,
        [ledger if archive is None else archiver(store, archive)],
        index=index,
        chained=archive is None,  # (the archive checks the chain itself)
    )
    usecases = TableService(
        tables,
        QueuedJobs(redis_client, queue, settings.key_prefix),
        issue_token=auth.issue,
        sandbox=settings.sandbox,
        ledger=ledger,
        follower=follower,
        archive=archive,
        archiver=None if archive is None else follower,
        webhooks=WebhookStore(redis_client, prefix=settings.key_prefix),
    )
    feed = Feed(redis_client, usecases, store.notices)
    limits = RateLimits(settings)
    services = Services(settings, redis_client, tables, auth, usecases, feed, limits)
    app.extensions["guts"] = services
    metrics = _Metrics()
    tables.on_conflict = metrics.conflicts.inc
    app.extensions["guts_metrics"] = metrics
    errors.install(app)
    app.register_blueprint(v1)
    app.register_blueprint(play)
    app.register_blueprint(docs)

    app.teardown_request(_remember_route)
    app.after_request(not_modified)
    if settings.cors_origins:
        app.after_request(cors(settings.cors_origins))
    app.after_request(allow_on_options(app))  # (after_request functions run last first)
    if "flask_request_bypass" not in settings.shortcuts_off:
        app.wsgi_app = CurrentEnviron(  # type: ignore[method-assign]
            app.wsgi_app, {SERVICES: services}, settings.max_body_bytes
        )
    access_log = LEVELS[settings.log_level] <= logging.INFO
    sampler = Sampler(
        metrics.registry,
        streams=feed.subscribers,
        redis_pool=lambda: redis_pool_use(redis_client),
        postgres_pool=None if archive is None else archive.pool.use,
    )
    shared = FromRedis(redis_client, settings.key_prefix, archived=archive is not None)
    app.wsgi_app = _Observed(  # type: ignore[method-assign]
        app.wsgi_app, metrics, access_log=access_log, after=sampler.after_request
    )

    readiness = Readiness(settings, probe_client(settings))

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
        return Response(
            metrics.render() + _shared_metrics(index, shared), content_type=CONTENT_TYPE_LATEST
        )

    @app.get("/openapi.yaml")
    def spec() -> Response:
        return Response(SPEC_PATH.read_bytes(), mimetype="application/yaml")

    return app
