"""The live feed: every event of a table, as each subscriber may see it, pushed as it is
appended (`GET /v1/tables/{table_id}/stream`, Server-Sent Events).

**Fan-out.** The append script publishes one short notice per append (`<version> <table_id>`
on the channel `<prefix>:appended`; a notice is not a key, so the script still touches only
its table's keys, and Redis Cluster forwards a PUBLISH to every node). Each process holds one
`Feed`: one pub/sub connection and one listening thread for all its subscribers, whatever
their number. On a notice for a table it follows, it reads that table's new events once (one
load and one XRANGE), renders them once per distinct viewer with the same redaction as
`/events` (`TableReads.render_events`), and puts the messages in each subscriber's queue. A
reveal therefore reaches every subscriber of the process in the same pass.

**Nothing lost, nothing twice.** Notices are fire-and-forget, so they only say "look": the
feed reads from the last version it delivered, so a lost notice delays events until the next
one, and after a reconnect of its pub/sub connection it reads every followed table again. A
subscriber registers before it reads its backlog (`after` up to now) and drops any message
at or below what it has sent; a message that skips versions makes it read the gap itself.
One that wants nothing the feed delivered before (registered while the feed was not
delivering its table) reads no backlog (10,000 streams opened made 10,000 empty reads).

**Only what the replicas hold.** With ``GUTS_REDIS_MIN_REPLICAS`` (`confirm`), the feed sends
a table's events only once the replicas hold its log up to them (the followers' round trip:
`service.eventlog.replication.replicated_upto`), asked before the events are read: an append
publishes its notice before its ``WAIT``, and an event a failover then loses (its command
answered 503 outcome-unknown) must never reach a subscriber. Events not held yet are looked
at again every `CONFIRM_AGAIN_S`; a backlog read stops at what the replicas hold (waiting up
to `CONFIRM_FOR_S` for them), the rest coming live.

**Slow subscribers.** Each subscriber has a bounded queue (`buffer` messages). When it is
full, the feed skips that subscriber, which later reads what it missed from the log itself
(a burst costs a short catch-up, not the stream). One whose queue stays full for `lag_limit_s`
is dropped: its queue is emptied and it ends with a comment saying why (the client resumes
with `Last-Event-ID`). So it never holds up the others, and its memory stays bounded.

**Capacity.** A stream takes a place in the node's capacity (`stream_slots.py`) before
anything else, and gives it back however it ends; past it a new one is refused
(`StreamsFull`: 503). The `guts_open_streams` gauge is set at each change.

**Threads.** Under gevent workers (`guts serve`) the feed's threads are greenlets: a subscriber
costs a greenlet and a small mailbox (`mailbox.py`), not an OS thread.

A subscriber's queue, and the backlog it reads from the log itself, are in `subscription.py`.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import redis

from service.application import Caller, TableReads
from service.application.access import may_view
from service.application.errors import CorruptLog, Forbidden, StoreUnavailable
from service.application.reads import render_events
from service.config import Settings
from service.infrastructure import REDIS_ERRORS
from service.rules.errors import GutsError
from service.rules.state import TableState
from service.rules.views import Viewer

from .mailbox import Mailbox
from .refusal import ApiError
from .stream_slots import StreamsFull, StreamSlots
from .subscription import (
    BUFFER,
    CONFIRM_AGAIN_S,
    END,
    Subscription,
    backlog,
    held_upto,
    sse_message,
)

log = logging.getLogger("guts.feed")

LAG_LIMIT_S = 30.0
"""How long a subscriber's queue may stay full before the subscriber is dropped."""

_feeds: weakref.WeakSet[Feed] = weakref.WeakSet()


def close_all(reason: str = "the server is shutting down; resume with Last-Event-ID") -> None:
    """End every stream of this process cleanly (a worker about to exit)."""
    for feed in list(_feeds):
        feed.close(reason)


@dataclass(eq=False)
class _Followed:
    last: int
    subscribers: set[Subscription] = field(default_factory=set)
    delivering: bool = False
    """Whether the listener is queuing events after `last` for the subscribers it found."""
    unconfirmed: bool = False
    """Whether events after `last` wait for the replicas to hold them (looked at again)."""


