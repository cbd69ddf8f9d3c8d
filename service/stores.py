"""The stores a process works on, built one way for all (the API, the dispatcher, the jobs):
the event store on Redis, and, when ``GUTS_DATABASE_URL`` is set, the archive it reads
trimmed events from."""

from __future__ import annotations

import redis

from service.archive.archive import Archive
from service.archive.ledger import ArchiveLedger
from service.config import Settings
from service.eventlog.redis_store import RedisEventStore
from service.ledger_store import LedgerStore


def open_archive(settings: Settings, *, size: int = 4) -> Archive | None:
    """The archive of `settings`, None without a database."""
    if not settings.database_url:
        return None
    return Archive.open(settings.database_url, size=size)


def event_store(
    settings: Settings,
    client: redis.Redis,
    archive: Archive | None = None,
) -> RedisEventStore:
    """The tables' event store on `client`, reading what was archived from `archive`, with
    its shortcut around redis-py unless `settings.shortcuts_off` names it."""
    return RedisEventStore(
        client,
        prefix=settings.key_prefix,
        idempotency_ttl_s=settings.idempotency_ttl_s,
        bypass_redis_py="redis_py_bypass" not in settings.shortcuts_off,
        archive=archive,
        keep=settings.archive_keep_events,
    )


def archiver(store: RedisEventStore, archive: Archive) -> Archive:
    """The archive as the projection that copies `store`'s logs and trims them, and derives
    the ledger's entries."""
    return Archive(archive.pool, store)


def ledger_of(settings: Settings, client: redis.Redis, archive: Archive | None) -> LedgerStore:
    """The ledger as readers see it: in the archive when there is one (`archiver` keeps it),
    else the Redis projection (the dispatchers' follower keeps it)."""
    ledger = LedgerStore(client, prefix=settings.key_prefix)
    return ledger if archive is None else ArchiveLedger(archive, ledger)
