"""The metrics beside the requests' (``/metrics``): the process's own, what this process holds
(open streams, Redis and PostgreSQL connections), and what the whole service shares in Redis
(the due lateness the dispatchers observe, the archive's lag, the webhook backlog).

Where a value lives decides how it is exposed:

- **Per process** (open streams, pool use): `Sampler` sets prometheus gauges, at most once a
  second after a request and at every scrape. Under gunicorn (``PROMETHEUS_MULTIPROC_DIR``)
  they are ``livesum`` gauges: the scrape sums every live worker's last sample (a worker's
  files are dropped when it exits: ``service.processes.gunicorn_conf.child_exit``).
- **Process metrics** (CPU, memory, file descriptors, start time): prometheus_client's
  ``ProcessCollector`` for this process; under gunicorn, `WorkerProcesses` reads them for
  every live worker (the pids the multiprocess directory names), each with a ``pid`` label.
- **Shared in Redis** (`FromRedis`, read at each scrape, so every node answers the same; take
  them from any one node): ``guts_due_lateness_seconds``, a histogram of now - due each time a
  dispatcher acted on a due table (the dispatchers are other processes, on any host: they
  count it in Redis, ``service.eventlog.vitals``); ``guts_archive_lag_events``;
  ``guts_webhook_backlog``.
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import redis
from prometheus_client import CollectorRegistry, Gauge, ProcessCollector
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from service.application.ports import DispatcherVitals
from service.infrastructure import REDIS_ERRORS
from service.projections.webhooks import WebhookStore

SAMPLE_S = 1.0
"""A process samples its gauges at most this often after requests."""


def redis_pool_use(client: redis.Redis) -> tuple[int, int]:
    """(in use, idle) connections of `client`'s redis-py pool(s) (every node's, on a
    cluster), through redis-py's public ``get_connection_count``."""
    pools: list[Any]
    if hasattr(client, "get_nodes"):  # a RedisCluster
        pools = [
            n.redis_connection.connection_pool for n in client.get_nodes() if n.redis_connection
        ]
    else:
        pools = [client.connection_pool]
    in_use = idle = 0
    for pool in pools:
        (free, _), (used, _) = pool.get_connection_count()
        in_use, idle = in_use + used, idle + free
    return in_use, idle


class Sampler:
    """The per-process gauges (see the module doc), set by `sample`."""

    def __init__(
        self,
        registry: CollectorRegistry,
        streams: Callable[[], int],
        redis_pool: Callable[[], tuple[int, int]],
        postgres_pool: Callable[[], tuple[int, int]] | None,
    ) -> None:
        self.streams, self.redis_pool, self.postgres_pool = streams, redis_pool, postgres_pool
        self.open_streams = Gauge(
            "guts_open_streams",
            "Live event streams open",
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.redis = Gauge(
            "guts_redis_pool_connections",
            "Connections of the API's redis-py pool to the store's Redis, by state",
            ["state"],
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.postgres = Gauge(
            "guts_postgres_pool_connections",
            "Connections of the API's pool to the archive's PostgreSQL, by state",
            ["state"],
            registry=registry,
            multiprocess_mode="livesum",
        )
        self._next = 0.0

    def sample(self) -> None:
        self._next = time.monotonic() + SAMPLE_S
        self.open_streams.set(self.streams())
        try:
            in_use, idle = self.redis_pool()
        except Exception:  # noqa: BLE001 - a gauge never fails a request
            in_use = idle = 0
        self.redis.labels("in_use").set(in_use)
        self.redis.labels("idle").set(idle)
        if self.postgres_pool is not None:
            in_use, idle = self.postgres_pool()
            self.postgres.labels("in_use").set(in_use)
            self.postgres.labels("idle").set(idle)

    def after_request(self) -> None:
        """Sample, unless this process sampled less than `SAMPLE_S` ago."""
        if time.monotonic() >= self._next:
            self.sample()


class WorkerProcesses(Collector):
    """The process metrics of every live process that writes into the multiprocess
    directory `directory` (gunicorn's workers), each labelled with its ``pid``."""

    _PID = re.compile(r"_(\d+)\.db$")

    def __init__(self, directory: str) -> None:
        self.directory = Path(directory)

    def collect(self) -> Iterator[Metric]:
        pids = sorted(
            {
                int(m.group(1))
                for p in self.directory.glob("*.db")
                if (m := self._PID.search(p.name))
            }
        )
        families: dict[str, Metric] = {}
        for pid in pids:
            if not os.path.exists(f"/proc/{pid}/stat"):
                continue
            for family in ProcessCollector(pid=_constant(pid), registry=None).collect():
                merged = families.setdefault(
                    family.name, Metric(family.name, family.documentation, family.type)
                )
                for sample in family.samples:
                    labels = {**sample.labels, "pid": str(pid)}
                    merged.add_sample(sample.name, labels, sample.value)
        yield from families.values()


def _constant(pid: int) -> Callable[[], int]:
    return lambda: pid


class FromRedis(Collector):
    """The service-wide metrics kept in Redis (see the module doc)."""

    def __init__(
        self, client: redis.Redis, prefix: str, vitals: DispatcherVitals, archived: bool
    ) -> None:
        self.vitals = vitals
        self.webhooks = WebhookStore(client, prefix=prefix)
        self.archived = archived

    def collect(self) -> Iterator[Metric]:
        try:
            buckets, count, total = self.vitals.lateness()
            lateness = HistogramMetricFamily(
                "guts_due_lateness_seconds",
                "How late a dispatcher acted on a due table (now - due), over every dispatcher",
                buckets=buckets,
                sum_value=total,
            )
            del count  # (the +Inf bucket is the count)
            yield lateness
        except REDIS_ERRORS:
            pass
        lag = float("nan")
        if self.archived:
            try:
                measured = self.vitals.archive_lag()
                lag = math.nan if measured.events is None else float(measured.events)
            except REDIS_ERRORS:
                pass
        else:
            lag = 0.0
        yield GaugeMetricFamily(
            "guts_archive_lag_events",
            "Events the tables' logs hold that the archive has not taken, as last measured",
            value=lag,
        )
        try:
            backlog = float(self.webhooks.backlog())
        except REDIS_ERRORS:
            backlog = math.nan
        yield GaugeMetricFamily(
            "guts_webhook_backlog",
            "Webhook deliveries pending (waiting for their first or next attempt)",
            value=backlog,
        )
