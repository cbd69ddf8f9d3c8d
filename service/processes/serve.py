"""``guts serve``: Redis (embedded unless ``REDIS_URL`` is set), then gunicorn, an RQ worker
(audits) and deadline dispatchers (forks of this process) under the supervisor, which
restarts any of them that dies (the embedded Redis too, on its port, with its append-only
file), until SIGTERM or SIGINT.

A ``REDIS_URL`` that does not answer at the start is waited for, everything running (the API
answers 503 meanwhile), up to ``redis_wait_s``; then ``guts serve`` stops it all and exits 1
with one line saying so. Once Redis has answered, losing it is waited out for as long as it
takes (503s, and each process reconnects when it is back).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import importlib
import logging
import os
import re
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from importlib import metadata
from pathlib import Path

from service.archive.database import EmbeddedPostgres, connect, migrate
from service.config import Settings
from service.eventlog.store import ArchiveUnavailable
from service.logs import fail, redact_url
from service.processes.redis_server import RedisServer, RedisServerError
from service.processes.supervisor import ChildSpec, ServerSpec, StopSignal, Supervisor

WSGI_APP = "service.wsgi:app"
START_TIMEOUT_S = 30.0
DISPATCHER_HANG_S = 30.0
"""A dispatcher beats at every look at the index (every 20 ms) and before each wait for Redis
(10 s at most): still for this long, it is hung, and replaced."""
WORKER_HANG_S = 120.0
"""The RQ worker beats with RQ's own heartbeat (every 45 s idle, 30 s in a job: its
``worker_ttl`` is 60 s, see ``workers.worker``) and between its attempts to reach Redis."""
REDIS_PROBE_S = 1.0
"""How often a REDIS_URL that has not answered yet is asked again."""

log = logging.getLogger("guts.serve")


GutsMain = Callable[[Sequence[str]], int]
"""The ``guts`` command's main (``service.cli.main``): its arguments -> its exit code."""


def serve(
    settings: Settings,
    *,
    host: str,
    port: int,
    workers: int,
    data_dir: Path,
    log_level: str = "info",
    redis_wait_s: float = 60.0,
    dispatchers: int,
    guts: GutsMain | None = None,
) -> int:
    """Run Redis (unless REDIS_URL is set) and the children of :func:`serve_children`,
    restarting any that dies, until a signal (or until a REDIS_URL that never answered has
    been waited for `redis_wait_s`; 0 waits for ever). `guts`: as `serve_children` takes it."""
    _warn_without_operators(settings)
    stop = StopSignal()
    stop.install()
    try:
        with contextlib.ExitStack() as stack:  # unwinds children, metrics dir, Redis last
            redis_url, described, embedded = stack.enter_context(_redis(settings, data_dir))
            database_url, described["postgres"], postgres = stack.enter_context(
                _postgres(settings, data_dir)
            )
            first_contact = _FirstContact(redis_url, None if embedded else redis_wait_s)
            first_contact.tick()  # says so before anything starts if it does not answer
            metrics_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="guts-metrics-"))
            if stop.signum is not None:
                return 0
            specs = serve_children(
                host, port, workers, redis_url, metrics_dir, log_level, database_url,
                dispatchers, guts,
            )  # fmt: skip
            servers = [
                ServerSpec(name, server)
                for name, server in (("Redis", embedded), ("PostgreSQL", postgres))
                if server is not None
            ]
            supervisor = stack.enter_context(Supervisor(specs, servers=servers))
            supervisor.start()
            listening = functools.partial(_listening, host, port)
            if not supervisor.wait_ready(listening, stop, START_TIMEOUT_S):
                return 0 if stop.signum is not None else 1
            where = f"http://{_url_host(host)}:{port}"
            log.info(
                "listening on %s (%d web workers; %s); Redis: %s",
                where,
                workers,
                ", ".join(spec.name for spec in specs),
                described["redis"],
                extra={"url": where, "web_workers": workers, **described},
            )
            supervisor.run(stop, also=first_contact.tick)
            log.info("stopping")
            return 0 if supervisor.stop() else 1
    except (RedisServerError, DataDirBusy, RedisNeverAnswered) as error:
        return fail(str(error))
    finally:
        stop.uninstall()


class RedisNeverAnswered(RuntimeError):
    """The REDIS_URL did not answer within the wait ``guts serve`` was given."""


