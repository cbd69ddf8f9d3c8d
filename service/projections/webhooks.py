"""Webhooks: what a casino registers, the deliveries derived from the tables' logs, and how a
delivery is signed and scheduled (the parts without storage, re-exported here, are in
`service.projections.webhook_messages`).

Deliveries are a projection of the logs (`service.projections.follower`): for each new event of one
of the
tenant's tables, a delivery is recorded for every webhook of the tenant subscribed to its
name, in the same Lua script that moves the projection's position. So a delivery exists, and
is due, before any attempt is made, and no process dying between an append and its delivery
loses one (the event is in the log, after the position, until the script ran). Webhooks
registered after an event do not get it.

Attempts: the dispatchers claim due deliveries (a lease: a claimed delivery comes due again
after `LEASE_S` unless its attempt is recorded) and queue one RQ job per attempt
(`workers.jobs.deliver_webhook`); the job posts the body, signed as the Standard Webhooks
specification says, with a bounded timeout and no redirects followed, and records the attempt:
2xx is `delivered`; anything else is tried again after an exponential backoff, for
`Schedule.retry_for_s` from the first attempt, then the delivery is `dead` until redelivered.
At least once: a worker killed mid-attempt leaves the lease to expire, and the attempt is made
again (receivers de-duplicate by `webhook-id`, which every attempt of a delivery shares).

Keys, under one hash tag per tenant (``P`` the prefix, ``T`` the tenant)::

    P:{%hooks:T}:hooks         hash  webhook id -> its record (JSON: url, events, secret, ...)
    P:{%hooks:T}:positions     hash  table id -> the version deliveries were derived up to
    P:{%hooks:T}:seq           the last delivery's sequence number
    P:{%hooks:T}:deliveries    hash  delivery id -> its record (JSON)
    P:{%hooks:T}:of:<webhook>  zset  the webhook's deliveries (score: sequence number)
    P:{%hooks:T}:due           zset  delivery id -> when its next attempt is due (epoch s)
    P:{%hooks:T}:failing       hash  webhook id -> when its last attempt failed (none: it
                                     succeeded, or none was made)

and ``P:{%hooks}:tenants``, the set of tenants that ever registered a webhook (the dispatchers
look at their due deliveries), written before the webhook itself.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import secrets
import time
from collections.abc import Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any, cast

import orjson
import redis
from rq import Queue
from rq.serializers import JSONSerializer

from service.eventlog.decoding import CorruptTable
from service.projections.positions import hash_positions
from service.projections.projection import Followed, HeldProjection
from service.projections.webhook_messages import (
    EVENT_NAMES,
    BadWebhook,
    Schedule,
    check_events,
    check_url,
    hook_of,
    new_secret,
    sign,
    webhook_events,
)
from service.projections.webhook_scripts import CLAIM, DERIVE, RECORD
from service.rules.times import iso, parse_iso

__all__ = [
    "DELIVER_JOB",
    "EVENT_NAMES",
    "LEASE_S",
    "RETRIES_QUEUE",
    "WEBHOOKS_QUEUE",
    "BadWebhook",
    "Schedule",
    "WebhookStore",
    "check_events",
    "check_url",
    "new_secret",
    "sign",
    "webhook_events",
]

log = logging.getLogger("guts.webhooks")

WEBHOOKS_QUEUE = "guts-webhooks"
"""The RQ queue of the first attempts (a worker listens on it before `RETRIES_QUEUE`)."""
RETRIES_QUEUE = "guts-webhook-retries"
"""The RQ queue of the attempts after a failed one, and of every attempt to a webhook whose
last attempt failed: a worker takes them only when no other attempt waits, so a receiver that
is down or slow (each attempt held for the timeout) holds up no other receiver's events, its
own tenant's or another's, neither with the backlog of its retries nor with its new events;
once one of its attempts succeeds, its new events are first attempts again."""
DELIVER_JOB = "workers.jobs.deliver_webhook"
"""The job of one attempt: ``deliver_webhook(key_prefix, tenant, delivery_id, schedule)``."""
LEASE_S = 60.0
"""How long a claimed delivery is left to its attempt before it is due again."""
ATTEMPT_TIMEOUTS = 3
"""An attempt's job is ended by RQ (``job_timeout``) after this many `timeout_s` (30 s by
default, under `LEASE_S`): a backstop, since the attempt's call itself ends within its timeout
(`service.projections.wallet_http`)."""


class WebhookStore:
    """The webhooks of every tenant under `prefix`, their deliveries, and the projection
    that derives the deliveries (`name`, `positions`, `apply`)."""

    name = "webhooks"

    def __init__(
        self,
        client: redis.Redis,
        prefix: str = "guts",
        clock: Any = time.time,
        private_ok: bool = False,
    ) -> None:
        """`private_ok`: a webhook may be registered at a host that is plainly not public
        (`check_url`; the API's store: `GUTS_ALLOW_PRIVATE_URLS`; off unless asked)."""
        self.client = client
        self.prefix = prefix
        self.clock = clock
        self.private_ok = private_ok
        self._derive = client.register_script(DERIVE)
        self._claim = client.register_script(CLAIM)
        self._record = client.register_script(RECORD)

    def _key(self, tenant: str, name: str) -> str:
        return f"{self.prefix}:{{%hooks:{tenant}}}:{name}"

    @property
    def tenants_key(self) -> str:
        return f"{self.prefix}:{{%hooks}}:tenants"

    # --- registration --------------------------------------------------------------------

    def register(self, tenant: str, url: str, events: Sequence[str]) -> dict[str, Any]:
        """A new webhook of `tenant` (its record, secret included)."""
        record: dict[str, Any] = {
            "webhook_id": "wh_" + secrets.token_hex(12),
            "url": check_url(url, self.private_ok),
            "events": check_events(events),
            "secret": new_secret(),
            "created_at": _iso(self.clock()),
        }
        self.client.sadd(self.tenants_key, tenant)  # first: a tenant listed with no hook is fine
        self.client.hset(self._key(tenant, "hooks"), record["webhook_id"], orjson.dumps(record))
        return record

    def hooks(self, tenant: str) -> dict[str, dict[str, Any]]:
        """The tenant's webhooks by id (secrets included: never answer them as they are)."""
        raw = cast(dict[bytes, bytes], self.client.hgetall(self._key(tenant, "hooks")))
        return {k.decode(): hook_of(k.decode(), v) for k, v in raw.items()}

    def hook(self, tenant: str, webhook_id: str) -> dict[str, Any] | None:
        raw = self.client.hget(self._key(tenant, "hooks"), webhook_id)
        return None if raw is None else hook_of(webhook_id, cast(bytes, raw))

    def delete(self, tenant: str, webhook_id: str) -> bool:
        """Remove a webhook (its pending deliveries stop at their next attempt)."""
        return bool(self.client.hdel(self._key(tenant, "hooks"), webhook_id))

    # --- the projection ---------------------------------------------------------------------

    def tidy(self, table_id: str, position: int) -> None:
        """Nothing is ever left half done: each step is one script."""

    def positions(
        self, tables: Sequence[tuple[str, str]]
    ) -> list[int | CorruptTable | HeldProjection]:
        return hash_positions(self.client, lambda t: self._key(t, "positions"), tables, self.name)

    def apply(self, followed: Followed) -> bool:
        tenant, table_id = followed.tenant, followed.table_id
        hooks = self.hooks(tenant)
        now = self.clock()
        args: list[Any] = []
        for version, event in followed.events:
            made = webhook_events(event)
            for index, (name, data) in enumerate(made):
                for hook in hooks.values():
                    if name not in hook["events"]:
                        continue
                    delivery_id = _delivery_id(hook["webhook_id"], table_id, version, index)
                    body = {
                        "type": name,
                        "timestamp": getattr(event, "at", _iso(now)),
                        "data": {
                            "tenant": tenant,
                            "table_id": table_id,
                            "version": version,
                            "event": data,
                        },
                    }
                    record = {
                        "delivery_id": delivery_id,
                        "webhook_id": hook["webhook_id"],
                        "event": name,
                        "table_id": table_id,
                        "version": version,
                        "body": orjson.dumps(body).decode(),
                        "status": "pending",
                        "attempts": 0,
                        "created_at": _iso(now),
                        "first_attempt_at": None,
                        "last_attempt_at": None,
                        "last_status": None,
                        "last_error": None,
                        "next_attempt_at": _iso(now),
                    }
                    args += [delivery_id, hook["webhook_id"], orjson.dumps(record)]
        keys = [
            self._key(tenant, "positions"),
            self._key(tenant, "seq"),
            self._key(tenant, "deliveries"),
            self._key(tenant, "due"),
            self._key(tenant, "of:"),
        ]
        last = followed.events[-1][0]
        return bool(self._derive(keys=keys, args=[table_id, followed.after, last, now, *args]))

    # --- attempts ---------------------------------------------------------------------------

    def tenants(self) -> list[str]:
        return sorted(t.decode() for t in cast(set[bytes], self.client.smembers(self.tenants_key)))

    def backlog(self) -> int:
        """Deliveries pending over every tenant (due for their first or next attempt, or in
        one): one ZCARD per tenant, pipelined."""
        tenants = self.tenants()
        if not tenants:
            return 0
        with self.client.pipeline(transaction=False) as pipe:
            for tenant in tenants:
                pipe.zcard(self._key(tenant, "due"))
            return sum(int(n) for n in pipe.execute())

    def claim(self, tenant: str, limit: int = 100, lease_s: float = LEASE_S) -> list[str]:
        """The tenant's deliveries due now, each leased for `lease_s`."""
        now = self.clock()
        ids = self._claim(keys=[self._key(tenant, "due")], args=[now, now + lease_s, limit])
        return [i.decode() for i in cast(list[bytes], ids)]

    def delivery(self, tenant: str, delivery_id: str) -> dict[str, Any] | None:
        raw = self.client.hget(self._key(tenant, "deliveries"), delivery_id)
        return None if raw is None else cast(dict[str, Any], orjson.loads(cast(bytes, raw)))

    def record_attempt(
        self,
        tenant: str,
        before: dict[str, Any],
        status: int | None,
        error: str | None,
        schedule: Schedule,
    ) -> dict[str, Any] | None:
        """Record one attempt of `before` (the delivery as it was read); the new record, or
        None when another attempt was recorded first."""
        now = self.clock()
        record = dict(before)
        attempts = record["attempts"] = before["attempts"] + 1
        record["first_attempt_at"] = before["first_attempt_at"] or _iso(now)
        record["last_attempt_at"], record["last_status"], record["last_error"] = (
            _iso(now),
            status,
            error,
        )
        first = _epoch(record["first_attempt_at"])
        next_at: float | None = None
        if status is not None and 200 <= status < 300:
            record["status"] = "delivered"
        elif now + schedule.wait_after(attempts) - first > schedule.retry_for_s:
            record["status"] = "dead"
        else:
            next_at = now + schedule.wait_after(attempts)
        record["next_attempt_at"] = None if next_at is None else _iso(next_at)
        keys = [self._key(tenant, n) for n in ("deliveries", "due", "failing")]
        args = [record["delivery_id"], before["attempts"], orjson.dumps(record), next_at or ""]
        failed = "" if record["status"] == "delivered" else record["last_attempt_at"]
        args += [before["webhook_id"], failed]
        return record if self._record(keys=keys, args=args) else None

    def stop(self, tenant: str, before: dict[str, Any], why: str) -> None:
        """A delivery that will not be attempted (its webhook was deleted)."""
        record = {**before, "status": "stopped", "last_error": why, "next_attempt_at": None}
        keys = [self._key(tenant, "deliveries"), self._key(tenant, "due")]
        self._record(
            keys=keys, args=[before["delivery_id"], before["attempts"], orjson.dumps(record), ""]
        )

    def queue_due(
        self,
        schedule: Schedule,
        limit: int = 100,
        lease_s: float = LEASE_S,
        queues: redis.Redis | None = None,
        tenants: Sequence[str] | None = None,
    ) -> int:
        """Claim every tenant's due deliveries (or `tenants`') and queue an attempt of each in
        RQ's Redis (`queues`; None: this store's) (the dispatchers do); how many were queued. The
        job id names the delivery and its attempt, so a claim repeated before the attempt ran
        queues it once: a job still waiting in the queue when its lease runs out (workers
        behind) is left there, not queued again (each copy would cost a worker a job, and a
        backlog would grow on itself)."""
        first, later = (
            Queue(name, connection=queues or self.client, serializer=JSONSerializer)
            for name in (WEBHOOKS_QUEUE, RETRIES_QUEUE)
        )
        failing = functools.cache(self.failing)  # (read once a pass, for a tenant that has any)
        paced = asdict(schedule)
        job_timeout = max(1, math.ceil(ATTEMPT_TIMEOUTS * schedule.timeout_s))
        queued = 0
        for tenant in self.tenants() if tenants is None else tenants:
            for delivery_id in self.claim(tenant, limit, lease_s):
                try:
                    record = self.delivery(tenant, delivery_id)
                    attempt = None if record is None else int(record["attempts"]) + 1
                except (KeyError, TypeError, ValueError):  # written outside: this one waits
                    log.error("webhook delivery %s of tenant %s does not parse; left aside",
                              delivery_id, tenant, extra={"tenant": tenant})  # fmt: skip
                    continue
                job_id = f"webhook-{delivery_id}-{attempt}"
                maybe_in = (first, later) if attempt == 1 else (later,)  # (a retry: one queue)
                if record is None or any(q.get_job_position(job_id) is not None for q in maybe_in):
                    continue  # (still waiting in a queue: queued once, however late)
                fresh = attempt == 1 and record["webhook_id"] not in failing(tenant)
                queue = first if fresh else later
                queue.enqueue(
                    DELIVER_JOB,
                    self.prefix,
                    tenant,
                    delivery_id,
                    paced,
                    job_id=job_id,
                    job_timeout=job_timeout,
                    result_ttl=3600,
                    failure_ttl=7 * 24 * 3600,
                )
                queued += 1
        return queued

    def failing(self, tenant: str) -> set[str]:
        """The tenant's webhooks whose last attempt failed."""
        return {
            h.decode() for h in cast(list[bytes], self.client.hkeys(self._key(tenant, "failing")))
        }

    def redeliver(self, tenant: str, delivery_id: str) -> dict[str, Any] | None:
        """Try a delivery again now, with a new `retry_for_s` from now; None if unknown."""
        before = self.delivery(tenant, delivery_id)
        if before is None:
            return None
        now = self.clock()
        record = {**before, "status": "pending", "first_attempt_at": None}
        record["next_attempt_at"] = _iso(now)
        keys = [self._key(tenant, "deliveries"), self._key(tenant, "due")]
        args = [delivery_id, before["attempts"], orjson.dumps(record), now]
        return record if self._record(keys=keys, args=args) else self.delivery(tenant, delivery_id)

    def deliveries(
        self, tenant: str, webhook_id: str, after: int, limit: int
    ) -> tuple[list[dict[str, Any]], int]:
        """A page of a webhook's deliveries, oldest first, after the sequence number `after`,
        and the cursor of the next page."""
        index = self._key(tenant, f"of:{webhook_id}")
        found = cast(
            list[tuple[bytes, float]],
            self.client.zrangebyscore(index, f"({after}", "+inf", 0, limit, withscores=True),
        )
        if not found:
            return [], after
        raw = cast(
            list[bytes | None],
            self.client.hmget(self._key(tenant, "deliveries"), [i for i, _ in found]),
        )
        page = [_public(orjson.loads(r)) for r in raw if r is not None]
        return page, int(found[-1][1])


def _public(record: dict[str, Any]) -> dict[str, Any]:
    """A delivery as its webhook's owner reads it (the body is theirs: it is what was sent)."""
    shown = dict(record)
    shown["body"] = orjson.loads(record["body"])
    return shown


def _delivery_id(webhook_id: str, table_id: str, version: int, index: int) -> str:
    digest = hashlib.sha256(f"{webhook_id}\0{table_id}\0{version}\0{index}".encode())
    return "msg_" + digest.hexdigest()[:24]


def _iso(epoch: float) -> str:
    return iso(datetime.fromtimestamp(epoch, UTC))


def _epoch(text: str) -> float:
    return parse_iso(text).timestamp()
