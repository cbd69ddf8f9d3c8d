"""The archive's connection pool (`service.archive.pool`) against the machine's PostgreSQL."""

from __future__ import annotations

import psycopg
import pytest

from service.archive import pool
from service.archive.pool import Connections


def test_a_connection_whose_session_was_ended_is_replaced_before_it_is_used(
    empty_archive: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL restarted, failed over or ending an idle session leaves a pooled connection
    that fails on its next use: the first history read after it answered 503."""
    connections = Connections(empty_archive, size=2)
    try:
        with connections.connection() as conn:
            (ended,) = conn.execute("SELECT pg_backend_pid()").fetchone() or (0,)
        with psycopg.connect(empty_archive, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (ended,))
        monkeypatch.setattr(pool, "CHECK_AFTER_S", 0.0, raising=False)  # (idle past the window)
        with connections.connection() as conn:
            (serving,) = conn.execute("SELECT pg_backend_pid()").fetchone() or (0,)
        assert serving not in (0, ended)
        assert connections.use() == (0, 1)  # the ended one closed, not kept
    finally:
        connections.close()


def test_a_connection_used_within_the_window_is_reused_unasked(empty_archive: str) -> None:
    connections = Connections(empty_archive, size=2)
    try:
        with connections.connection() as conn:
            first = conn.execute("SELECT pg_backend_pid()").fetchone()
        with connections.connection() as conn:
            assert conn.execute("SELECT pg_backend_pid()").fetchone() == first
    finally:
        connections.close()