class _FirstContact:
    """Until the Redis at `url` first answers, asks it again every ``REDIS_PROBE_S``, and
    raises :class:`RedisNeverAnswered` once `wait_s` has passed (None: the embedded Redis,
    which answered before anything started; 0: wait for ever)."""

    def __init__(self, url: str, wait_s: float | None) -> None:
        self.url = url
        self.wait_s = wait_s
        self.started = time.monotonic()
        self.next_probe = self.started
        self.answered = wait_s is None
        self.told = False

    def tick(self) -> None:
        now = time.monotonic()
        if self.answered or now < self.next_probe:
            return
        trouble = redis_trouble(self.url)
        if trouble is None:
            self.answered = True
            if self.told:
                log.info("Redis at %s answers", redact_url(self.url))
            return
        assert self.wait_s is not None
        if self.wait_s and now - self.started >= self.wait_s:
            raise RedisNeverAnswered(
                f"Redis at {redact_url(self.url)} did not answer in {self.wait_s:g} s "
                f"(--redis-wait): {trouble}; giving up"
            )
        if not self.told:
            self.told = True
            limit = f"up to {self.wait_s:g} s (--redis-wait)" if self.wait_s else "for ever"
            log.warning(
                "Redis at %s does not answer yet (%s); everything starts and waits for it %s "
                "(the API answers 503 until it does)",
                redact_url(self.url),
                trouble,
                limit,
            )
        self.next_probe = now + REDIS_PROBE_S


def redis_answers(redis_url: str) -> bool:
    """Whether the Redis at `redis_url` answers a PING within a second."""
    return redis_trouble(redis_url) is None


def redis_trouble(redis_url: str) -> str | None:
    """Why the Redis at `redis_url` does not answer a PING within a second (the error, which
    never holds the URL's password), or None when it does."""
    import redis

    client = redis.Redis.from_url(redis_url, socket_connect_timeout=1, socket_timeout=1)
    try:
        client.ping()
    except redis.RedisError as error:
        return f"{type(error).__name__}: {error}"
    finally:
        client.close()
    return None


def serve_children(
    host: str,
    port: int,
    workers: int,
    redis_url: str,
    metrics_dir: str,
    log_level: str,
    database_url: str | None,
    dispatchers: int,
    guts: GutsMain | None = None,
) -> list[ChildSpec]:
    """What `guts serve` runs, all on `redis_url` (and the archive at `database_url`) and
    logging at `log_level`: gunicorn (metrics in multiprocess mode), one `guts worker`
    (audits, webhooks) and `dispatchers` `guts dispatch` (deadlines; one of them at a time
    follows the logs for the projections and the archive). Two by default (GUTS_DISPATCHERS):
    they share the clock's work safely (each claims what is due with a short lease), so one
    killed leaves the other acting on deadlines while it restarts; none on an API node whose
    service runs its dispatchers elsewhere. One line per child. Given `guts` (the ``guts``
    command's main), the worker and the dispatchers are forks of this process that run it
    (named ``guts worker``, ``guts dispatch``), their code imported here first: once, not at
    each start and restart; without, each is a new ``python -m service.cli``."""
    env = {**os.environ, "REDIS_URL": redis_url, "GUTS_LOG_LEVEL": log_level}
    if database_url:
        env["GUTS_DATABASE_URL"] = database_url
    web_env = {**env, "PROMETHEUS_MULTIPROC_DIR": metrics_dir}
    level = ("--log-level", log_level)
    if guts is not None:  # (what the forks run, imported before they are)
        for module in ("workers.dispatcher", "workers.worker"):
            importlib.import_module(module)  # (`import workers...` would bind the parameter)

    def child(name: str, args: tuple[str, ...], hang_s: float) -> ChildSpec:
        entry = None if guts is None else functools.partial(guts, list(args))
        title = f"guts {args[0]}"
        return ChildSpec(name, _guts(*args), env, hang_s=hang_s, entry=entry, title=title)

    return [
        ChildSpec("gunicorn", tuple(gunicorn_command(host, port, workers, log_level)), web_env),
        child("worker", ("worker", *level), WORKER_HANG_S),
        *(
            child(f"dispatcher-{n}", ("dispatch", *level), DISPATCHER_HANG_S)
            for n in range(1, dispatchers + 1)
        ),
    ]


