"""What a process is built on, built one way for all (the API, the dispatchers, the jobs, the
commands): the composition of the infrastructure from the settings.

- The Redis clients: the *store's* Redis (tables, indexes, projections, tokens, audit
  records, the live feed's notices), which may be a Redis Cluster (``GUTS_REDIS_CLUSTER=1``:
  ``REDIS_URL`` names one of its nodes, ``GUTS_REDIS_CLUSTER_NODES`` more: `cluster_nodes`),
  and the *queues'* Redis (RQ's jobs), which must be a plain Redis because RQ cannot run on a
  cluster (``GUTS_QUEUE_REDIS_URL``; by default the store's).
- The stores: the event store on Redis, and, when ``GUTS_DATABASE_URL`` is set, the archive it
  reads trimmed events from, and the ledger as readers see it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import redis
from redis.backoff import ExponentialWithJitterBackoff
from redis.cluster import ClusterNode, RedisCluster
from redis.retry import Retry

from service.application import TableService
from service.application.values import IssueToken
from service.archive.archive import Archive
from service.archive.ledger import ArchiveLedger
from service.audit.jobs import QueuedJobs
from service.config import Settings
from service.eventlog.due_index import DueIndex, QuarantineView
from service.eventlog.fail_fast import FailFastConnection, reread_at_most_every
from service.eventlog.redis_errors import REDIS_ERRORS as REDIS_ERRORS  # (for service.api)
from service.eventlog.redis_errors import store_error as store_error  # (for service.api)
from service.eventlog.redis_py_bypass import REREAD_S
from service.eventlog.redis_store import RedisEventStore
from service.eventlog.replication import Replicated, replicated_upto
from service.eventlog.table_list import TableList
from service.eventlog.vitals import Vitals
from service.projections.follower import Follower
from service.projections.ledger import LedgerStore
from service.projections.wallet import WalletStore
from service.projections.wallet_calls import Wallet
from service.projections.wallet_messages import WalletSchedule
from service.projections.webhooks import WebhookStore
from service.tables import Tables
from service.tables.state_cache import StateCache, inherited

if TYPE_CHECKING:
    from limits.storage import Storage

CONNECTIONS = 32
"""Connections a process opens to Redis at most (per node of a cluster)."""
CLUSTER_RETRIES, CLUSTER_RETRY_CAP_S = 10, 0.25
"""How redis-py's cluster client retries a command whose node went away (reading the map of
the slots again each time): 10 times (its default), waiting at most 250 ms between two (its
default, 1 s, made a command notice a replica's promotion up to a second late: a second of
unavailability added to each failover)."""


def cluster_nodes(settings: Settings) -> list[ClusterNode]:
    """The cluster's nodes to start from besides ``REDIS_URL``'s (``GUTS_REDIS_CLUSTER_NODES``):
    redis-py's cluster client asks each in turn for the map of the slots until one answers,
    so a process started while the node ``REDIS_URL`` names is away (killed, its replica
    promoted) reaches the cluster (with the URL alone: ``Redis Cluster cannot be
    connected``). The URL still gives every node's options (password, TLS)."""
    nodes = (node.rpartition(":") for node in settings.redis_cluster_nodes)
    return [ClusterNode(host, int(port)) for host, _, port in nodes]  # type: ignore[no-untyped-call]


def store_client(
    settings: Settings,
    *,
    connections: int = CONNECTIONS,
    wait_s: float = 10.0,
    fail_fast: bool = False,
) -> redis.Redis:
    """A client of the store's Redis (a cluster client with ``GUTS_REDIS_CLUSTER``); at most
    `connections` connections (per node), a caller waiting up to `wait_s` for a free one. On a
    cluster a command unanswered for ``GUTS_REDIS_TIMEOUT_S`` fails: its node is away (a
    stalled master), and the client reads the map of the slots again and goes to the slot's
    master as it is then (once a replica has taken over), rather than waiting on that node.
    With `fail_fast` (the API's: its commands are requests'), a command for a master that is
    away is not sent again, and one for a stalled master is refused unsent until it answers
    again (`service.eventlog.fail_fast`): the request answers 503 at once."""
    url = _required(settings.redis_url)
    if settings.redis_cluster:
        options = _cluster_options(settings, fail_fast)
        cluster = RedisCluster.from_url(url, max_connections=connections, **options)
        if fail_fast:
            reread_at_most_every(cluster, REREAD_S)
        return cast(redis.Redis, cluster)
    pool = redis.BlockingConnectionPool.from_url(url, max_connections=connections, timeout=wait_s)
    return redis.Redis(connection_pool=pool)