class Feed:
    """The process's follower of appended tables (see the module doc)."""

    def __init__(
        self,
        client: redis.Redis,
        reads: TableReads,
        channel: str,
        *,
        buffer: int = BUFFER,
        keep_alive_s: float = Settings.stream_keep_alive_s,
        lag_limit_s: float = LAG_LIMIT_S,
        slots: StreamSlots | None = None,
        confirm: Callable[[str, int], bool] | None = None,
    ) -> None:
        self.client = client
        self.confirm = confirm
        """Whether the replicas hold a table's log up to a version (None: not asked, no
        replicas wanted): with it, only events they hold are sent (see the module doc)."""
        self.reads = reads
        self.channel = channel
        self.buffer = buffer
        self.keep_alive_s = keep_alive_s
        self.lag_limit_s = lag_limit_s
        self._lock = threading.Lock()
        self._followed: dict[str, _Followed] = {}
        self._listener: threading.Thread | None = None
        self._closed: str | None = None
        self.slots = slots or StreamSlots(1_000_000)
        self.on_change: Callable[[int], None] = lambda held: None
        """Told how many streams this process holds, at each change (the gauge)."""
        _feeds.add(self)

    # --- subscribers ----------------------------------------------------------------------

    def subscribe(self, caller: Caller, table_id: str, after: int | None) -> Subscription:
        """A subscription to `table_id`'s events after version `after` (None: from now on).
        Raises StreamsFull past the node's capacity, and what `/events` would (TableNotFound,
        Forbidden), before anything is sent; the caller must `unsubscribe` it in the end."""
        if not self.slots.take():
            raise StreamsFull(
                f"this node holds its capacity of {self.slots.capacity} streams; "
                "open the stream on another node"
            )
        self.on_change(self.slots.held)
        subscription = Subscription(caller, table_id, 0, Mailbox(self.buffer))
        try:
            state = self.reads.tables.load(table_id)
            may_view(caller, state)
            subscription.sent = start = state.version if after is None else after
            with self._lock:
                if self._closed is not None:
                    raise ShuttingDown(self._closed)
                followed = self._followed.get(table_id)
                if followed is None:
                    followed = self._followed[table_id] = _Followed(state.version)
                followed.subscribers.add(subscription)
                # Nothing it wants is in the log but not in the feed's hands: its backlog
                # need not be read (one read of the table by the feed serves all of them).
                subscription.caught_up = not followed.delivering and start >= followed.last
                self._start()
        except BaseException:
            self.unsubscribe(subscription)
            raise
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        """Stop delivering to it and give its place back (once, however often called)."""
        with self._lock:
            followed = self._followed.get(subscription.table_id)
            if followed is not None:
                followed.subscribers.discard(subscription)
                if not followed.subscribers:
                    del self._followed[subscription.table_id]
            placed, subscription.placed = subscription.placed, False
        if placed:
            self.slots.give_back()
            self.on_change(self.slots.held)

    def subscribers(self, table_id: str | None = None) -> int:
        """How many streams are open (on `table_id`, or on any table)."""
        with self._lock:
            if table_id is not None:
                followed = self._followed.get(table_id)
                return 0 if followed is None else len(followed.subscribers)
            return sum(len(f.subscribers) for f in self._followed.values())

    def messages(self, subscription: Subscription) -> Iterator[bytes]:
        """The stream's bytes: the backlog after `sent`, then live messages as they come,
        keep-alive comments when it is quiet, and a closing comment when it ends."""
        try:
            yield b": connected\n\n"
            if not subscription.caught_up:
                yield from backlog(self.reads, self.confirm, subscription)
            while True:
                if subscription.behind_since is not None and subscription.queue.empty():
                    subscription.behind_since = None  # it missed some: read them
                    yield from backlog(self.reads, self.confirm, subscription)
                came, item = subscription.queue.take(self.keep_alive_s)
                if not came:
                    yield b": keep-alive\n\n"
                    continue
                if item is END:
                    yield f": end: {subscription.ended}\n\n".encode()
                    return
                version, message = item
                if version <= subscription.sent:
                    continue
                if version > subscription.sent + 1:  # a gap: read it from the log
                    yield from backlog(self.reads, self.confirm, subscription, version - 1)
                subscription.sent = version
                yield message
        except (Forbidden, GutsError, CorruptLog) as refused:
            yield f": end: {refused}\n\n".encode()
        finally:
            self.unsubscribe(subscription)

    # --- the listener ---------------------------------------------------------------------

    def _start(self) -> None:
        if self._listener is None or not self._listener.is_alive():
            self._listener = threading.Thread(target=self._listen, name="guts-feed", daemon=True)
            self._listener.start()

    def _listen(self) -> None:
        pause = 0.1
        while self._closed is None:
            pubsub = self.client.pubsub(ignore_subscribe_messages=True)  # type: ignore[no-untyped-call]
            try:
                pubsub.subscribe(self.channel)
                self._deliver_all()  # whatever was appended while we were not listening
                pause = 0.1
                while self._closed is None:
                    waiting = self._unconfirmed()
                    notice = pubsub.get_message(timeout=CONFIRM_AGAIN_S if waiting else 1.0)
                    if notice is not None:
                        self._notice(notice["data"])
                    for table_id in waiting:
                        self._deliver_safely(table_id)
            except (*REDIS_ERRORS, StoreUnavailable) as error:
                log.warning("the live feed lost Redis; it reconnects", extra={"error": str(error)})
                threading.Event().wait(pause)
                pause = min(pause * 2, 2.0)
            finally:
                pubsub.close()

    def _notice(self, data: bytes) -> None:
        version_text, _, table_id = data.decode(errors="replace").partition(" ")
        if not version_text.isdigit():
            return  # not a notice of ours
        with self._lock:
            followed = self._followed.get(table_id)
            behind = followed is not None and int(version_text) > followed.last
        if behind:
            self._deliver_safely(table_id)

    def _unconfirmed(self) -> list[str]:
        with self._lock:
            return [table_id for table_id, f in self._followed.items() if f.unconfirmed]

    def _deliver_all(self) -> None:
        with self._lock:
            tables = list(self._followed)
        for table_id in tables:
            self._deliver_safely(table_id)

    def _deliver_safely(self, table_id: str) -> None:
        """`_deliver`, where anything unforeseen ends that table's streams (with a log line)
        and never the listener, which serves every other table."""
        try:
            self._deliver(table_id)
        except (*REDIS_ERRORS, StoreUnavailable):
            raise  # the listener reconnects
        except Exception as error:  # noqa: BLE001 - see the docstring
            log.exception("the live feed failed on a table", extra={"table_id": table_id})
            self._unfollow(
                table_id, f"the server failed to read the table ({type(error).__name__})"
            )

    def _deliver(self, table_id: str) -> None:
        """Read the table's events after the last delivered, render them once per viewer and
        queue them for every subscriber of the table."""
        with self._lock:
            followed = self._followed.get(table_id)
            if followed is None:
                return
            last, subscribers = followed.last, list(followed.subscribers)
            followed.delivering = True
        read: list[tuple[int, Any]] = []
        try:
            state = self.reads.tables.load(table_id)
            if state.version < last:  # its log lost events the streams were sent
                self._unfollow(table_id, "the table's log is behind what was sent; resume")
                return
            held = held_upto(self.confirm, table_id, state.version, last)
            followed.unconfirmed = held < state.version
            read = self.reads.tables.events(table_id, last, held - last) if held > last else []
            self._offer_all(state, read, subscribers)
        except (GutsError, CorruptLog) as unreadable:  # this table only: the others go on
            self._unfollow(table_id, f"the table cannot be read: {unreadable}")
        finally:
            with self._lock:
                followed.delivering = False
                if read and followed.last < read[-1][0]:
                    followed.last = read[-1][0]

    def _offer_all(
        self, state: TableState, read: list[tuple[int, Any]], subscribers: list[Subscription]
    ) -> None:
        """Render `read` once per viewer and queue it for each of `subscribers`."""
        if not read:
            return
        rendered: dict[Viewer, list[tuple[int, bytes]]] = {}
        for subscription in subscribers:
            try:
                viewer = may_view(subscription.caller, state)
            except Forbidden as refused:
                subscription.end(str(refused))
                continue
            if viewer not in rendered:
                items = render_events(state, viewer, read)
                rendered[viewer] = [(i["version"], sse_message(i)) for i in items]
            now = time.monotonic()
            for version, message in rendered[viewer]:
                if version <= subscription.sent:
                    continue
                if not subscription.offer(version, message, now):
                    assert subscription.behind_since is not None
                    if now - subscription.behind_since > self.lag_limit_s:
                        self._drop(subscription)
                    break

    def _unfollow(self, table_id: str, reason: str) -> None:
        """End every stream of one table (it is gone or its log cannot be read)."""
        with self._lock:
            followed = self._followed.pop(table_id, None)
        for subscription in followed.subscribers if followed is not None else ():
            subscription.end(reason)

    def _drop(self, subscription: Subscription) -> None:
        self.unsubscribe(subscription)
        log.warning(
            "a stream subscriber read nothing for too long and was dropped",
            extra={"table_id": subscription.table_id, "lag_limit_s": self.lag_limit_s},
        )
        subscription.end(
            f"this client read nothing for {self.lag_limit_s:g} s while events waited; "
            "resume with Last-Event-ID"
        )

    def close(self, reason: str) -> None:
        """End every stream (a closing comment with `reason`), and stop listening."""
        with self._lock:
            self._closed = reason
            subscribers = [s for f in self._followed.values() for s in f.subscribers]
            self._followed.clear()
        for subscription in subscribers:
            subscription.end(reason)
        listener = self._listener
        if listener is not None and listener is not threading.current_thread():
            listener.join(timeout=5)


class ShuttingDown(ApiError):
    """The process is closing its streams: 503, try again (another worker will answer)."""

    status, title = 503, "Unavailable"
