"""Reading a stored log back: decoded and checked to chain (`chained`), with any failure to
read it as `LogUnreadable` (`readable`); and the answer kept for a request (`replayed`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from service.eventlog import decoding
from service.eventlog.codec import GENESIS, decode_following, stored_hash
from service.eventlog.store import CorruptLog, Idempotency, StoredEvent
from service.rules.errors import GutsError
from service.rules.events import Event

from .errors import IdempotencyReused, LogUnreadable
from .steps import Answer, Effect, Result

_T = TypeVar("_T")


def chained(stored: Sequence[StoredEvent], after: int) -> list[tuple[int, Event]]:
    """The events of `stored` after version `after`, decoded, each checked to chain from
    the one before; `stored` starts with the event at `after` when `after` > 0 (CodecError
    when a link is broken or an event does not decode)."""
    head = GENESIS
    decoded = []
    for event in stored:
        if event.version <= after:
            head = stored_hash(event.data)
            continue
        read, head = decode_following(event.data, head)
        decoded.append((event.version, read))
    return decoded


def readable(table_id: str, decode: Callable[[], _T]) -> _T:
    """`decode()`, with any failure to read the stored log as `LogUnreadable` (a store's
    CorruptLog passes as it is)."""
    try:
        return decode()
    except (GutsError, CorruptLog):
        raise
    except Exception as error:  # noqa: BLE001 - a log that fails to decode, however it fails
        raise LogUnreadable(
            f"the log of table {table_id!r} failed verification and cannot be loaded "
            f"({type(error).__name__}); it is quarantined until an operator repairs it"
        ) from error


def replayed(table_id: str, seen: Idempotency, request_hash: str) -> Result:
    """The answer kept for an earlier identical request (IdempotencyReused when the key
    came with another request)."""
    if seen.request_hash != request_hash:
        raise IdempotencyReused("this Idempotency-Key was used with a different request")
    kept, facts = decoding.replay(table_id, seen)
    effect: Effect = "made" if kept == "made" else "changed"
    return Result(Answer(effect, facts), replayed=True)
