"""What the API records of each request: its id (``X-Request-Id``), its access-log line, and
the metrics of requests and commands (``/metrics``, beside `service.api.gauges`)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from flask import Request, request
from prometheus_client import (
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

from service.application.ports import QuarantineList
from service.infrastructure import REDIS_ERRORS
from service.logs import REQUEST_ID, json_line

from .gauges import FromRedis, WorkerProcesses
from .http import COMMAND, OUTCOME

WALLET_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
"""Seconds: a local wallet answers in about a millisecond, a casino's in tens; the timeout
(``GUTS_WALLET_TIMEOUT_S``) is 5 s by default."""


class Metrics:
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
        self.wallet_calls = Histogram(
            "guts_wallet_call_seconds",
            "Calls of the casinos' wallets made here, by call (debit, rollback, credit) and"
            " outcome (ok, refused, unknown)",
            ["call", "outcome"],
            registry=self.registry,
            buckets=WALLET_BUCKETS,
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

    def wallet_call(self, call: str, outcome: str, seconds: float) -> None:
        """Time one call of a casino's wallet (`service.projections.wallet_calls.Observe`)."""
        self.wallet_calls.labels(call, outcome).observe(seconds)

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


class Quarantined:
    """A collector of how many tables are quarantined right now (read from Redis when
    scraped, so every process reports the same)."""

    def __init__(self, index: QuarantineList) -> None:
        self.index = index

    def collect(self) -> Iterator[GaugeMetricFamily]:
        try:
            count = float(len(self.index.quarantined()))
        except REDIS_ERRORS:
            count = float("nan")
        yield GaugeMetricFamily(
            "guts_quarantined_tables",
            "Tables set aside because something stored about them does not load or parse",
            value=count,
        )


def shared_metrics(index: QuarantineList, shared: FromRedis) -> bytes:
    """The metrics read from Redis at each scrape (the same on every node)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(Quarantined(index))
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


def request_id_of(environ: dict[str, Any]) -> str:
    """The client's ``X-Request-Id`` when it is 1-128 visible ASCII characters, else a new
    one (32 hex digits)."""
    sent = environ.get("HTTP_X_REQUEST_ID")
    if sent and len(sent) <= 128 and all("!" <= c <= "~" for c in sent):
        return str(sent)
    return os.urandom(16).hex()


class Observed:
    """WSGI middleware around the Flask app: gives every request its id (``X-Request-Id``,
    answered on every response, set in `REQUEST_ID` for the log lines and problem bodies the
    request causes), times it, then counts it in the metrics and writes its access-log line.
    It reads what Flask found (the URL rule and its arguments) from the environ, where
    `remember_route` leaves it before Flask lets go of the request, and whether a route ran
    a command, and how it went, from `COMMAND` and `OUTCOME` there."""

    def __init__(
        self,
        wsgi_app: Any,
        metrics: Metrics,
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
            name = rule.endpoint.rpartition(".")[2]
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
"""Where `Observed` keeps the request's id, in the WSGI environ."""
ROUTE = "guts.route"
"""Where `remember_route` keeps the request's URL rule and arguments, in the WSGI environ."""


def remember_route(exc: BaseException | None) -> None:
    """Keep what Flask matched for `Observed`, which runs after Flask has let go of the
    request (a teardown function: it runs for every request, whatever happened in it)."""
    current: Request = request._get_current_object()  # type: ignore[attr-defined]
    current.environ[ROUTE] = (current.url_rule, current.view_args or {})
