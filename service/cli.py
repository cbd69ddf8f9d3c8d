"""The ``guts`` command.

``guts serve``
    The API under gunicorn (sync workers) plus one RQ worker with the scheduler. Without
    ``REDIS_URL`` it first starts an embedded redis-server (append-only file, fsync every
    second) under ``<data-dir>/redis`` and hands its URL to both. SIGTERM or SIGINT stops it
    cleanly: gunicorn finishes the requests in flight, the worker its job in flight, Redis
    flushes its log last, and the command exits 0.
``guts worker``
    The RQ worker alone, against ``REDIS_URL``.

Each subcommand is one :class:`Command` in ``COMMANDS``: a function that adds its
arguments and one that runs it. Add a new one (``guts verify``, ...) by appending there.

The children of ``guts serve`` run in their own process groups, so a Ctrl-C in a terminal
reaches only ``guts serve``, which then stops them in the graceful way (gunicorn reads
SIGINT as "quit now" and SIGTERM as "finish what you are doing"). On Linux they also get
SIGTERM if ``guts serve`` itself is killed outright.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import fcntl
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from types import FrameType
from typing import IO
from urllib.parse import urlsplit, urlunsplit

from service.config import Settings
from service.redis_server import RedisServer, RedisServerError

WSGI_APP = "service.wsgi:app"
STOP_TIMEOUT_S = 35.0  # above gunicorn's default graceful timeout (30 s)
START_TIMEOUT_S = 30.0
_PR_SET_PDEATHSIG = 1


# --- subcommands --------------------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    """One ``guts`` subcommand: its name, help, arguments and what it runs."""

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser, Settings], None]
    run: Callable[[argparse.Namespace, Settings], int]


def _configure_serve(parser: argparse.ArgumentParser, settings: Settings) -> None:
    parser.add_argument("--host", default=settings.host, help="address to listen on (GUTS_HOST)")
    parser.add_argument("--port", type=int, default=settings.port, help="port (GUTS_PORT)")
    parser.add_argument(
        "--workers",
        type=int,
        default=settings.web_workers,
        help="gunicorn sync workers (GUTS_WEB_WORKERS)",
    )
    parser.add_argument(
        "--data-dir",
        default=settings.data_dir,
        help="where the embedded Redis keeps its files when REDIS_URL is unset (GUTS_DATA_DIR)",
    )


def _configure_worker(parser: argparse.ArgumentParser, settings: Settings) -> None:
    parser.add_argument("--burst", action="store_true", help="run the jobs that are due, then exit")


def _run_serve(args: argparse.Namespace, settings: Settings) -> int:
    if args.workers < 1:
        return _fail("--workers must be at least 1", code=2)
    return serve(
        settings, host=args.host, port=args.port, workers=args.workers, data_dir=Path(args.data_dir)
    )


def _run_worker(args: argparse.Namespace, settings: Settings) -> int:
    if not settings.redis_url:
        return _fail(
            "REDIS_URL is not set: `guts worker` needs the Redis that the API uses, "
            "e.g. REDIS_URL=redis://127.0.0.1:6379/0 (`guts serve` runs a worker of its own)"
        )
    import redis

    from workers.worker import run_worker

    try:
        run_worker(settings.redis_url, burst=args.burst)
    except redis.ConnectionError as error:
        return _fail(f"cannot reach Redis at {redact_url(settings.redis_url)}: {error}")
    return 0


def _run_dispatch(args: argparse.Namespace, settings: Settings) -> int:
    if not settings.redis_url:
        return _fail(
            "REDIS_URL is not set: `guts dispatch` needs the Redis that the API uses "
            "(`guts serve` runs a dispatcher of its own)"
        )
    from workers.dispatcher import run_dispatcher

    return run_dispatcher(settings)


def _configure_verify(parser: argparse.ArgumentParser, settings: Settings) -> None:
    parser.add_argument(
        "args",
        nargs=argparse.REMAINDER,
        help="a hand history (file, - for stdin, or URL), then --json / --token TOKEN",
    )


def _run_verify(args: argparse.Namespace, settings: Settings) -> int:
    from service.verify import main as verify_main

    return verify_main(list(args.args))


COMMANDS: tuple[Command, ...] = (
    Command("serve", "run the API, a worker and (without REDIS_URL) Redis", _configure_serve,
            _run_serve),
    Command("worker", "run the RQ worker alone (needs REDIS_URL)", _configure_worker,
            _run_worker),
    Command("dispatch", "run a deadline dispatcher alone (needs REDIS_URL)",
            lambda parser, settings: None, _run_dispatch),
    Command("verify", "check a hand history's deal against its revealed seed (stdlib only)",
            _configure_verify, _run_verify),
)  # fmt: skip


def build_parser(settings: Settings) -> argparse.ArgumentParser:
    """The argument parser, with one subparser per entry of ``COMMANDS``."""
    parser = argparse.ArgumentParser(prog="guts", description="The Guts card game service.")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        sub = subparsers.add_parser(
            command.name,
            help=command.help,
            description=command.help,
            formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        )
        command.configure(sub, settings)
        sub.set_defaults(run=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``guts`` console script; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["verify"]:  # the verifier parses its own options (and needs no settings)
        from service.verify import main as verify_main

        return verify_main(argv[1:])
    try:
        settings = Settings.from_env()
    except ValueError as error:
        return _fail(f"bad setting in the environment: {error}", code=2)
    args = build_parser(settings).parse_args(argv)
    code: int = args.run(args, settings)
    return code


def _fail(message: str, code: int = 1) -> int:
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


# --- guts serve ---------------------------------------------------------------------------


def serve(settings: Settings, *, host: str, port: int, workers: int, data_dir: Path) -> int:
    """Run Redis (unless REDIS_URL is set), gunicorn and one RQ worker until a signal."""
    _warn_without_operators(settings)
    stop = StopSignal()
    stop.install()
    try:
        with contextlib.ExitStack() as stack:  # unwinds children, metrics dir, Redis last
            redis_url, redis_label = stack.enter_context(_redis(settings, data_dir))
            metrics_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="guts-metrics-"))
            children = stack.enter_context(Children())
            if stop.signum is not None:
                return 0
            _start_children(children, host, port, workers, redis_url, metrics_dir)
            if not _wait_listening(host, port, children, stop):
                return 0 if stop.signum is not None else 1
            where = f"http://{_url_host(host)}:{port}"
            print(
                f"guts: listening on {where} ({workers} web workers, 1 RQ worker, 1 dispatcher); "
                f"{redis_label}",
                flush=True,
            )
            code = _supervise(children, stop)
            print("guts: stopping", file=sys.stderr, flush=True)
            clean = children.stop()
            return code if clean else 1
    except (RedisServerError, DataDirBusy) as error:
        return _fail(str(error))
    finally:
        stop.uninstall()


def _warn_without_operators(settings: Settings) -> None:
    if not settings.operator_keys:
        print(
            "guts: warning: GUTS_OPERATOR_KEYS is not set, so no operator can act "
            "(create tables, seat players, deal); set it to a comma-separated list of keys",
            file=sys.stderr,
            flush=True,
        )


def _start_children(
    children: Children, host: str, port: int, workers: int, redis_url: str, metrics_dir: str
) -> None:
    """gunicorn (metrics in multiprocess mode), one `guts worker` (audits) and one `guts
    dispatch` (deadlines), all on `redis_url`."""
    env = {**os.environ, "REDIS_URL": redis_url}
    web_env = {**env, "PROMETHEUS_MULTIPROC_DIR": metrics_dir}
    children.start("gunicorn", gunicorn_command(host, port, workers), web_env)
    children.start("worker", [sys.executable, "-m", "service.cli", "worker"], env)
    children.start("dispatcher", [sys.executable, "-m", "service.cli", "dispatch"], env)


class StopSignal:
    """Remembers the first SIGTERM or SIGINT; the supervisor polls it."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._previous: dict[int, object] = {}

    def install(self) -> None:
        """Catch SIGTERM and SIGINT from now on."""
        for signum in (signal.SIGTERM, signal.SIGINT):
            self._previous[signum] = signal.signal(signum, self._handle)

    def uninstall(self) -> None:
        """Restore the handlers that were there before :meth:`install`."""
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]
        self._previous.clear()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is None:
            self.signum = signum


