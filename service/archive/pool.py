"""A small pool of PostgreSQL connections for the archive: up to `size` at once, made when
needed, reused while they are healthy, no background threads (so it behaves the same in a
plain thread, in the dispatcher and under gunicorn's gevent workers).

A connection idle for more than `CHECK_AFTER_S` is asked a ``SELECT 1`` before it is reused
(one that fails is closed and another taken): PostgreSQL restarted, failed over or ending idle
sessions leaves connections that fail on their next use, and the first request after it would
answer 503 for each of them. One used within the last second is not asked (the round trip
would cost every busy path for nothing; HikariCP skips its check the same way)."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg.pq import TransactionStatus

from service.eventlog.store import ArchiveUnavailable

CHECK_AFTER_S = 1.0
"""How long a connection may sit idle and be reused without a check."""


class Connections:
    """Connections to `url`, at most `size` in use at once; a caller waits up to `wait_s`
    for one (then ArchiveUnavailable)."""

    def __init__(self, url: str, size: int = 4, wait_s: float = 10.0) -> None:
        self.url = url
        self.wait_s = wait_s
        self._slots = threading.BoundedSemaphore(size)
        self._idle: queue.LifoQueue[tuple[psycopg.Connection, float]] = queue.LifoQueue()
        self._lock = threading.Lock()
        self._in_use = 0
        self._closed = False  # (a connection given back after `close` is closed, not kept)

    def use(self) -> tuple[int, int]:
        """(in use, idle) connections right now (``/metrics``)."""
        return self._in_use, self._idle.qsize()

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        """A connection (autocommit) for the block; one that failed is closed, not reused."""
        if not self._slots.acquire(timeout=self.wait_s):
            raise ArchiveUnavailable(f"no archive connection free within {self.wait_s:g} s")
        with self._lock:
            self._in_use += 1
        try:
            conn = self._take()
            try:
                yield conn
            except BaseException:
                conn.close()
                raise
            with self._lock:  # (with `close`: one given back as it drains is not kept)
                keep = (
                    not self._closed
                    and not conn.closed
                    and conn.info.transaction_status == TransactionStatus.IDLE
                )
                if keep:
                    self._idle.put((conn, time.monotonic()))
            if not keep:
                conn.close()
        finally:
            with self._lock:
                self._in_use -= 1
            self._slots.release()

    def _take(self) -> psycopg.Connection:
        while True:
            try:
                conn, since = self._idle.get_nowait()
            except queue.Empty:
                return psycopg.connect(self.url, autocommit=True, connect_timeout=5)
            if not conn.closed and (time.monotonic() - since <= CHECK_AFTER_S or _alive(conn)):
                return conn
            conn.close()

    def close(self) -> None:
        """Close the idle connections (those in use close when their block ends)."""
        with self._lock:
            self._closed = True
        while True:
            try:
                self._idle.get_nowait()[0].close()
            except queue.Empty:
                return


def _alive(conn: psycopg.Connection) -> bool:
    """Whether `conn` still answers (a ``SELECT 1``)."""
    try:
        conn.execute("SELECT 1")
    except psycopg.Error:
        return False
    return True
