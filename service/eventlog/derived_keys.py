"""The keys shared by every table that the service derives from the tables' logs and can
build again (the due index's and the table list's, each naming its own in `key_types`; the
dispatchers' readings heal where they are written, `service.eventlog.vitals`): when one holds
another type of value than the service writes there (a value written outside the service), it
is dropped, so that the dispatchers' repair builds it again at once, instead of every command
or pass that touches it failing (it stopped the dispatchers: each one that met it exited, and
was restarted to meet it again)."""

from __future__ import annotations

import logging

import redis

log = logging.getLogger("guts.dispatcher")


WRONG_KINDS = ("WRONGTYPE", "is not an integer", "is not a valid float")
"""What Redis says when a command meets a key, or a count in it, holding another kind of
value than the command works on."""


def wrong_kind(error: BaseException) -> bool:
    """Whether `error` is Redis refusing a command for what a key holds (not Redis away, nor
    a cluster redirecting: those are waited out)."""
    return isinstance(error, redis.ResponseError) and any(w in str(error) for w in WRONG_KINDS)


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
