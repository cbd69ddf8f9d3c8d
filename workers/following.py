"""The followers' duty of a dispatcher: keep the projections (the ledger, the webhook
deliveries) and the archive up to the tables' logs (``service.projections``), one dispatcher at
a time (under the followers' lease).
"""

from __future__ import annotations

import logging

import redis

from service.archive.archive import Archive
from service.config import Settings
from service.eventlog.due_index import DueIndex
from service.eventlog.replication import replicated_log
from service.eventlog.vitals import Vitals
from service.infrastructure import archiver, event_store, wallet_of
from service.projections.follower import Follower
from service.projections.ledger import LedgerStore
from service.projections.projection import Projection
from service.projections.wallet_credits import WalletCredits
from service.projections.webhooks import WebhookStore

log = logging.getLogger("guts.dispatcher")


def projections(
    settings: Settings, client: redis.Redis, archived: bool = False
) -> list[Projection]:
    """Every projection of the tables' logs that the dispatchers keep
    (``service.projections.follower``)
    beside the archive (which, when there is one, keeps the ledger)."""
    webhooks = WebhookStore(client, prefix=settings.key_prefix)
    credits = WalletCredits(wallet_of(settings, client).store)
    ledger = [] if archived else [LedgerStore(client, prefix=settings.key_prefix)]
    return [*ledger, webhooks, credits]


def build_follower(
    settings: Settings, client: redis.Redis, archive: Archive | None = None
) -> tuple[Follower, str]:
    """A follower keeping `projections` up to the logs under `settings.key_prefix`, and the
    channel of the appends' notices."""
    store = event_store(settings, client, archive)
    index = DueIndex(client, prefix=settings.key_prefix)
    follower = Follower(
        store,
        projections(settings, client, archive is not None),
        index=index,
        confirm=replicated_log(store),
    )
    return follower, store.notices


ARCHIVE_SWEEP_S = 30.0
"""The archiver sweeps every table this often (and so measures its lag)."""
ARCHIVE_SETTLE_S = 0.5
"""The archive takes each table's new events at most this often (bigger batches; it lags by
about this much)."""


def build_archiver(settings: Settings, client: redis.Redis, archive: Archive) -> Follower:
    """A follower copying the logs under `settings.key_prefix` into `archive` and trimming
    them from Redis (``service.archive``); apart from the other projections, so PostgreSQL
    going away delays neither the ledger nor the webhooks. Each sweep reports the archive's
    lag (``service.eventlog.vitals``: ``/readyz`` and ``/metrics`` read it)."""
    store = event_store(settings, client, archive)
    index = DueIndex(client, prefix=settings.key_prefix)
    vitals = Vitals(client, prefix=settings.key_prefix)
    return Follower(
        store,
        [archiver(store, archive)],
        batch=2000,
        sweep_s=ARCHIVE_SWEEP_S,
        settle_s=ARCHIVE_SETTLE_S,
        index=index,
        chained=False,  # (the archive checks the chain itself)
        on_sweep=vitals.report_archive_lag,
        confirm=replicated_log(store),
    )
