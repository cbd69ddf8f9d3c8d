"""Readiness: whether this node can do its work, dependency by dependency (``/readyz``,
``/healthz``).

Four checks, each bounded in time (`CHECK_S`: a dead dependency answers "timed out", it
never hangs the probe):

- ``redis``: a write (``SET`` of a key of its own that expires in `PROBE_TTL_MS`) on a client
  of its own (short socket timeouts, so a Redis that stopped answering fails in about a
  second): a Redis that answers and takes no write (at its memory limit, unable to persist)
  fails it too, with its error;
- ``postgres``: on a connection of its own, where an archive is configured, that it takes
  writes (not a standby, not read-only: `_WRITABLE`);
- ``dispatcher``: a dispatcher beat its heartbeat within ``DispatcherVitals.alive_s`` (5 s);
- ``archive``: the archive's lag, as its archiver last measured it (events the logs hold that
  the archive has not taken, over every table), is at most ``GUTS_ARCHIVE_LAG_LIMIT``, and was
  measured within ``DispatcherVitals.lag_fresh_s``.

The status is ``ok`` when all pass, ``down`` when Redis fails (nothing works without it),
else ``degraded``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, cast

import psycopg
import redis
from redis.cluster import RedisCluster

from service.application.ports import DispatcherVitals, QuarantineList
from service.config import Settings
from service.infrastructure import cluster_nodes

CHECK_S = 1.0
"""How long one check may take."""
PROBE_TTL_MS = 10_000
"""How long the Redis check's key lives after its last write."""


_WRITABLE = "SELECT NOT pg_is_in_recovery() AND current_setting('transaction_read_only') = 'off'"
"""Whether the archive's PostgreSQL takes writes: not a standby, and not read-only by setting
(``default_transaction_read_only``, which an operator sets on a full disk, for one)."""


class _TimedOut(Exception):
    pass


class _ReadOnly(Exception):
    """The archive's PostgreSQL answers and takes no writes."""


def _bounded(call: Callable[[], Any], within_s: float = CHECK_S) -> Any:
    """`call()`, or _TimedOut after `within_s` (it goes on in a daemon thread, bounded by
    its own timeouts, and its answer is dropped)."""
    result: list[Any] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            result.append(call())
        except BaseException as error:  # noqa: BLE001 - handed to the caller
            failure.append(error)

    thread = threading.Thread(target=run, daemon=True, name="readiness-check")
    thread.start()
    thread.join(within_s)
    if failure:
        raise failure[0]
    if not result:
        raise _TimedOut(f"no answer within {within_s:g} s")
    return result[0]


def probe_client(settings: Settings) -> redis.Redis:
    """A small client of the store's Redis for the checks (timeouts of `CHECK_S`)."""
    assert settings.redis_url
    options = {"socket_timeout": CHECK_S, "socket_connect_timeout": CHECK_S, "max_connections": 16}
    if settings.redis_cluster:
        nodes = cluster_nodes(settings)
        cluster = RedisCluster.from_url(settings.redis_url, startup_nodes=nodes, **options)
        return cast(redis.Redis, cluster)
    return redis.Redis.from_url(settings.redis_url, **options)


def _error(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


class Readiness:
    """The checks above, for `settings`, on `client` (`probe_client`), reading the
    dispatchers' `vitals` and the quarantined tables (`index`) kept there."""

    def __init__(
        self,
        settings: Settings,
        client: redis.Redis,
        vitals: DispatcherVitals,
        index: QuarantineList,
    ) -> None:
        self.settings = settings
        self.client = client
        self.vitals = vitals
        self.index = index

    def report(self) -> tuple[str, dict[str, dict[str, Any]], list[dict[str, Any]]]:
        """(status, checks, quarantined tables)."""
        checks: dict[str, dict[str, Any]] = {}
        quarantined: list[dict[str, Any]] = []
        probe = f"{self.settings.key_prefix}:readiness-probe"
        checks["redis"] = self._timed(lambda: bool(self.client.set(probe, 1, px=PROBE_TTL_MS)))
        redis_ok = checks["redis"]["ok"]
        if redis_ok:
            try:
                held = _bounded(self.index.quarantined)
                quarantined = [{"table_id": table_id, **entry} for table_id, entry in held.items()]
            except Exception:  # noqa: BLE001 - the list is a courtesy; the checks say what failed
                quarantined = []
        checks["postgres"] = self._postgres()
        checks["dispatcher"] = self._dispatcher() if redis_ok else _skipped()
        checks["archive"] = self._archive() if redis_ok else _skipped()
        if not redis_ok:
            status = "down"
        elif all(check["ok"] for check in checks.values()):
            status = "ok"
        else:
            status = "degraded"
        return status, checks, quarantined

    def _timed(self, call: Callable[[], Any]) -> dict[str, Any]:
        started = time.perf_counter()
        try:
            ok = bool(_bounded(call))
            check: dict[str, Any] = {"ok": ok}
        except Exception as error:  # noqa: BLE001 - a failing dependency is the answer
            check = {"ok": False, "error": _error(error)}
        check["ms"] = round((time.perf_counter() - started) * 1000, 2)
        return check

    def _postgres(self) -> dict[str, Any]:
        url = self.settings.database_url
        if not url:
            return {"ok": True, "configured": False}

        def writable() -> bool:
            with psycopg.connect(url, connect_timeout=2, autocommit=True) as conn:
                found = conn.execute(_WRITABLE).fetchone()
            if found != (True,):
                raise _ReadOnly("PostgreSQL takes no writes (a standby, or transaction_read_only)")
            return True

        return {"configured": True, **self._timed(writable)}

    def _dispatcher(self) -> dict[str, Any]:
        try:
            beats = _bounded(self.vitals.beats)
        except Exception as error:  # noqa: BLE001
            return {"ok": False, "error": _error(error)}
        ok = beats.last_beat_s is not None and beats.last_beat_s <= self.vitals.alive_s
        check: dict[str, Any] = {
            "ok": ok,
            "last_beat_s": None if beats.last_beat_s is None else round(beats.last_beat_s, 3),
            "alive": beats.alive,
        }
        if not ok:
            check["error"] = f"no dispatcher beat its heartbeat within {self.vitals.alive_s:g} s"
        return check

    def _archive(self) -> dict[str, Any]:
        limit = self.settings.archive_lag_limit
        if not self.settings.database_url:
            return {"ok": True, "configured": False}
        try:
            lag = _bounded(self.vitals.archive_lag)
        except Exception as error:  # noqa: BLE001
            return {"ok": False, "configured": True, "limit": limit, "error": _error(error)}
        check: dict[str, Any] = {
            "configured": True,
            "lag_events": lag.events,
            "lag_tables": lag.tables,
            "limit": limit,
            "measured_s": None if lag.age_s is None else round(lag.age_s, 3),
        }
        if lag.age_s is None or lag.age_s > self.vitals.lag_fresh_s:
            why = f"no archiver measured the lag within {self.vitals.lag_fresh_s:g} s"
        elif lag.events > limit:
            why = f"the archive is {lag.events} events behind the logs (limit {limit})"
        else:
            return {"ok": True, **check}
        return {"ok": False, **check, "error": why}


def _skipped() -> dict[str, Any]:
    return {"ok": False, "error": "Redis does not answer"}
