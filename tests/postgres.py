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

import psycopg

from service.archive.database import connect, migrate

EMPTY_ARCHIVE = (
    "TRUNCATE archive_tables, archive_events, archive_hands, ledger_entries RESTART IDENTITY"
)
"""Empties the archive (and its ledger)."""
MACHINE = os.environ.get("GUTS_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres")


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