def _guts(*args: str) -> tuple[str, ...]:
    """The command line of `guts ARGS` with this Python."""
    return (sys.executable, "-m", "service.cli", *args)


def _listening(host: str, port: int) -> bool:
    """Whether something accepts connections on host:port."""
    target = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(host, host)
    try:
        with socket.create_connection((target, port), timeout=1):
            return True
    except OSError:
        return False


# --- guts worker --------------------------------------------------------------------------


def _warn_without_operators(settings: Settings) -> None:
    if not settings.operator_keys:
        log.warning(
            "GUTS_OPERATOR_KEYS is not set, so no operator can act "
            "(create tables, seat players, deal); set it to a comma-separated list of keys"
        )


class DataDirBusy(RuntimeError):
    """Another ``guts serve`` runs an embedded Redis on the same data directory."""


@contextlib.contextmanager
def _redis(
    settings: Settings, data_dir: Path
) -> Iterator[tuple[str, dict[str, str], RedisServer | None]]:
    """Yield the Redis URL to use, fields that describe it (``redis``: the URL without its
    password; ``redis_data``: the embedded one's directory), and the embedded server, if any.

    With REDIS_URL, that one. Without, an embedded redis-server on a free loopback port
    with its append-only file under ``<data_dir>/redis``; it is stopped (and its log
    fsynced) when the block exits, after everything that uses it.
    """
    if settings.redis_url:
        yield settings.redis_url, {"redis": f"{redact_url(settings.redis_url)} (REDIS_URL)"}, None
        return
    redis_dir = data_dir / "redis"
    with (
        _lock(redis_dir),
        RedisServer(
            data_dir=redis_dir,
            appendonly=True,
            appendfsync="everysec",
            port=None,
            dies_with_parent=True,
        ) as server,
    ):
        described = {"redis": f"embedded at {server.url}", "redis_data": str(server.data_dir)}
        yield server.url, described, server


@contextlib.contextmanager
def _postgres(
    settings: Settings, data_dir: Path
) -> Iterator[tuple[str, str, EmbeddedPostgres | None]]:
    """Yield the archive's database URL, how to describe it, and the embedded server, if any:
    GUTS_DATABASE_URL, or an embedded PostgreSQL with its data under ``<data_dir>/postgres``
    (stopped when the block exits). The schema is migrated first (a database that does not
    answer yet is left to the dispatcher, which migrates it when it starts)."""
    embedded = None
    if settings.database_url:
        url, described = (
            settings.database_url,
            f"{redact_url(settings.database_url)} (GUTS_DATABASE_URL)",
        )
    else:
        embedded = EmbeddedPostgres(data_dir / "postgres")
        url = embedded.start()
        described = f"embedded in {embedded.directory}"
    try:
        try:
            with connect(url) as conn:
                migrate(conn)
        except ArchiveUnavailable as error:
            log.warning("the archive's PostgreSQL does not answer yet (%s)", error)
        yield url, described, embedded
    finally:
        if embedded is not None:
            embedded.stop()


@contextlib.contextmanager
def _lock(directory: Path) -> Iterator[None]:
    """Hold an exclusive lock on `directory`, so two servers never share one AOF."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "guts.lock", "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise DataDirBusy(f"{directory} is in use by another `guts serve`") from None
        yield


def gunicorn_command(
    host: str, port: int, workers: int, log_level: str = "info", app: str = WSGI_APP
) -> list[str]:
    """The gunicorn command line ``guts serve`` runs (gevent workers answering refusals in
    problem+json, JSON log lines, the limits: ``service.processes.gunicorn_conf``;
    GUNICORN_CMD_ARGS in
    the environment can add options)."""
    command = [
        sys.executable, "-m", "gunicorn",
        "--workers", str(workers),
        "--log-level", log_level,
        "--bind", f"{_url_host(host)}:{port}",
        "--config", "python:service.processes.gunicorn_conf",
    ]  # fmt: skip
    if _gunicorn_version() >= (25, 1):
        # Otherwise every gunicorn of the machine shares ~/.gunicorn/gunicorn.ctl.
        command.append("--no-control-socket")
    return [*command, app]


def _gunicorn_version() -> tuple[int, int]:
    major, minor, *_ = (int(part) for part in re.findall(r"\d+", metadata.version("gunicorn")))
    return major, minor


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