def _cluster_options(settings: Settings, fail_fast: bool) -> dict[str, Any]:
    """redis-py's cluster client's options for `store_client` and `rate_limit_storage`."""
    return {
        "startup_nodes": cluster_nodes(settings),
        "socket_timeout": settings.redis_timeout_s,
        "socket_connect_timeout": settings.redis_timeout_s,
        "retry": Retry(ExponentialWithJitterBackoff(cap=CLUSTER_RETRY_CAP_S), CLUSTER_RETRIES),
        **({"connection_class": FailFastConnection} if fail_fast else {}),
    }


def rate_limit_storage(settings: Settings) -> Storage:
    """The rate limits' storage (the ``limits`` library's) on the store's Redis: on a cluster
    its cluster storage, from every node the settings name, failing fast as the API's client
    does (a stalled master's counters refused unsent, not waited on; a command unanswered
    within ``GUTS_REDIS_TIMEOUT_S`` fails); `service.api.rate_limits` says what then."""
    from limits.storage import RedisClusterStorage, RedisStorage  # (the API's alone)

    url = _required(settings.redis_url)
    prefix = f"{settings.key_prefix}:limits"
    if not settings.redis_cluster:
        return RedisStorage(url, key_prefix=prefix, socket_timeout=2.0, socket_connect_timeout=2.0)
    cluster = _cluster_options(settings, fail_fast=True)
    nodes = [f"{node.host}:{node.port}" for node in cluster.pop("startup_nodes")]
    where = url.partition("://")[2].split("/", 1)[0]  # ([credentials@]host:port)
    cluster_url = f"redis+cluster://{','.join([where, *nodes])}"
    # (`url` too, as `store_client` gives it: redis-py then makes its nodes' connections with
    # the pools that take a connection class)
    storage = RedisClusterStorage(cluster_url, key_prefix=prefix, url=url, **cluster)
    reread_at_most_every(storage.storage, REREAD_S)
    return storage


def queue_url(settings: Settings) -> str:
    """Where RQ's queues are: ``GUTS_QUEUE_REDIS_URL``, else the store's Redis (`Settings`
    refuses a cluster without the former)."""
    return settings.queue_redis_url or _required(settings.redis_url)


def queue_client(settings: Settings, store: redis.Redis) -> redis.Redis:
    """A client of the queues' Redis: its own with ``GUTS_QUEUE_REDIS_URL``, else `store`
    (the store's client, shared)."""
    return redis.Redis.from_url(settings.queue_redis_url) if settings.queue_redis_url else store


def _required(url: str | None) -> str:
    if not url:
        raise ValueError("REDIS_URL is not set")
    return url


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
        min_replicas=settings.redis_min_replicas,
        replica_timeout_ms=settings.redis_replica_timeout_ms,
    )


def wallet_of(
    settings: Settings, client: redis.Redis, commands: Replicated | None = None
) -> Wallet:
    """The casino wallets' records and calls on `client`, paced as `settings` say; a debit's
    confirmation sent through `commands` when given (an event store's)."""
    schedule = WalletSchedule(
        timeout_s=settings.wallet_timeout_s,
        first_retry_s=settings.wallet_first_retry_s,
        max_wait_s=settings.wallet_max_wait_s,
        credit_for_s=settings.wallet_credit_for_s,
        debit_grace_s=settings.wallet_debit_grace_s,
    )
    keys = RedisEventStore(client, prefix=settings.key_prefix)  # (its keys' names only)
    private_ok = settings.allow_private_urls
    store = WalletStore(
        client, keys.idempotency_key, settings.key_prefix, commands=commands, private_ok=private_ok
    )
    return Wallet(store, schedule)


def feed_confirmation(store: RedisEventStore) -> Callable[[str, int], bool] | None:
    """For the live feed: whether the replicas hold a table's log up to a version (None
    without ``GUTS_REDIS_MIN_REPLICAS``), so that it sends only what a failover keeps."""
    return replicated_upto(store)


