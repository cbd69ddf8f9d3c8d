"""Settings, read from the environment once at start-up (docs/operations.md lists each)."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from service.logs import LEVELS


def _keys(raw: str) -> tuple[str, ...]:
    return tuple(k.strip() for k in raw.split(",") if k.strip())


def _flag(raw: str) -> bool:
    return raw.strip().lower() in ("1", "true", "yes", "on")


def _rate(name: str, text: str) -> None:
    """ValueError unless `text` is empty or a rate the ``limits`` library reads."""
    if text.strip():
        from limits import parse

        try:
            parse(text)
        except ValueError as error:
            raise ValueError(f"{name}: {text!r} is not a rate such as 20/minute") from error


def _per_tenant(raw: str) -> dict[str, str]:
    """``casino-a=100/second,casino-b=5/second`` as {tenant: limit}."""
    found = {}
    for item in _keys(raw):
        tenant, sep, limit = item.partition("=")
        if not sep or not tenant.strip() or not limit.strip():
            raise ValueError(f"GUTS_RATE_LIMIT_TENANTS takes tenant=limit items, not {item!r}")
        found[tenant.strip()] = limit.strip()
    return found


def _level(raw: str) -> str:
    level = raw.strip().lower()
    if level not in LEVELS:
        raise ValueError(f"GUTS_LOG_LEVEL must be one of {', '.join(LEVELS)}, not {raw!r}")
    return level


def _number(env: Mapping[str, str], name: str, default: float, kind: Callable[[str], Any]) -> Any:
    """The variable `name` of `env` read by `kind` (int or float; unset or empty: `default`),
    a finite number; else ValueError naming the variable (its range is `Settings`'s check)."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        value = None
    if value is None or not math.isfinite(value):
        whole = "a whole number" if kind is int else "a number"
        raise ValueError(f"{name} must be {whole}, not {raw!r}")
    return value


@dataclass(frozen=True)
class _Range:
    """What a number setting takes: from `least` (excluded when `above`) to `most`."""

    name: str
    least: float
    above: bool = False
    most: float = math.inf

    def check(self, value: float) -> None:
        low = value > self.least if self.above else value >= self.least
        if low and value <= self.most and math.isfinite(value):
            return
        what = f"more than {self.least:g}" if self.above else f"at least {self.least:g}"
        if self.most < math.inf:
            what += f" and at most {self.most:g}"
        raise ValueError(f"{self.name} must be {what}, not {value!r}")


_RANGES = {
    "redis_min_replicas": _Range("GUTS_REDIS_MIN_REPLICAS", 0),
    "redis_replica_timeout_ms": _Range("GUTS_REDIS_REPLICA_TIMEOUT_MS", 1),
    "redis_timeout_s": _Range("GUTS_REDIS_TIMEOUT_S", 0, above=True),
    "max_body_bytes": _Range("GUTS_MAX_BODY_BYTES", 1),
    "body_timeout_s": _Range("GUTS_BODY_TIMEOUT_S", 0, above=True),
    "idempotency_ttl_s": _Range("GUTS_IDEMPOTENCY_TTL_S", 1),
    "port": _Range("GUTS_PORT", 0, most=65535),
    "web_workers": _Range("GUTS_WEB_WORKERS", 1),
    "dispatchers": _Range("GUTS_DISPATCHERS", 0),
    "worker_connections": _Range("GUTS_WORKER_CONNECTIONS", 2),
    "stream_capacity": _Range("GUTS_STREAM_CAPACITY", 0),
    "stream_keep_alive_s": _Range("GUTS_STREAM_KEEP_ALIVE_S", 0, above=True, most=15),
    "redis_wait_s": _Range("GUTS_REDIS_WAIT_S", 0),
    "webhook_first_retry_s": _Range("GUTS_WEBHOOK_FIRST_RETRY_S", 0, above=True),
    "webhook_max_wait_s": _Range("GUTS_WEBHOOK_MAX_WAIT_S", 0, above=True),
    "webhook_retry_for_s": _Range("GUTS_WEBHOOK_RETRY_FOR_S", 0),
    # A call must end well within the lease of its claim: a wallet transaction the duty claimed
    # is its claimant's for 30 s, a webhook delivery for 60 s (its job ended after 3 timeouts).
    "webhook_timeout_s": _Range("GUTS_WEBHOOK_TIMEOUT_S", 0, above=True, most=19),
    "wallet_timeout_s": _Range("GUTS_WALLET_TIMEOUT_S", 0, above=True, most=20),
    "wallet_first_retry_s": _Range("GUTS_WALLET_FIRST_RETRY_S", 0, above=True),
    "wallet_max_wait_s": _Range("GUTS_WALLET_MAX_WAIT_S", 0, above=True),
    "wallet_credit_for_s": _Range("GUTS_WALLET_CREDIT_FOR_S", 0),
    "wallet_debit_grace_s": _Range("GUTS_WALLET_DEBIT_GRACE_S", 0, above=True),
    "archive_keep_events": _Range("GUTS_ARCHIVE_KEEP_EVENTS", 0),
    "follow_lease_s": _Range("GUTS_FOLLOW_LEASE_S", 0, above=True),
    "archive_lag_limit": _Range("GUTS_ARCHIVE_LAG_LIMIT", 0),
}
"""The range of every number setting (docs/operations.md#environment-variables)."""


def _check_redis_url(name: str, url: str) -> None:
    """ValueError naming `name` unless `url` is a URL redis-py reads (not echoed: it may hold
    a password)."""
    from redis import ConnectionPool

    try:
        ConnectionPool.from_url(url)
    except ValueError as error:
        why = "" if "schemes" in str(error) else f" ({str(error).replace(url, '...')})"
        raise ValueError(f"{name} must be a redis://, rediss:// or unix:// URL{why}") from None


def _check_database_url(url: str) -> None:
    """ValueError unless `url` is a PostgreSQL URL or connection string (not echoed)."""
    from psycopg import ProgrammingError
    from psycopg.conninfo import conninfo_to_dict

    try:
        conninfo_to_dict(url)
    except ProgrammingError:
        raise ValueError(
            "GUTS_DATABASE_URL must be a postgresql:// URL or a libpq connection string"
        ) from None


SHORTCUTS = frozenset({"flask_request_bypass", "redis_py_bypass"})
"""The shortcuts around libraries (style habit 17), each named for its module."""


def _shortcuts(raw: str) -> frozenset[str]:
    names = frozenset(name.strip() for name in raw.split(",") if name.strip())
    return SHORTCUTS if names == {"all"} else names


@dataclass(frozen=True)
class Settings:
    """Everything the service reads from its environment."""

    redis_url: str | None = None
    redis_cluster: bool = False
    # On a Redis Cluster, more of its nodes to start from besides REDIS_URL's ("host:port"):
    # a process that starts while REDIS_URL's node is away reaches the cluster through them.
    redis_cluster_nodes: tuple[str, ...] = ()
    # Acknowledged means replicated: a command answers 2xx only once this many replicas hold
    # its events (WAIT, within redis_replica_timeout_ms; else 503 outcome-unknown).
    redis_min_replicas: int = 0
    redis_replica_timeout_ms: int = 200
    # On a Redis Cluster, a command unanswered this long is taken for its node being away (a
    # stalled master: SIGSTOP, a frozen machine, a partition), so the client goes to whoever
    # holds the slot once a replica has taken over, instead of waiting on the node.
    redis_timeout_s: float = 1.0
    queue_redis_url: str | None = None
    operator_keys: tuple[str, ...] = ()
    auditor_keys: tuple[str, ...] = ()
    sandbox: bool = False
    token_secret: str | None = None
    key_prefix: str = "guts"
    max_body_bytes: int = 64 * 1024
    body_timeout_s: float = 10.0
    idempotency_ttl_s: int = 24 * 3600
    host: str = "127.0.0.1"
    port: int = 8000
    data_dir: str = "data"
    web_workers: int = 2
    dispatchers: int = 2
    """Dispatchers `guts serve` runs (0: none, where they run elsewhere: `guts dispatch`)."""
    worker_connections: int = 6000
    stream_capacity: int = 0
    """Streams one node (one gunicorn) holds open at most; 0: derived from the workers and
    their connections (`service.api.stream_slots.default_capacity`)."""
    stream_keep_alive_s: float = 10.0
    """A quiet stream's keep-alive comment comes at least this often (the contract: 15 s at
    most); it is also how soon a stream whose client vanished is found out and ends."""
    log_level: str = "info"
    redis_wait_s: float = 60.0
    cors_origins: tuple[str, ...] = ()
    webhook_first_retry_s: float = 5.0
    webhook_max_wait_s: float = 3600.0
    webhook_retry_for_s: float = 25 * 3600.0
    webhook_timeout_s: float = 10.0
    wallet_timeout_s: float = 5.0
    allow_private_urls: bool = False
    """Whether the wallets and webhook receivers the casinos name may be at addresses that are
    not public (loopback, private networks, link-local): off, none is called there."""
    wallet_first_retry_s: float = 5.0
    wallet_max_wait_s: float = 3600.0
    wallet_credit_for_s: float = 25 * 3600.0
    wallet_debit_grace_s: float = 30.0
    database_url: str | None = None
    archive_keep_events: int = 100
    follow_lease_s: float = 10.0
    archive_lag_limit: int = 10000
    # Rate limits (``limits`` notation: "20/minute"; empty: none). None in Settings built by
    # hand (tests); `from_env` has the service's defaults: 20 failed authentications a minute
    # per address, 10 commands a second per player token.
    rate_limit_auth_failures: str = ""
    rate_limit_commands: str = ""
    rate_limit_keys: str = ""
    rate_limit_tenants: Mapping[str, str] = field(default_factory=dict)
    extra: Mapping[str, str] = field(default_factory=dict)
    # The measured shortcuts around libraries (`SHORTCUTS`) this process leaves out, taking
    # the plain path instead (GUTS_SHORTCUTS_OFF, comma-separated names, "all" for every one):
    # for measuring what each is worth (tests/bench/bench_http.py --shortcuts) and for
    # running without one should a library's new version break it.
    shortcuts_off: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        unknown = sorted(self.shortcuts_off - SHORTCUTS)
        if unknown:
            raise ValueError(
                f"GUTS_SHORTCUTS_OFF names {', '.join(unknown)}: the shortcuts are "
                f"{', '.join(sorted(SHORTCUTS))} (or all)"
            )
        for name in ("auth_failures", "commands", "keys"):
            _rate(f"GUTS_RATE_LIMIT_{name.upper()}", getattr(self, f"rate_limit_{name}"))
        for tenant, limit in self.rate_limit_tenants.items():
            _rate(f"GUTS_RATE_LIMIT_TENANTS ({tenant})", limit)
        for name, allowed in _RANGES.items():
            allowed.check(getattr(self, name))
        if self.wallet_debit_grace_s <= self.wallet_timeout_s:
            raise ValueError(
                "GUTS_WALLET_DEBIT_GRACE_S must be longer than GUTS_WALLET_TIMEOUT_S (the duty "
                "would finish a debit whose call may still be answered)"
            )
        if self.redis_cluster and self.redis_timeout_s * 1000 <= self.redis_replica_timeout_ms:
            raise ValueError(
                "GUTS_REDIS_TIMEOUT_S must be longer than GUTS_REDIS_REPLICA_TIMEOUT_MS (a WAIT "
                "that may take that long would be taken for an unanswered command)"
            )
        for node in self.redis_cluster_nodes:
            host, _, port = node.rpartition(":")
            if not host or not port.isdigit():
                raise ValueError(f"GUTS_REDIS_CLUSTER_NODES takes host:port items, not {node!r}")
        for name, url in (
            ("REDIS_URL", self.redis_url),
            ("GUTS_QUEUE_REDIS_URL", self.queue_redis_url),
        ):
            if url is not None:
                _check_redis_url(name, url)
        if self.database_url is not None:
            _check_database_url(self.database_url)
        if self.redis_cluster and not self.queue_redis_url:
            raise ValueError(
                "GUTS_REDIS_CLUSTER is set: RQ needs a plain Redis for its queues "
                "(set GUTS_QUEUE_REDIS_URL)"
            )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Settings from `env` (default: the process environment)."""
        env = os.environ if env is None else env
        return cls(
            redis_url=env.get("REDIS_URL") or None,
            redis_cluster=_flag(env.get("GUTS_REDIS_CLUSTER", "")),
            redis_cluster_nodes=_keys(env.get("GUTS_REDIS_CLUSTER_NODES", "")),
            redis_min_replicas=_number(env, "GUTS_REDIS_MIN_REPLICAS", 0, int),
            redis_replica_timeout_ms=_number(env, "GUTS_REDIS_REPLICA_TIMEOUT_MS", 200, int),
            redis_timeout_s=_number(env, "GUTS_REDIS_TIMEOUT_S", 1, float),
            queue_redis_url=env.get("GUTS_QUEUE_REDIS_URL") or None,
            operator_keys=_keys(env.get("GUTS_OPERATOR_KEYS", "")),
            auditor_keys=_keys(env.get("GUTS_AUDITOR_KEYS", "")),
            sandbox=_flag(env.get("GUTS_SANDBOX", "")),
            token_secret=env.get("GUTS_TOKEN_SECRET") or None,
            key_prefix=env.get("GUTS_KEY_PREFIX", "guts"),
            max_body_bytes=_number(env, "GUTS_MAX_BODY_BYTES", 64 * 1024, int),
            body_timeout_s=_number(env, "GUTS_BODY_TIMEOUT_S", 10, float),
            idempotency_ttl_s=_number(env, "GUTS_IDEMPOTENCY_TTL_S", 24 * 3600, int),
            host=env.get("GUTS_HOST", "127.0.0.1"),
            port=_number(env, "GUTS_PORT", 8000, int),
            data_dir=env.get("GUTS_DATA_DIR", "data"),
            web_workers=_number(env, "GUTS_WEB_WORKERS", 2, int),
            dispatchers=_number(env, "GUTS_DISPATCHERS", 2, int),
            worker_connections=_number(env, "GUTS_WORKER_CONNECTIONS", 6000, int),
            stream_capacity=_number(env, "GUTS_STREAM_CAPACITY", 0, int),
            stream_keep_alive_s=_number(env, "GUTS_STREAM_KEEP_ALIVE_S", 10, float),
            log_level=_level(env.get("GUTS_LOG_LEVEL", "info")),
            redis_wait_s=_number(env, "GUTS_REDIS_WAIT_S", 60, float),
            cors_origins=_keys(env.get("GUTS_CORS_ORIGINS", "")),
            webhook_first_retry_s=_number(env, "GUTS_WEBHOOK_FIRST_RETRY_S", 5, float),
            webhook_max_wait_s=_number(env, "GUTS_WEBHOOK_MAX_WAIT_S", 3600, float),
            webhook_retry_for_s=_number(env, "GUTS_WEBHOOK_RETRY_FOR_S", 25 * 3600, float),
            webhook_timeout_s=_number(env, "GUTS_WEBHOOK_TIMEOUT_S", 10, float),
            wallet_timeout_s=_number(env, "GUTS_WALLET_TIMEOUT_S", 5, float),
            allow_private_urls=_flag(env.get("GUTS_ALLOW_PRIVATE_URLS", "")),
            wallet_first_retry_s=_number(env, "GUTS_WALLET_FIRST_RETRY_S", 5, float),
            wallet_max_wait_s=_number(env, "GUTS_WALLET_MAX_WAIT_S", 3600, float),
            wallet_credit_for_s=_number(env, "GUTS_WALLET_CREDIT_FOR_S", 25 * 3600, float),
            wallet_debit_grace_s=_number(env, "GUTS_WALLET_DEBIT_GRACE_S", 30, float),
            database_url=env.get("GUTS_DATABASE_URL") or None,
            archive_keep_events=_number(env, "GUTS_ARCHIVE_KEEP_EVENTS", 100, int),
            follow_lease_s=_number(env, "GUTS_FOLLOW_LEASE_S", 10, float),
            archive_lag_limit=_number(env, "GUTS_ARCHIVE_LAG_LIMIT", 10000, int),
            rate_limit_auth_failures=env.get("GUTS_RATE_LIMIT_AUTH_FAILURES", "20/minute"),
            rate_limit_commands=env.get("GUTS_RATE_LIMIT_COMMANDS", "10/second"),
            rate_limit_keys=env.get("GUTS_RATE_LIMIT_KEYS", ""),
            rate_limit_tenants=_per_tenant(env.get("GUTS_RATE_LIMIT_TENANTS", "")),
            shortcuts_off=_shortcuts(env.get("GUTS_SHORTCUTS_OFF", "")),
        )
