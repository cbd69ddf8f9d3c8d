"""gunicorn settings that ``guts serve`` adds to its command line (``-c python:...``).

The limits below bound what gunicorn reads of a request before the app sees it (so a client
cannot make a worker buffer an unbounded request line or header block); a request over them
is answered by ``service.processes.gunicorn_overrides`` in problem+json (414, 431). Command-line
options
(``GUNICORN_CMD_ARGS``) override them. docs/operations.md ("Limits") and openapi.yaml name them.
"""

from __future__ import annotations

# gevent patches the standard library before anything of ours (or redis-py, or ssl) is
# imported by the master, as gevent asks; the workers it forks are patched already.
from gevent import monkey  # type: ignore[import-untyped]

monkey.patch_all()

import threading  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

from service.api.stream_slots import (  # noqa: E402
    default_capacity,
    free_index,
    inherited_slots,
    raise_open_files,
    share_stream_slots,
)
from service.config import Settings  # noqa: E402
from service.tables.state_cache import share_between_workers  # noqa: E402

worker_class = "service.processes.gunicorn_overrides.ProblemGeventWorker"
"""gevent workers: each request is a greenlet, so the live streams a worker holds open cost a
greenlet each, not a worker (docs/benchmarks.md, bench_http, has the measurement behind the
choice)."""
worker_connections = Settings.from_env().worker_connections
"""Connections (open streams included) one worker holds at most (GUTS_WORKER_CONNECTIONS;
the node's stream capacity leaves each worker some for everything else:
service/api/stream_slots.py)."""

limit_request_line = 4094
"""Longest request line (method, target and version), bytes: gunicorn's default."""
limit_request_fields = 100
"""Most header fields in one request: gunicorn's default."""
limit_request_field_size = 8190
"""Longest header field (name and value), bytes: gunicorn's default."""

logger_class = "service.processes.gunicorn_overrides.JsonLogger"
"""gunicorn's error log (and its access log, when one is asked for with --access-logfile) in
the service's JSON lines."""
access_log_format = '%(h)s "%(r)s" %(s)s %(B)s bytes %(D)s us'
"""Without gunicorn's own timestamp (every line has its ``ts``)."""


def on_starting(server: Any) -> None:
    """In the master, before any worker is forked: the memory where the workers will share the
    events they store (service/tables/state_cache.py) and their count of open streams against
    the node's capacity (service/api/stream_slots.py), with the open-file limit raised to what
    the workers' connections need."""
    share_between_workers()
    connections, workers = server.cfg.worker_connections, server.cfg.workers
    short = raise_open_files(connections)
    if short is not None:
        server.log.warning(short)
    capacity = Settings.from_env().stream_capacity or default_capacity(connections, workers)
    share_stream_slots(capacity)
    server.log.info(
        "stream capacity %d (%d workers of %d connections)", capacity, workers, connections
    )


def pre_fork(server: Any, worker: Any) -> None:
    """In the master: the counter of open streams the worker about to be forked will keep."""
    worker.guts_streams = free_index({w.guts_streams for w in server.WORKERS.values()})


def post_fork(server: Any, worker: Any) -> None:
    """In the worker just forked: its counter of open streams, from zero."""
    slots = inherited_slots()
    if slots is not None:
        slots.assign(worker.guts_streams)


def child_exit(server: Any, worker: Any) -> None:
    """In the master, when a worker has exited: its open streams and its ``livesum`` gauges
    no longer count (``service.api.gauges``)."""
    import os

    slots = inherited_slots()
    if slots is not None:
        slots.clear(worker.guts_streams)

    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)  # type: ignore[no-untyped-call]


ADMIT_AT_ONCE = 2
"""Requests (streams aside) one worker works on at once, the others waiting their turn in the
order they came (service/api/admission.py has the measurement behind it)."""


def post_worker_init(worker: Any) -> None:
    """In each worker: a request's body is read whole, within ``GUTS_BODY_TIMEOUT_S``, before
    anything else (`service.processes.gunicorn_bodies`: a malformed, truncated or endless body is
    refused in problem+json); requests other than streams are served first come, first served
    (`service.api.admission`). And when gunicorn tells the worker to stop (``worker.alive``
    goes false), its live streams end at once with a closing comment, instead of holding the
    worker for the graceful timeout (clients reconnect, to another worker, with
    Last-Event-ID)."""

    from service.api.admission import Admission
    from service.api.feed import close_all
    from service.config import Settings
    from service.processes.gunicorn_bodies import WholeBodies

    settings = Settings.from_env()
    admitted = Admission(worker.wsgi, ADMIT_AT_ONCE)
    worker.wsgi = WholeBodies(admitted, settings.max_body_bytes, settings.body_timeout_s)

    def watch() -> None:
        while worker.alive:
            time.sleep(0.2)
        close_all()

    threading.Thread(target=watch, name="guts-stream-closer", daemon=True).start()