def archiver(store: RedisEventStore, archive: Archive) -> Archive:
    """The archive as the projection that copies `store`'s logs and trims them, and derives
    the ledger's entries."""
    return Archive(archive.pool, store)


def ledger_of(
    settings: Settings,
    client: redis.Redis,
    archive: Archive | None,
    commands: Replicated | None = None,
) -> LedgerStore:
    """The ledger as readers see it: in the archive when there is one (`archiver` keeps it),
    else the Redis projection (the dispatchers' follower keeps it); its limits read through
    `commands` when given (an event store's)."""
    ledger = LedgerStore(client, prefix=settings.key_prefix, commands=commands)
    return ledger if archive is None else ArchiveLedger(archive, ledger)


def vitals_of(settings: Settings, client: redis.Redis) -> Vitals:
    """What the dispatchers tell the API nodes of themselves, read on `client`."""
    return Vitals(client, prefix=settings.key_prefix)


def due_index(settings: Settings, client: redis.Redis, store: RedisEventStore) -> DueIndex:
    """The due index for the tables of `store` (on `client`), its records sent the store's
    way; on one Redis (not a cluster) the store's appends record a due with the events."""
    index = DueIndex(client, prefix=settings.key_prefix, commands=store.commands)
    if not settings.redis_cluster:
        store.index_due_with(index.record_keys)
    return index


def quarantine_list(settings: Settings, client: redis.Redis) -> DueIndex:
    """The quarantined tables' list (the due index keeps it), read on `client`."""
    return DueIndex(client, prefix=settings.key_prefix)


@dataclass(frozen=True)
class TableServiceParts:
    """What `build_table_service` made: the use cases, and the parts the API also serves
    from (the live feed reads the store's notices, /metrics the index, /readyz the archive)."""

    usecases: TableService
    tables: Tables
    store: RedisEventStore
    index: DueIndex
    archive: Archive | None
    wallet: Wallet


def build_table_service(
    settings: Settings,
    redis_client: redis.Redis,
    issue_token: IssueToken,
    *,
    shared: bool = False,
) -> TableServiceParts:
    """The use cases an API process serves, on `redis_client` (and the archive of
    `settings`): the tables with this process's state cache (shared with its sibling workers
    when `shared` and the parent set that up: `state_cache.inherited`), the quarantine the API
    refuses,
    the ledger and the follower that catches a table up when a request needs it current, the
    audit and report jobs, the webhooks."""
    queue = queue_client(settings, redis_client)  # RQ's (audits, reports)
    archive = open_archive(settings)  # (the events trimmed from Redis are read from it)
    store = event_store(settings, redis_client, archive)
    where = redis_client.get_connection_kwargs()
    namespace = "|".join(str(where.get(k)) for k in ("host", "port", "path", "db"))
    namespace += f"|{settings.key_prefix}"
    cache = StateCache(shared=inherited() if shared else None, namespace=namespace)
    # The index's record and the loss limits' read go on a request's path: the store's way
    # (its shortcut around redis-py, when on: measured in docs/benchmarks.md, bench_http).
    index = due_index(settings, redis_client, store)
    listing = TableList(redis_client, prefix=settings.key_prefix)
    # Every read and command of a quarantined table is refused (409); one found unreadable
    # here is quarantined (service.eventlog.decoding).
    tables = Tables(store, cache=cache, index=index, listing=listing, held=QuarantineView(index))
    # The ledger is kept by the dispatchers' followers (with an archive, by its archiver);
    # this one catches a table up when a request needs it current (a page of one table, a
    # loss-limit decision, a page of its hands).
    ledger = ledger_of(settings, redis_client, archive, store.commands)
    wallet = wallet_of(settings, redis_client, store.commands)
    follower = Follower(
        store,
        [ledger if archive is None else archiver(store, archive)],
        index=index,
        chained=archive is None,  # (the archive checks the chain itself)
    )
    usecases = TableService(
        tables,
        QueuedJobs(redis_client, queue, settings.key_prefix),
        issue_token=issue_token,
        sandbox=settings.sandbox,
        ledger=ledger,
        follower=follower,
        archive=archive,
        archiver=None if archive is None else follower,
        webhooks=WebhookStore(
            redis_client, prefix=settings.key_prefix, private_ok=settings.allow_private_urls
        ),
        wallet=wallet,
    )
    return TableServiceParts(usecases, tables, store, index, archive, wallet)
