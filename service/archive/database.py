"""PostgreSQL for the archive: connections, the schema's migrations, and an embedded server
for machines that have none.

Migrations are plain numbered SQL files (``migrations/NNNN_name.sql``), applied in order, each
in its own transaction with the row that records it in ``guts_migrations``, under an advisory
lock, so two processes starting at once apply each migration once. ``guts migrate`` applies
them, and so does every process that opens the archive (``connect(..., migrate=True)``).
"""

from __future__ import annotations

import json
import logging
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from service.eventlog.store import ArchiveUnavailable

log = logging.getLogger("guts.archive")
MIGRATIONS = Path(__file__).parent / "migrations"
_LOCK = 0x67757473  # "guts": the advisory lock migrations are applied under


@dataclass(frozen=True)
class Migration:
    number: int
    name: str
    sql: str


def migrations() -> list[Migration]:
    """The schema's migrations, in order (numbered files; a gap or a repeat is an error)."""
    found = []
    for path in sorted(MIGRATIONS.glob("*.sql")):
        number, _, name = path.stem.partition("_")
        found.append(Migration(int(number), name, path.read_text()))
    if [m.number for m in found] != list(range(1, len(found) + 1)):
        raise RuntimeError(f"the migrations in {MIGRATIONS} are not numbered 1, 2, 3, ...")
    return found


def migrate(conn: psycopg.Connection) -> list[int]:
    """Apply the migrations `conn`'s database lacks; the numbers applied."""
    applied = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS guts_migrations ("
            " number integer PRIMARY KEY, name text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        done = {row[0] for row in conn.execute("SELECT number FROM guts_migrations")}
        for migration in migrations():
            if migration.number in done:
                continue
            with conn.transaction():
                conn.execute(migration.sql.encode())
                conn.execute(
                    "INSERT INTO guts_migrations (number, name) VALUES (%s, %s)",
                    (migration.number, migration.name),
                )
            applied.append(migration.number)
            log.info("archive: applied migration %04d %s", migration.number, migration.name)
    return applied


def connect(url: str, *, migrate_first: bool = False) -> psycopg.Connection:
    """A connection to the archive's database (autocommit: each call is its own
    transaction unless it opens one); StoreUnavailable when it cannot be reached."""
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as error:
        raise ArchiveUnavailable(f"PostgreSQL is unreachable: {_first_line(error)}") from error
    if migrate_first:
        migrate(conn)
    return conn


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


class EmbeddedPostgres:
    """A private PostgreSQL in `directory` (the ``pgserver`` wheel), for ``guts serve``
    without ``GUTS_DATABASE_URL``; stopped on ``stop``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._server: object | None = None

    def start(self) -> str:
        """Start it (or find it running) and return its URL."""
        try:
            with warnings.catch_warnings():  # (platformdirs: no XDG_RUNTIME_DIR, as root)
                warnings.simplefilter("ignore")
                from pgserver.postgres_server import get_server
        except ImportError as error:  # not on this platform
            raise RuntimeError(
                "no embedded PostgreSQL on this platform: set GUTS_DATABASE_URL"
            ) from error
        logging.getLogger("pgserver").setLevel(logging.WARNING)  # (its handles come and go)
        self.directory.mkdir(parents=True, exist_ok=True)
        _forget_dead_handles(self.directory)
        server = get_server(self.directory, cleanup_mode="stop")
        self._server = server
        return str(server.get_uri())

    @property
    def running(self) -> bool:
        """Whether its postmaster is running (True before `start` and after `stop`). One
        killed but not reaped yet (a zombie: its adopter, often pid 1, reaps when it will)
        is not running, though its pid exists."""
        server = self._server
        if server is None:
            return True
        info = server.get_postmaster_info()  # type: ignore[attr-defined]
        return bool(info.is_running()) and not _zombie(info.pid)

    def restart(self) -> None:
        """Start it again on its data (after it died: PostgreSQL recovers from its WAL); at
        the same URL (its socket is in its data directory's). The lock files of a postmaster
        left a zombie (its data's and its socket's) are removed first: pgserver and
        PostgreSQL would both take its pid, which exists until reaped, for a server still
        running, and start none."""
        server = self._server
        if server is not None:
            info = server.get_postmaster_info()  # type: ignore[attr-defined]
            if _zombie(info.pid):  # (its socket's lock file names it too)
                sockets = info.socket_dir or self.directory
                for lock in [self.directory / "postmaster.pid", *sockets.glob(".s.PGSQL.*.lock")]:
                    lock.unlink(missing_ok=True)
            server.ensure_postgres_running()  # type: ignore[attr-defined]

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.cleanup()  # type: ignore[attr-defined]


HANDLES = ".handle_pids.json"
"""pgserver's list of the processes holding a handle on the server of a data directory (the
wheel's own file, pinned by the lock; tests/test_cli.py's test of a `guts serve` killed with
-9 fails if it changes)."""


def _forget_dead_handles(directory: Path) -> None:
    """Drop the processes no longer running from pgserver's list of handles (`HANDLES`).
    pgserver stops its PostgreSQL when the last process on the list closes its handle; one
    killed with -9 never takes itself off, so no later process was the last, and the server
    outlived every clean stop after such a kill."""
    path = directory / HANDLES
    try:
        pids = json.loads(path.read_text())
    except (OSError, ValueError):  # none yet (or not a list pgserver could read either)
        return
    if not isinstance(pids, list):
        return
    psutil = _psutil()
    alive = [p for p in pids if isinstance(p, int) and psutil.pid_exists(p) and not _zombie(p)]
    if alive != pids:
        log.info("the embedded PostgreSQL's handles of %d stopped processes dropped",
                 len(pids) - len(alive))  # fmt: skip
        path.write_text(json.dumps(alive))


def _zombie(pid: int) -> bool:
    """Whether process `pid` has exited and waits to be reaped."""
    psutil = _psutil()
    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def _psutil() -> Any:
    """psutil, imported where it is used: only the process of an embedded PostgreSQL needs
    it, and importing it cost every dispatcher's and worker's start about 15 ms."""
    import psutil  # type: ignore[import-untyped]

    return psutil
