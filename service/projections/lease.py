"""One process at a time does a duty that any of several could do: the dispatchers' following
of the logs (the projections and the archive). Following is exactly-once by its positions
whoever follows, so two followers are never wrong, only wasteful: each reads every new event
and all but one lose the race to apply it (measured: a second dispatcher doubled the
dispatchers' CPU per command, tests/bench/bench_nodes.py). So the dispatchers elect one
follower with a lease, a Redis key holding its holder's id with a time to live
(``P:{%lease}:<duty>``, a hash tag of its own). The holder renews it every `renew_s`; another
process takes it once it has expired (its holder died, or lost Redis for `ttl_s`), so a
follower killed with -9 is replaced within `ttl_s`, and one stopped cleanly gives the lease
up at once. While the lease changes hands two followers may run for a moment: harmless.

The deadlines are not leased: every dispatcher claims due tables (``service.eventlog.due_index``),
so a deadline never waits for a takeover."""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable

import redis

from service.eventlog.redis_errors import REDIS_ERRORS
from service.pacing import REDIS_AWAY, Backoff

log = logging.getLogger("guts.lease")
_HOLD = """
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'string' and kind ~= 'none' then redis.call('DEL', KEYS[1]) end
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if holder and redis.call('PTTL', KEYS[1]) >= 0 then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
"""
"""Take or renew the lease. A key no lease wrote (of another type, or without a time to live,
which would be held for ever) is taken over: the duty never stops for a stray value."""

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class Lease:
    """The lease of `duty` among the processes on `client` (see the module doc)."""

    def __init__(
        self, client: redis.Redis, duty: str, *, prefix: str = "guts", ttl_s: float = 10.0
    ) -> None:
        if not ttl_s >= 0.01:
            raise ValueError(f"a lease lives at least 0.01 s, not {ttl_s!r}")
        self.key = f"{prefix}:{{%lease}}:{duty}"
        self.holder = uuid.uuid4().hex
        self.ttl_s = ttl_s
        self._hold = client.register_script(_HOLD)
        self._release = client.register_script(_RELEASE)

    def hold(self) -> bool:
        """Take the lease, or renew it if this holder has it: whether it is held now."""
        return bool(self._hold(keys=[self.key], args=[self.holder, int(self.ttl_s * 1000)]))

    def release(self) -> None:
        """Give the lease up, if this holder has it."""
        self._release(keys=[self.key], args=[self.holder])


def run_while_holding(
    lease: Lease,
    duty: Callable[[threading.Event], None],
    stop: threading.Event,
    *,
    renew_s: float = 2.0,
    backoff: Backoff = REDIS_AWAY,
) -> None:
    """Until `stop`: run `duty(term)` in a thread while `lease` is held, and set `term` as
    soon as it is not (lost, or Redis unreachable: this process cannot tell that nobody else
    holds it); look again every `renew_s`, well inside the lease's time to live."""
    term: threading.Event | None = None
    runner: threading.Thread | None = None
    failures = 0
    try:
        while not stop.is_set():
            try:
                held, failures, wait = lease.hold(), 0, renew_s
            except REDIS_ERRORS as error:  # unreachable, or refused: looked at again
                failures += 1
                held, wait = False, backoff.delay(failures)
                log.warning(
                    "the lease of %s cannot be renewed (%s)", lease.key, type(error).__name__
                )
            if held and runner is None:
                log.info("took the lease %s", lease.key, extra={"lease": lease.key})
                term = threading.Event()
                runner = threading.Thread(target=duty, args=(term,), daemon=True)
                runner.start()
            elif not held and runner is not None and term is not None:
                log.warning("lost the lease %s", lease.key, extra={"lease": lease.key})
                term.set()
                runner.join()
                runner = term = None
            stop.wait(wait)
    finally:
        if runner is not None and term is not None:
            term.set()
            runner.join(timeout=10)
            try:
                lease.release()
            except REDIS_ERRORS:
                pass  # it expires
