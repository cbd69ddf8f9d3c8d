"""A fresh PostgreSQL database for the tests: on the machine's server at 127.0.0.1:5432 when
one answers (created for this run, dropped at the end), else in a private server from the
``pgserver`` wheel (in a temporary directory, deleted at the end). Migrated."""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

from service.archive.database import connect, migrate

EMPTY_ARCHIVE = (
    "TRUNCATE archive_tables, archive_events, archive_hands, ledger_entries RESTART IDENTITY"
)
"""Empties the archive (and its ledger)."""
MACHINE = os.environ.get("GUTS_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres")


class ArchiveAdmin:
    """A connection to a test database that empties its archive; connects again once when
    the connection was lost (a test restarted the server)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.conn: psycopg.Connection[Any] | None = None

    def empty(self, only_if_used: bool = False) -> None:
        """TRUNCATE the archive (when `only_if_used`: only if a table was archived)."""
        try:
            self._empty(only_if_used)
        except psycopg.OperationalError:
            self.close()
            self._empty(only_if_used)

    def _empty(self, only_if_used: bool) -> None:
        if self.conn is None or self.conn.closed:
            self.conn = psycopg.connect(self.url, autocommit=True, connect_timeout=5)
        if only_if_used:
            used = self.conn.execute("SELECT EXISTS (SELECT 1 FROM archive_tables)").fetchone()
            if used != (True,):
                return
        self.conn.execute(EMPTY_ARCHIVE)

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def _with_database(url: str, name: str) -> str:
    base, _, query = url.partition("?")
    base = base.rsplit("/", 1)[0] + "/" + name
    return base + ("?" + query if query else "")


@contextmanager
def fresh_database() -> Iterator[str]:
    """The URL of a new, migrated database, dropped afterwards."""
    name = f"guts_test_{secrets.token_hex(4)}"
    try:
        admin = psycopg.connect(MACHINE, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError:
        with private_server() as url:
            yield from _created(url, name)
        return
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        url = _with_database(MACHINE, name)
        try:
            with connect(url) as conn:
                migrate(conn)
            yield url
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _created(url: str, name: str) -> Iterator[str]:
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    database = _with_database(url, name)
    with connect(database) as conn:
        migrate(conn)
    yield database


@contextmanager
def private_server() -> Iterator[str]:
    """A private PostgreSQL (pgserver) for as long as the block runs; its URL."""
    import pgserver  # type: ignore[import-untyped]

    directory = Path(tempfile.mkdtemp(prefix="guts-pg-"))
    server = pgserver.get_server(directory / "data", cleanup_mode="delete")
    try:
        yield str(server.get_uri())
    finally:
        server.cleanup()
        shutil.rmtree(directory, ignore_errors=True)