class DataDirBusy(RuntimeError):
    """Another ``guts serve`` runs an embedded Redis on the same data directory."""


@contextlib.contextmanager
def _redis(settings: Settings, data_dir: Path) -> Iterator[tuple[str, str]]:
    """Yield the Redis URL to use and a line that describes it (no password).

    With REDIS_URL, that one. Without, an embedded redis-server on a free loopback port
    with its append-only file under ``<data_dir>/redis``; it is stopped (and its log
    fsynced) when the block exits, after everything that uses it.
    """
    if settings.redis_url:
        yield settings.redis_url, f"Redis: {redact_url(settings.redis_url)} (REDIS_URL)"
        return
    redis_dir = data_dir / "redis"
    with (
        _lock(redis_dir),
        RedisServer(
            data_dir=redis_dir, appendonly=True, appendfsync="everysec", port=None
        ) as server,
    ):
        yield server.url, f"Redis: embedded at {server.url}, data in {server.data_dir}"


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


class Children:
    """Child processes that are stopped together: SIGTERM to each, wait, then SIGKILL."""

    def __init__(self, stop_timeout_s: float = STOP_TIMEOUT_S) -> None:
        self.stop_timeout_s = stop_timeout_s
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def start(
        self,
        name: str,
        argv: Sequence[str],
        env: dict[str, str],
        *,
        stdout: IO[bytes] | int | None = None,
        stderr: IO[bytes] | int | None = None,
    ) -> subprocess.Popen[bytes]:
        """Start `argv` in a process group of its own (see the module docstring)."""
        process = subprocess.Popen(
            list(argv),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            process_group=0,
            preexec_fn=_die_with_parent,  # safe: this process starts no threads
        )
        self.processes[name] = process
        return process

    def first_exited(self) -> tuple[str, int] | None:
        """The name and exit code of a child that has exited, if any."""
        for name, process in self.processes.items():
            code = process.poll()
            if code is not None:
                return name, code
        return None

    def stop(self) -> bool:
        """Stop every child; True when all exited by themselves with code 0."""
        for process in self.processes.values():
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.stop_timeout_s
        clean = True
        for name, process in self.processes.items():
            try:
                code = process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                print(f"guts: {name} did not stop in time; killing it", file=sys.stderr)
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                code = process.wait()
            clean = clean and code == 0
        self.processes.clear()
        return clean

    def __enter__(self) -> Children:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return prctl


_PRCTL = _load_prctl()


def _die_with_parent() -> None:
    """In a new child, before exec: get SIGTERM when the parent dies (Linux only)."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _wait_listening(host: str, port: int, children: Children, stop: StopSignal) -> bool:
    """Wait until something accepts connections on host:port; False if a child died, a
    signal came or START_TIMEOUT_S passed first."""
    target = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(host, host)
    deadline = time.monotonic() + START_TIMEOUT_S
    while stop.signum is None:
        exited = children.first_exited()
        if exited is not None:
            _fail(f"{exited[0]} exited with code {exited[1]} while starting")
            return False
        with contextlib.suppress(OSError), socket.create_connection((target, port), timeout=1):
            return True
        if time.monotonic() > deadline:
            _fail(f"nothing listens on {host}:{port} after {START_TIMEOUT_S:.0f} s")
            return False
        time.sleep(0.1)
    return False


def _supervise(children: Children, stop: StopSignal) -> int:
    """Wait for a stop signal (0) or for a child to die on its own (1)."""
    while stop.signum is None:
        exited = children.first_exited()
        if exited is not None:
            _fail(f"{exited[0]} exited with code {exited[1]}; stopping everything")
            return 1
        time.sleep(0.1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
