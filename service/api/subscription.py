"""One subscriber of the live feed (`service.api.feed`): its bounded queue of rendered messages
(`Subscription`), an event in SSE form (`sse_message`), and what it reads from the log itself
(`backlog`): the events before the live feed's first for it, and those it missed while its
queue was full. With replicas to wait for, a subscriber is sent only what they hold
(`held_upto`; the feed's module doc says why)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from service.application import Caller, TableReads

from .json import dumps
from .mailbox import Mailbox

BUFFER = 512
"""Messages queued for one subscriber, at most."""
PAGE = 500
"""Events read at a time."""
CONFIRM_AGAIN_S = 0.2
"""How soon events the replicas did not yet hold are looked at again."""
CONFIRM_FOR_S = 5.0
"""How long a backlog read waits for the replicas before it sends what they hold."""

END = object()
"""Queued after a stream's last message: the stream ends (`Subscription.end`)."""

Confirm = Callable[[str, int], bool]
"""Whether the replicas hold a table's log up to a version."""


@dataclass(eq=False)
class Subscription:
    """One open stream: its caller, table and queue of rendered messages."""

    caller: Caller
    table_id: str
    sent: int
    queue: Mailbox = field(default_factory=lambda: Mailbox(BUFFER))
    ended: str | None = None
    behind_since: float | None = None
    """Since when its queue has been full (None: it is not)."""
    caught_up: bool = False
    """Whether it wants nothing the feed has delivered before it subscribed."""
    placed: bool = True
    """Whether it still holds its place in the node's capacity."""

    def offer(self, version: int, message: bytes, now: float) -> bool:
        """Queue a message; False when the queue is full (the subscriber will read what it
        missed from the log)."""
        if self.queue.offer((version, message)):
            return True
        if self.behind_since is None:
            self.behind_since = now
        return False

    def end(self, reason: str) -> None:
        """End the stream after the messages it holds (at once when its queue is full)."""
        if self.ended is None:
            self.ended = reason
        if self.queue.full():
            self.queue.clear()
        self.queue.force(END)


def sse_message(item: dict[str, Any]) -> bytes:
    """One event as an SSE message: `id:` its version, `event:` its type, `data:` its JSON as
    `/events` returns it (one line: JSON never holds a raw newline)."""
    return b"id: %d\nevent: %s\ndata: %s\n\n" % (
        item["version"],
        item["type"].encode(),
        dumps(item),
    )


def held_upto(confirm: Confirm | None, table_id: str, version: int, since: int) -> int:
    """Up to which version the table's events may be sent: `version` when the replicas
    hold the log up to it (or none are asked for: `confirm` None), else `since` (nothing more
    yet: all or nothing, so the state the events are rendered with is the one they lead to)."""
    if version <= since or confirm is None or confirm(table_id, version):
        return version
    return since


def backlog(
    reads: TableReads,
    confirm: Confirm | None,
    subscription: Subscription,
    upto: int | None = None,
) -> Iterator[bytes]:
    """The subscriber's events after what it was sent, read from the log as `/events` reads
    them, up to `upto` (None: up to what the replicas hold, or to the end without replicas to
    wait for)."""
    if upto is None and confirm is not None:
        upto = _held_backlog(reads, confirm, subscription)
    while upto is None or subscription.sent < upto:
        body = reads.events(subscription.caller, subscription.table_id, subscription.sent, PAGE)
        items = [i for i in body.facts["events"] if upto is None or i["version"] <= upto]
        if not items:
            return
        for item in items:
            subscription.sent = item["version"]
            yield sse_message(item)


def _held_backlog(reads: TableReads, confirm: Confirm, subscription: Subscription) -> int:
    """The version up to which the replicas hold the table's log, for a backlog read to
    stop at: the table's version once they hold it, asked again every CONFIRM_AGAIN_S
    (the stream waits meanwhile, at most CONFIRM_FOR_S: less than a keep-alive's period),
    else what the subscriber was sent: nothing more now; the live feed sends the rest
    once the replicas hold it."""
    deadline = time.monotonic() + CONFIRM_FOR_S
    while True:
        version = reads.tables.load(subscription.table_id).version
        held = held_upto(confirm, subscription.table_id, version, subscription.sent)
        if held == version or time.monotonic() > deadline:
            return held
        time.sleep(CONFIRM_AGAIN_S)
