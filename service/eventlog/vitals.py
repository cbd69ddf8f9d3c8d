"""What the dispatchers tell every API node about themselves, through Redis: their
heartbeats, the archive's lag, and how late they act on due tables.

The dispatchers are processes of their own (on any host), so they write these in the store's
Redis and an API node reads them when asked (``/readyz``, ``/metrics``); every node then
answers the same. Keys (``P`` is the key prefix)::

    P:vitals:dispatchers     sorted set  dispatcher id -> epoch of its last beat (expires
                                         after `BEAT_TTL_S` without a beat)
    P:vitals:archive-lag     hash        "events", "tables" (how far the archive is behind the
                                         logs, measured by the archiver's sweep), "at" (epoch)
    P:vitals:due-lateness    hash        the histogram of now - due when a dispatcher acted
                                         on a due table: one count per bucket ("le" bound, not
                                         cumulative), "count" and "sum" (seconds)

Each is one key (no hash tag needed: a Redis Cluster keeps it on one node). Times are the
hosts' clocks (the deadlines already need them in step).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import redis

from .derived_keys import wrong_kind

log = logging.getLogger("guts.dispatcher")

BEAT_TTL_S = 30
"""A dispatcher that has not beaten for this long is forgotten."""
ALIVE_S = 5.0
"""A dispatcher is alive when it beat within this many seconds (``/readyz``)."""
LAG_FRESH_S = 90.0
"""The archive's lag is known when the archiver measured it this recently (three of its
sweeps, ``workers.following.ARCHIVE_SWEEP_S``); older, no archiver is taking the logs."""
LATENESS_BUCKETS: tuple[float, ...] = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
"""Upper bounds of the due-lateness histogram's buckets (seconds); +Inf is implied."""


@dataclass(frozen=True)
class Beats:
    """The dispatchers' heartbeats as read at `now`: the age of the latest beat (None: no
    dispatcher has beaten within `BEAT_TTL_S`) and how many beat within `ALIVE_S`."""

    last_beat_s: float | None
    alive: int


@dataclass(frozen=True)
class ArchiveLag:
    """How far the archive is behind the logs: events the logs hold past what the archive
    took, over `tables` tables, measured `age_s` seconds ago (None: never measured)."""

    events: int | None
    tables: int | None
    age_s: float | None


class Vitals:
    """The keys above under `prefix`, on `client`."""

    alive_s = ALIVE_S
    lag_fresh_s = LAG_FRESH_S

    def __init__(self, client: redis.Redis, prefix: str = "guts") -> None:
        self.client = client
        self.beats_key = f"{prefix}:vitals:dispatchers"
        self.lag_key = f"{prefix}:vitals:archive-lag"
        self.lateness_key = f"{prefix}:vitals:due-lateness"

    # --- written by the dispatchers -----------------------------------------------------

    def beat(self, dispatcher_id: str, now: float | None = None) -> None:
        """Record that `dispatcher_id` is running its loop (and forget the long silent)."""
        now = time.time() if now is None else now

        def write() -> None:
            with self.client.pipeline(transaction=False) as pipe:
                pipe.zadd(self.beats_key, {dispatcher_id: now})
                pipe.zremrangebyscore(self.beats_key, "-inf", now - BEAT_TTL_S)
                pipe.expire(self.beats_key, BEAT_TTL_S)
                pipe.execute()

        self._healed(self.beats_key, write)

    def _healed(self, key: str, write: Callable[[], object]) -> None:
        """`write` to `key`; when Redis refuses it for what the key holds (a value written
        outside the service: another type, a count that is not one), the key is dropped and
        written afresh, with a warning: these are readings, and the next ones replace them."""
        try:
            write()
        except redis.ResponseError as error:
            if not wrong_kind(error):  # (a failover's READONLY, TRYAGAIN...: passed on)
                raise
            log.warning("%s did not read back (%s): dropped and written afresh", key, error)
            self.client.delete(key)
            write()

    def stopped(self, dispatcher_id: str) -> None:
        """A dispatcher that stops cleanly says so (it is no longer counted alive)."""
        self.client.zrem(self.beats_key, dispatcher_id)

    def report_archive_lag(self, events: int, tables: int, now: float | None = None) -> None:
        now = time.time() if now is None else now

        def write() -> None:
            self.client.hset(self.lag_key, mapping={"events": events, "tables": tables, "at": now})

        self._healed(self.lag_key, write)

    def observe_lateness(self, seconds: Sequence[float]) -> None:
        """Count `seconds` (one per due table acted on) in the histogram: one round trip."""
        if not seconds:
            return
        counts: dict[str, int] = {}
        for value in seconds:
            counts[_bucket(value)] = counts.get(_bucket(value), 0) + 1

        def write() -> None:
            with self.client.pipeline(transaction=False) as pipe:
                for bucket, count in counts.items():
                    pipe.hincrby(self.lateness_key, bucket, count)
                pipe.hincrby(self.lateness_key, "count", len(seconds))
                pipe.hincrbyfloat(self.lateness_key, "sum", sum(seconds))
                pipe.execute()

        self._healed(self.lateness_key, write)

    # --- read by the API -----------------------------------------------------------------

    def beats(self, now: float | None = None) -> Beats:
        now = time.time() if now is None else now
        with self.client.pipeline(transaction=False) as pipe:
            pipe.zrevrange(self.beats_key, 0, 0, withscores=True)
            pipe.zcount(self.beats_key, now - ALIVE_S, "+inf")
            latest, alive = pipe.execute()
        if not latest:
            return Beats(None, 0)
        return Beats(max(0.0, now - float(latest[0][1])), int(alive))

    def archive_lag(self, now: float | None = None) -> ArchiveLag:
        now = time.time() if now is None else now
        events, tables, at = cast(
            list[Any], self.client.hmget(self.lag_key, "events", "tables", "at")
        )
        try:
            return ArchiveLag(int(events), int(tables), max(0.0, now - float(at)))
        except (TypeError, ValueError):  # never measured, or not read back: not known
            return ArchiveLag(None, None, None)

    def lateness(self) -> tuple[list[tuple[str, float]], float, float]:
        """The histogram: (cumulative buckets as (le, count), count, sum)."""
        raw = {}
        for key, value in cast(dict[Any, Any], self.client.hgetall(self.lateness_key)).items():
            with contextlib.suppress(ValueError):  # (one that does not read back: left out)
                raw[_text(key)] = float(value)
        buckets, total = [], 0.0
        for bound in (*(_le(b) for b in LATENESS_BUCKETS), "+Inf"):
            total += raw.get(bound, 0.0)
            buckets.append((bound, total))
        return buckets, raw.get("count", 0.0), raw.get("sum", 0.0)


def _le(bound: float) -> str:
    return repr(float(bound))


def _bucket(value: float) -> str:
    return next((_le(b) for b in LATENESS_BUCKETS if value <= b), "+Inf")


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
