"""The keys shared by every table that the service derives from the tables' logs and can
build again (the due index, the table list, the dispatchers' vitals): when one holds another
type of value than the service writes there (a value written outside the service), it is
dropped, so that what rebuilds it (the dispatchers' repair every few seconds, their next
beat, the next reading) writes it afresh, instead of every command or pass that touches it
failing (it stopped the dispatchers: each one that met it exited, and was restarted to meet
it again)."""

from __future__ import annotations

import logging

import redis

from .redis_errors import scan_keys

log = logging.getLogger("guts.dispatcher")


def wrong_type(error: BaseException) -> bool:
    """Whether `error` is Redis refusing a command for the type of value a key holds."""
    return isinstance(error, redis.ResponseError) and "WRONGTYPE" in str(error)


def expected_types(prefix: str, client: redis.Redis) -> dict[str, str]:
    """Each shared derived key under `prefix` (the table list's per tenant included) and the
    type the service writes there."""
    due, tables = f"{prefix}:{{%due}}", f"{prefix}:{{%tables}}"
    kinds = {
        f"{due}:index": "zset",
        f"{due}:versions": "hash",
        f"{due}:quarantine": "hash",
        f"{due}:wake": "list",
        f"{tables}:created": "zset",
        f"{tables}:tenants": "set",
        f"{prefix}:vitals:dispatchers": "zset",
        f"{prefix}:vitals:archive-lag": "hash",
        f"{prefix}:vitals:due-lateness": "hash",
    }
    for key in scan_keys(client, f"{tables}:created:*".encode()):
        kinds[key.decode() if isinstance(key, bytes) else str(key)] = "zset"
    return kinds


def drop_wrong_types(client: redis.Redis, kinds: dict[str, str]) -> list[str]:
    """Drop each of `kinds`' keys that holds another type than its own (a missing one is
    fine); the keys dropped, each named in a warning."""
    keys = list(kinds)
    pipe = client.pipeline(transaction=False)
    for key in keys:
        pipe.type(key)
    found = [t.decode() if isinstance(t, bytes) else str(t) for t in pipe.execute()]
    held = dict(zip(keys, found, strict=True))
    dropped = [key for key in keys if held[key] not in ("none", kinds[key])]
    for key in dropped:
        log.warning(
            "%s held a %s where the service keeps a %s (written outside it): dropped, to be "
            "built again from the tables' logs",
            key,
            held[key],
            kinds[key],
            extra={"key": key},
        )
    if dropped:
        pipe = client.pipeline(transaction=False)
        for key in dropped:  # (one by one: on a Redis Cluster they are in other slots)
            pipe.delete(key)
        pipe.execute()
    return dropped
