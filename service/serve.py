"""``guts serve``: Redis (embedded unless ``REDIS_URL`` is set), then gunicorn, an RQ worker
(audits) and a deadline dispatcher under the supervisor, which restarts any of them that dies
(the embedded Redis too, on its port, with its append-only file), until SIGTERM or SIGINT.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import re
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from service.config import Settings
from service.redis_server import RedisServer, RedisServerError
from service.supervisor import ChildSpec, StopSignal, Supervisor

WSGI_APP = "service.wsgi:app"
START_TIMEOUT_S = 30.0


def serve(settings: Settings, *, host: str, port: int, workers: int, data_dir: Path) -> int:
    """Run Redis (unless REDIS_URL is set) and the children of :func:`serve_children`,
    restarting any that dies, until a signal."""
    _warn_without_operators(settings)
    stop = StopSignal()
    stop.install()
    try:
        with contextlib.ExitStack() as stack:  # unwinds children, metrics dir, Redis last
            redis_url, redis_label, embedded = stack.enter_context(_redis(settings, data_dir))
            if embedded is None and not redis_answers(redis_url):
                print(
                    f"guts: Redis at {redact_url(redis_url)} does not answer yet; everything "
                    "starts and waits for it (the API answers 503 until it does)",
                    file=sys.stderr,
                    flush=True,
                )
            metrics_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="guts-metrics-"))
            if stop.signum is not None:
                return 0
            specs = serve_children(host, port, workers, redis_url, metrics_dir)
            supervisor = stack.enter_context(Supervisor(specs))
            supervisor.start()
            listening = functools.partial(_listening, host, port)
            if not supervisor.wait_ready(listening, stop, START_TIMEOUT_S):
                return 0 if stop.signum is not None else 1
            where = f"http://{_url_host(host)}:{port}"
            running = ", ".join(spec.name for spec in specs)
            print(
                f"guts: listening on {where} ({workers} web workers; {running}); {redis_label}",
                flush=True,
            )
            supervisor.run(stop, also=_RedisKeeper(embedded, supervisor.log).tick)
            print("guts: stopping", file=sys.stderr, flush=True)
            return 0 if supervisor.stop() else 1
    except (RedisServerError, DataDirBusy) as error:
        return fail(str(error))
    finally:
        stop.uninstall()


class _RedisKeeper:
    """Restarts the embedded redis-server when it dies (on its port, with its append-only
    file), as the supervisor restarts the other children; at most once a second."""

    def __init__(self, server: RedisServer | None, log: Callable[[str], None]) -> None:
        self.server = server
        self.log = log
        self.next_try = 0.0

    def tick(self) -> None:
        server = self.server
        if server is None or server.running or time.monotonic() < self.next_try:
            return
        self.next_try = time.monotonic() + 1.0
        self.log(f"the embedded Redis (port {server.port}) died; restarting it")
        try:
            server.restart()
        except RedisServerError as error:
            self.log(f"the embedded Redis did not restart ({error}); trying again")
            return
        self.log(f"the embedded Redis restarted (pid {server.pid})")


def redis_answers(redis_url: str) -> bool:
    """Whether the Redis at `redis_url` answers a PING within a second."""
    import redis

    client = redis.Redis.from_url(redis_url, socket_connect_timeout=1, socket_timeout=1)
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False
    finally:
        client.close()


def serve_children(
    host: str, port: int, workers: int, redis_url: str, metrics_dir: str
) -> list[ChildSpec]:
    """What `guts serve` runs, all on `redis_url`: gunicorn (metrics in multiprocess mode), one
    `guts worker` (audits) and one `guts dispatch` (deadlines). One line per child."""
    env = {**os.environ, "REDIS_URL": redis_url}
    web_env = {**env, "PROMETHEUS_MULTIPROC_DIR": metrics_dir}
    return [
        ChildSpec("gunicorn", tuple(gunicorn_command(host, port, workers)), web_env),
        ChildSpec("worker", _guts("worker"), env),
        ChildSpec("dispatcher", _guts("dispatch"), env),
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
        print(
            "guts: warning: GUTS_OPERATOR_KEYS is not set, so no operator can act "
            "(create tables, seat players, deal); set it to a comma-separated list of keys",
            file=sys.stderr,
            flush=True,
        )


class DataDirBusy(RuntimeError):
    """Another ``guts serve`` runs an embedded Redis on the same data directory."""


@contextlib.contextmanager
def _redis(settings: Settings, data_dir: Path) -> Iterator[tuple[str, str, RedisServer | None]]:
    """Yield the Redis URL to use, a line that describes it (no password), and the embedded
    server, if any.

    With REDIS_URL, that one. Without, an embedded redis-server on a free loopback port
    with its append-only file under ``<data_dir>/redis``; it is stopped (and its log
    fsynced) when the block exits, after everything that uses it.
    """
    if settings.redis_url:
        yield settings.redis_url, f"Redis: {redact_url(settings.redis_url)} (REDIS_URL)", None
        return
    redis_dir = data_dir / "redis"
    with (
        _lock(redis_dir),
        RedisServer(
            data_dir=redis_dir, appendonly=True, appendfsync="everysec", port=None
        ) as server,
    ):
        yield server.url, f"Redis: embedded at {server.url}, data in {server.data_dir}", server


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


def gunicorn_command(host: str, port: int, workers: int, app: str = WSGI_APP) -> list[str]:
    """The gunicorn command line ``guts serve`` runs (sync workers; GUNICORN_CMD_ARGS in
    the environment can add options)."""
    command = [
        sys.executable, "-m", "gunicorn",
        "--worker-class", "sync",
        "--workers", str(workers),
        "--bind", f"{_url_host(host)}:{port}",
        "--config", "python:service.gunicorn_conf",
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


def fail(message: str, code: int = 1) -> int:
    print(f"guts: error: {message}", file=sys.stderr, flush=True)
    return code


def redact_url(url: str) -> str:
    """`url` with its password, if any, replaced by ``***`` (safe to print)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rpartition("@")[2]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc}"))
