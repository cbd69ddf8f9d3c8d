"""``guts dispatch``: the composition root of a dispatcher process, which runs its duties, each
in a module of its own:

- the clock (``workers.clock``): act on tables when something falls due on them;
- the followers (``workers.following``): the projections and the archive, one dispatcher at a
  time, in threads of their own, so a slow projection never delays a deadline;
- the webhook attempts (``workers.webhook_queue``), in a thread of its own;
- the casino wallets' pending transactions (``workers.wallet_duty``), in a thread of its own;
- the limits changes still to apply at the tables (``workers.protection_duty``), likewise.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from typing import Any

from service.archive.database import connect, migrate
from service.config import Settings
from service.infrastructure import open_archive, queue_client, store_client, wallet_of
from service.pacing import Heartbeat
from service.projections.lease import Lease, run_while_holding
from service.projections.webhooks import WebhookStore
from workers.clock import Dispatcher, DispatchTimes, build_dispatcher, protection_service
from workers.following import ARCHIVE_SETTLE_S, build_archiver, build_follower, projections
from workers.protection_duty import run_protection_duty
from workers.wallet_duty import run_wallet_duty
from workers.webhook_queue import queue_webhooks, webhook_schedule

__all__ = [
    "ARCHIVE_SETTLE_S",
    "DispatchTimes",
    "Dispatcher",
    "build_archiver",
    "build_dispatcher",
    "build_follower",
    "projections",
    "queue_webhooks",
    "run_dispatcher",
    "webhook_schedule",
]

log = logging.getLogger("guts.dispatcher")


def _duty(name: str, target: Callable[..., None], *args: Any) -> threading.Thread:
    """A duty of the dispatcher beside the clock: a thread of its own, running `target` on
    `args` (the dispatcher's stop event among them: it ends when that is set)."""
    return threading.Thread(target=target, args=args, name=name, daemon=True)


def _following(
    settings: Settings, client: Any, archive: Any, stop: threading.Event
) -> threading.Thread:
    """The followers' duty: the projections followed beside the clock, in a thread of their
    own (a slow projection never delays a deadline), the archive in another; one dispatcher
    at a time follows (a lease: the others are its hot spares, see service.projections.lease;
    one killed with -9 is replaced within the lease's time to live, one stopped cleanly at
    once)."""
    follower, notices = build_follower(settings, client, archive)
    followers = [follower] if follower.projections else []
    if archive is not None:
        followers.append(build_archiver(settings, client, archive))

    def follow(term: threading.Event) -> None:
        running = [
            threading.Thread(target=each.run, args=(client, notices, term), daemon=True)
            for each in followers
        ]
        for thread in running:
            thread.start()
        for thread in running:
            thread.join()

    ttl_s = settings.follow_lease_s
    lease = Lease(client, "followers", prefix=settings.key_prefix, ttl_s=ttl_s)
    return threading.Thread(
        target=run_while_holding,
        args=(lease, follow, stop),
        kwargs={"renew_s": ttl_s / 5},
        name="followers",
        daemon=True,
    )


def run_dispatcher(settings: Settings, heartbeat: Heartbeat | None = None) -> int:
    """Entry point of `guts dispatch`: dispatch until SIGTERM or SIGINT, beating `heartbeat`
    (under ``guts serve``'s supervisor); the exit code."""
    if not settings.redis_url:
        log.error("REDIS_URL is not set: the dispatcher needs the Redis that the API uses")
        return 1
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    client = store_client(settings)
    queues = queue_client(settings, client)
    archive = None
    if settings.database_url:
        with connect(settings.database_url) as conn:  # the schema first: we write it
            migrate(conn)
        archive = open_archive(settings, size=2)
    threads = [
        _following(settings, client, archive, stop),
        _duty(
            "webhooks",
            queue_webhooks,
            WebhookStore(client, prefix=settings.key_prefix),
            webhook_schedule(settings),
            stop,
            queues,
        ),
        _duty("wallet", run_wallet_duty, wallet_of(settings, client), stop),
        _duty(
            "protection", run_protection_duty, protection_service(settings, client, archive), stop
        ),
    ]
    try:
        log.info("dispatcher started", extra={"prefix": settings.key_prefix})
        for thread in threads:
            thread.start()
        beat = heartbeat.beat if heartbeat is not None else (lambda: None)
        build_dispatcher(settings, client, archive).run(stop, beat)
    finally:
        stop.set()
        for thread in threads:
            if thread.is_alive():
                thread.join(timeout=10)
        client.close()
        if archive is not None:
            archive.close()
    return 0
