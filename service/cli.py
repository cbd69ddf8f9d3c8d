"""The ``guts`` command.

``guts serve``
    The API under gunicorn (gevent workers), one RQ worker (audits) and one deadline
    dispatcher (``service.processes.serve``). Without ``REDIS_URL`` it first starts
    an embedded redis-server (append-only file, fsync every second) under
    ``<data-dir>/redis``, and without ``GUTS_DATABASE_URL`` an embedded PostgreSQL (the
    archive) under ``<data-dir>/postgres``, and hands their URLs to them; a ``REDIS_URL``
    that does not answer is waited for up to ``--redis-wait`` seconds. A child that dies,
    the API included, is started again after a short delay (``service.processes.supervisor``).
    SIGTERM or SIGINT stops it cleanly: gunicorn finishes the requests in flight, the worker
    its job in flight, Redis flushes its log last, and the command exits 0.
``guts worker``
    The RQ worker alone, against ``REDIS_URL``; while Redis cannot be reached it waits for
    it (retrying with a growing delay) until SIGTERM or SIGINT.
``guts dispatch``
    A deadline dispatcher alone (``workers.dispatcher``), against ``REDIS_URL``, and with
    ``GUTS_DATABASE_URL`` the archiver of the logs into that PostgreSQL (it applies the
    schema's migrations first).

Each subcommand is one :class:`Subcommand` in ``SUBCOMMANDS``: a function that adds its
arguments and one that runs it. Add a new one (``guts verify``, ...) by appending there.
Every subcommand but ``verify`` logs JSON lines on stderr (``service.logs``) at its
``--log-level`` (``GUTS_LOG_LEVEL``).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from service.config import Settings
from service.logs import LEVELS, configure_logging, fail, redact_url
from service.pacing import HEARTBEAT_ENV, Backoff, Heartbeat
from service.processes.preflight import missing_dependency, missing_line
from service.processes.supervisor import StopSignal

WORKER_BACKOFF = Backoff(first_s=0.5, cap_s=10.0, stable_s=30.0)
log = logging.getLogger("guts.worker")


# --- subcommands --------------------------------------------------------------------------


@dataclass(frozen=True)
class Subcommand:
    """One ``guts`` subcommand: its name, help, arguments and what it runs."""

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser, Settings], None]
    run: Callable[[argparse.Namespace, Settings], int]


def _add_log_level(parser: argparse.ArgumentParser, settings: Settings) -> None:
    parser.add_argument(
        "--log-level",
        choices=list(LEVELS),
        default=settings.log_level,
        help="the least severe log lines written (GUTS_LOG_LEVEL)",
    )


def _configure_serve(parser: argparse.ArgumentParser, settings: Settings) -> None:
    _add_log_level(parser, settings)
    parser.add_argument("--host", default=settings.host, help="address to listen on (GUTS_HOST)")
    parser.add_argument("--port", type=int, default=settings.port, help="port (GUTS_PORT)")
    parser.add_argument(
        "--workers",
        type=int,
        default=settings.web_workers,
        help="gunicorn worker processes, each a gevent worker serving many requests and "
        "streams at once (GUTS_WEB_WORKERS)",
    )
    parser.add_argument(
        "--dispatchers",
        type=int,
        default=settings.dispatchers,
        help="deadline dispatchers to run beside the API (0: none, where `guts dispatch` runs "
        "elsewhere) (GUTS_DISPATCHERS)",
    )
    parser.add_argument(
        "--data-dir",
        default=settings.data_dir,
        help="where the embedded Redis (when REDIS_URL is unset) and the embedded PostgreSQL "
        "(when GUTS_DATABASE_URL is unset) keep their files (GUTS_DATA_DIR)",
    )
    parser.add_argument(
        "--redis-wait",
        type=float,
        default=settings.redis_wait_s,
        metavar="SECONDS",
        help="how long a REDIS_URL that does not answer at the start is waited for before "
        "giving up (exit 1); 0 waits for ever (GUTS_REDIS_WAIT_S)",
    )


def _configure_worker(parser: argparse.ArgumentParser, settings: Settings) -> None:
    _add_log_level(parser, settings)
    parser.add_argument("--burst", action="store_true", help="run the jobs that are due, then exit")


def _run_serve(args: argparse.Namespace, settings: Settings) -> int:
    if args.workers < 1:
        return fail("--workers must be at least 1", code=2)
    if args.dispatchers < 0:
        return fail("--dispatchers must be 0 or more", code=2)
    if args.redis_wait < 0:
        return fail("--redis-wait must be 0 (for ever) or more seconds", code=2)
    missing = missing_dependency()
    if missing is not None:
        return fail(missing)
    from service.processes.serve import serve

    return serve(
        settings,
        host=args.host,
        port=args.port,
        workers=args.workers,
        data_dir=Path(args.data_dir),
        log_level=args.log_level,
        redis_wait_s=args.redis_wait,
        dispatchers=args.dispatchers,
        guts=main,
    )


def _run_worker(args: argparse.Namespace, settings: Settings) -> int:
    if not settings.redis_url:
        return fail(
            "REDIS_URL is not set: `guts worker` needs the Redis that the API uses, "
            "e.g. REDIS_URL=redis://127.0.0.1:6379/0 (`guts serve` runs a worker of its own)"
        )
    import redis

    from service.infrastructure import queue_url
    from workers.worker import run_worker

    queues = queue_url(settings)  # RQ's (GUTS_QUEUE_REDIS_URL, else REDIS_URL)
    if not args.burst:
        return _work_until_stopped(queues, args.log_level)
    try:
        run_worker(queues, burst=True, log_level=args.log_level)
    except redis.ConnectionError as error:
        return fail(f"cannot reach Redis at {redact_url(queues)}: {error}")
    return 0


def _run_dispatch(args: argparse.Namespace, settings: Settings) -> int:
    if not settings.redis_url:
        return fail(
            "REDIS_URL is not set: `guts dispatch` needs the Redis that the API uses "
            "(`guts serve` runs a dispatcher of its own)"
        )
    from workers.dispatcher import run_dispatcher

    return run_dispatcher(settings, Heartbeat(os.environ.get(HEARTBEAT_ENV)))


def _configure_release(parser: argparse.ArgumentParser, settings: Settings) -> None:
    _add_log_level(parser, settings)
    parser.add_argument(
        "table_ids",
        nargs="+",
        metavar="TABLE_ID",
        help="a quarantined table (one whose id begins with - goes after --: guts release -- -x)",
    )


def _run_release(args: argparse.Namespace, settings: Settings) -> int:
    """Release repaired tables from quarantine (`service.processes.release`)."""
    if not settings.redis_url:
        return fail("REDIS_URL is not set: `guts release` needs the Redis that the API uses")
    from service.processes.release import release

    return release(settings, args.table_ids)


def _run_migrate(args: argparse.Namespace, settings: Settings) -> int:
    if not settings.database_url:
        return fail(
            "GUTS_DATABASE_URL is not set: `guts migrate` needs the archive's PostgreSQL "
            "(`guts serve` migrates the one it uses when it starts)"
        )
    from service.archive.database import connect, migrate
    from service.eventlog.store import ArchiveUnavailable

    try:
        with connect(settings.database_url) as conn:
            applied = migrate(conn)
    except ArchiveUnavailable as error:
        return fail(str(error))
    print(f"applied migrations {', '.join(map(str, applied))}" if applied else "already up to date")
    return 0


def _configure_verify(parser: argparse.ArgumentParser, settings: Settings) -> None:
    parser.add_argument(
        "args",
        nargs=argparse.REMAINDER,
        help="a hand history (file, - for stdin, or URL), then --json / --token TOKEN",
    )


def _run_verify(args: argparse.Namespace, settings: Settings) -> int:
    from service.fairness import main as verify_main

    return verify_main(list(args.args))


def _configure_wallet_check(parser: argparse.ArgumentParser, settings: Settings) -> None:
    from service.projections.wallet_check import configure

    _add_log_level(parser, settings)
    configure(parser)


def _run_wallet_check(args: argparse.Namespace, settings: Settings) -> int:
    from service.projections.wallet_check import run

    return run(args)


SUBCOMMANDS: tuple[Subcommand, ...] = (
    Subcommand("serve", "run the API, a worker, a dispatcher and (without REDIS_URL, "
            "GUTS_DATABASE_URL) Redis and PostgreSQL", _configure_serve, _run_serve),
    Subcommand("worker", "run the RQ worker alone (needs REDIS_URL)", _configure_worker,
            _run_worker),
    Subcommand("dispatch", "run a deadline dispatcher alone (needs REDIS_URL; with "
            "GUTS_DATABASE_URL it also archives the logs into that PostgreSQL)",
            _add_log_level, _run_dispatch),
    Subcommand("release", "release repaired tables from quarantine (needs REDIS_URL)",
            _configure_release, _run_release),
    Subcommand("migrate", "bring the archive's PostgreSQL schema up to date (GUTS_DATABASE_URL)",
            _add_log_level, _run_migrate),
    Subcommand("verify", "check a hand history's deal against its revealed seed (stdlib only)",
            _configure_verify, _run_verify),
    Subcommand("wallet-check", "try a casino wallet against every rule of the wallet contract "
            "(docs/wallet.md), a line per rule", _configure_wallet_check, _run_wallet_check),
)  # fmt: skip


def build_parser(settings: Settings) -> argparse.ArgumentParser:
    """The argument parser, with one subparser per entry of ``SUBCOMMANDS``."""
    parser = argparse.ArgumentParser(prog="guts", description="The Guts card game service.")
    parser.add_argument("--version", action="version", version=f"guts {metadata.version('guts')}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in SUBCOMMANDS:
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
        from service.fairness import main as verify_main

        return verify_main(argv[1:])
    try:
        try:
            settings = Settings.from_env()
        except ValueError as error:
            configure_logging()
            return fail(f"bad setting in the environment: {error}", code=2)
        args = build_parser(settings).parse_args(argv)
        configure_logging(args.log_level)
        code: int = args.run(args, settings)
    except ModuleNotFoundError as error:  # a dependency missing anywhere on the way
        configure_logging()
        return fail(missing_line(error, f"guts {argv[0] if argv else ''}".strip()))
    return code


def _work_until_stopped(
    redis_url: str, log_level: str = "info", backoff: Backoff = WORKER_BACKOFF
) -> int:
    """Run the RQ worker until SIGTERM or SIGINT; 0 then. When it fails on Redis, or returns
    without such a signal (RQ's loop also quits on errors of its own, Redis answering or not),
    log a line and run it again after a delay that grows while that lasts."""
    import redis
    from rq.exceptions import StopRequested

    from service.eventlog.redis_errors import redis_away
    from service.processes.serve import redis_answers
    from workers.worker import run_worker

    originals = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    stop = StopSignal()
    beats = Heartbeat(os.environ.get(HEARTBEAT_ENV), every_s=0.0)  # (a beat each attempt)
    failures = 0
    try:
        while True:
            for signum, handler in originals.items():  # RQ's handlers: a warm shutdown
                signal.signal(signum, handler)
            started = time.monotonic()
            beats.beat()
            stopped = False
            try:
                stopped = run_worker(redis_url, log_level=log_level, beats=beats)
                trouble = None  # (RQ's loop returned: stopped, or it quit and logged why)
            except redis.RedisError as error:  # (away, failing over, refusing writes)
                if not redis_away(error):
                    raise
                trouble = f"{type(error).__name__}: {error}"
            finally:
                stop.install()  # ours while we wait
            if stopped or stop.signum is not None:
                return 0
            if trouble is None and not redis_answers(redis_url):
                trouble = "Redis does not answer"
            failures = backoff.failures_after(failures, time.monotonic() - started)
            delay = backoff.delay(failures)
            where = redact_url(redis_url)
            if trouble is None:
                said = f"RQ's worker quit (Redis at {where} answers); starting it again"
            else:
                said = f"worker lost Redis at {where} ({trouble}); trying again"
            log.warning("%s in %.1f s", said, delay, extra={"retry_s": delay})
            if stop.wait(delay):
                return 0
    except StopRequested:  # a signal that came while RQ's handler was still in place
        return 0
    finally:
        for signum, handler in originals.items():
            signal.signal(signum, handler)


if __name__ == "__main__":
    sys.exit(main())
