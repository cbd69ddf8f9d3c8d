"""Rate limits, kept in Redis so they hold across every API node (docs/operations-limits.md).

Three limits, each a string such as ``20/minute`` or ``10/second`` (the ``limits`` library's
notation; empty: none), from the settings (``GUTS_RATE_LIMIT_*``):

- **failed authentications per client address** (`auth_failures`, default 20 a minute): a
  failure is answered 401 only when the shared count admits it, else 429; so no more than the
  limit of 401s go to one address in any window, over all nodes. Once an address has failed
  here, this process also asks the shared count before it answers that address's requests
  with a good credential, and refuses them (429) while the address is over the limit (a right
  guess is then not told apart from a wrong one); an address that never failed here costs
  nothing (no round trip to Redis), so a node that has not yet seen an address fail may
  answer one good credential from it before it learns (at most one a window per node);
- **commands per player token** (`commands`, default 10 a second): each request other than a
  GET that a player token makes, counted at the token's table, in the same script as the
  command's events when it writes some (`service.eventlog.store.Quota`: no round trip
  of its own), else once the answer is known (`counted_late`: a command refused by the
  rules, replayed, or refused before it reached its table is then answered 429 instead);
- **requests per operator or auditor key** (`keys`, default none), or the limit set for the
  key's tenant (`tenants`, ``GUTS_RATE_LIMIT_TENANTS=casino-a=100/second,...``).

The other counting is the ``limits`` library's (the storage and algorithms Flask-Limiter is
built on), used directly: its moving window, one Lua script on one Redis key per counter, so
every node shares it and the number admitted in any window of the limit's length never exceeds
the limit (the commands' counter is the same algorithm, in the event store's scripts).
(Flask-Limiter's decorators fit limits chosen per route; these are chosen by who the caller
turns out to be, which is known only once the credential is read: ``http.caller``.)
On a Redis Cluster the storage is ``limits``'s cluster storage (each counter is one key).

**Redis away** (a counter's master failing over, issue 31): a count that cannot be made
within ``GUTS_REDIS_TIMEOUT_S`` (on a cluster a stalled master's is refused at once, unsent:
`service.infrastructure.rate_limit_storage`) *admits* a request with a good credential (an
operator's or auditor's key, a good credential from an address that failed lately): the
limits guard against abuse over a minute, and a few seconds uncounted admit at most that many
seconds' requests more, whereas failing would make every key-limited request wait on, or fail
with, one master whatever its table's master. A failed authentication that cannot be counted
is answered 503 (as before): no command is held, and a guesser learns nothing while the count
of its guesses cannot be kept. The commands per player token are counted with the command's
events, on the table's own master: when that master is away, so is the command.
Credentials are never stored: counters are named by a SHA-256 prefix of the credential.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

import redis
from flask import Response, request
from limits import RateLimitItem, parse
from limits.storage import Storage
from limits.strategies import MovingWindowRateLimiter
from redis.exceptions import RedisClusterException

from service.application import Quota
from service.application.access import Caller
from service.application.errors import OverLimit, StoreError, StoreUnavailable
from service.config import Settings
from service.infrastructure import rate_limit_storage
from service.rules.views import PLAYER

from . import flask_request_bypass as bypass
from .refusal import ApiError

log = logging.getLogger("guts.api")

QUOTA = "guts.quota"
"""In the WSGI environ: a player's command's `Quota`, counted where it lands."""
QUOTA_TABLE = "guts.quota_table"
"""... and the table where it counts (the player token's)."""


class RateLimited(ApiError):
    """Over a limit: 429, with how long to wait (seconds) before one more is admitted."""

    status, title = 429, "Too Many Requests"

    def __init__(self, detail: str, retry_after_s: int) -> None:
        super().__init__(detail)
        self.detail, self.retry_after_s = detail, retry_after_s


def _limit(text: str) -> RateLimitItem | None:
    return parse(text) if text.strip() else None


@functools.lru_cache(maxsize=10_000)
def _name(credential: str) -> str:
    """The name of `credential`'s counters (a SHA-256 prefix, kept per process for the
    credentials seen lately: each command of a player token is counted under it)."""
    return hashlib.sha256(credential.encode()).hexdigest()[:32]


class RateLimits:
    """The limits of `settings` on `storage` (see the module doc)."""

    def __init__(self, settings: Settings, storage: Storage | None = None) -> None:
        self.auth_failures = _limit(settings.rate_limit_auth_failures)
        self.commands = _limit(settings.rate_limit_commands)
        self.keys = _limit(settings.rate_limit_keys)
        self.tenants: Mapping[str, RateLimitItem | None] = {
            tenant: _limit(text) for tenant, text in settings.rate_limit_tenants.items()
        }
        wanted = self.auth_failures or self.keys or any(self.tenants.values())
        self.limiter = None
        if wanted:
            self.limiter = MovingWindowRateLimiter(storage or rate_limit_storage(settings))
        self._failed: OrderedDict[str, float] = OrderedDict()  # address -> until (monotonic)
        self._lock = threading.Lock()

    FAILED_KEPT = 10_000
    """Addresses that failed, remembered per process (the oldest forgotten first)."""

    def _ask(self, how: str, item: RateLimitItem, key: tuple[str, ...]) -> Any:
        """The limiter's `how` (hit, test, get_window_stats); Redis away is StoreUnavailable
        (503, like any request that needs Redis)."""
        assert self.limiter is not None
        try:
            return getattr(self.limiter, how)(item, *key)
        except (redis.RedisError, RedisClusterException) as error:
            raise StoreUnavailable(f"Redis is unreachable: {error}") from error

    def _admits(self, how: str, item: RateLimitItem, key: tuple[str, ...]) -> bool:
        """Whether the limiter's `how` (hit, test) admits a request with a good credential:
        yes when it cannot be counted (Redis away: the counter's master failing over), so a
        limit never holds nor fails a command (see the module doc)."""
        try:
            return bool(self._ask(how, item, key))
        except StoreUnavailable as error:
            log.warning("a rate limit not counted: admitted", extra={"error": str(error)})
            return True

    def _refuse(self, item: RateLimitItem, key: tuple[str, ...], what: str) -> RateLimited:
        reset_at = self._ask("get_window_stats", item, key).reset_time
        wait = max(1, math.ceil(reset_at - time.time()))
        return RateLimited(f"{what}: over the limit of {item}; retry in {wait} s", wait)

    def _failed_lately(self, address: str) -> bool:
        if address not in self._failed:  # (the usual case, asked without taking the lock)
            return False
        with self._lock:
            until = self._failed.get(address)
            if until is not None and until < time.monotonic():
                del self._failed[address]
                until = None
            return until is not None

    def authenticated(self, address: str) -> None:
        """A good credential came from `address`: RateLimited when the address failed here
        lately and is over its limit of failures (see the module doc)."""
        item = self.auth_failures
        if item is None or self.limiter is None or not self._failed_lately(address):
            return
        key = ("auth-failures", address)
        if not self._admits("test", item, key):
            raise self._refuse(item, key, "too many failed authentications from this address")

    def failed_authentication(self, address: str) -> None:
        """Count a failure; RateLimited when it is one more than the limit admits (then it
        is refused as over the limit rather than answered)."""
        item = self.auth_failures
        if item is None or self.limiter is None:
            return
        with self._lock:
            self._failed[address] = time.monotonic() + item.get_expiry()
            self._failed.move_to_end(address)
            while len(self._failed) > self.FAILED_KEPT:
                self._failed.popitem(last=False)
        key = ("auth-failures", address)
        if not self._ask("hit", item, key):
            raise self._refuse(item, key, "too many failed authentications from this address")

    def admit(self, caller: Caller, credential: str, method: str) -> Quota | None:
        """Count the request `caller` makes; RateLimited when over its limit. A player's
        command is not counted here: its `Quota` is returned, to be counted at its table
        (see the module doc)."""
        if caller.role == PLAYER:
            item = self.commands if method not in ("GET", "HEAD", "OPTIONS") else None
            if item is None or caller.table_id is None:
                return None
            window_ms = int(item.get_expiry() * 1000)
            return Quota(f"commands:{_name(credential)}", item.amount, window_ms)
        tenant = caller.tenant or ""
        item = self.tenants[tenant] if tenant in self.tenants else self.keys
        if item is None or self.limiter is None:
            return None
        key = ("key", _name(credential))
        if not self._admits("hit", item, key):
            raise self._refuse(item, key, "too many requests with this key")
        return None


def over_limit(over: OverLimit) -> RateLimited:
    """The refusal of a player's command over its limit (counted at its table)."""
    wait = max(1, math.ceil(over.retry_after_ms / 1000))
    return RateLimited(f"too many commands with this player token; retry in {wait} s", wait)


def counted_late(
    count: Callable[[str, Quota], None], refuse: Callable[[RateLimited], Response]
) -> Callable[[Response], Response]:
    """An `after_request` function: a player's command that wrote nothing (refused by the
    rules, replayed, or refused before it reached its table) is counted now (`count`: the
    use cases' `count_request`); over the limit, a refusal is answered as `refuse` says
    instead (429). An answer that did something stands: what writes is counted with its
    events."""

    def count_late(response: Response) -> Response:
        environ = request.environ if (env := bypass.current()) is None else env
        quota, table_id = environ.get(QUOTA), environ.get(QUOTA_TABLE)
        if quota is None or quota.counted or table_id is None:
            return response
        try:
            count(table_id, quota)
        except OverLimit as over:
            if response.status_code >= 400:
                return refuse(over_limit(over))
        except StoreError:  # (Redis away: the answer says so already, or stands)
            pass
        return response

    return count_late
