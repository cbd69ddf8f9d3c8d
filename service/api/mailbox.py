"""A live stream's mailbox: the bounded queue the feed puts a subscriber's messages in and the
subscriber's own greenlet takes them from.

`queue.Queue` holds a lock and three conditions (each with a deque of waiters): 2.7 KB of
Python objects per idle stream under gevent, a tenth of the 25.0 KB a stream's Python objects
took in all (tracemalloc over 1,000 idle streams on gevent's server, 2026-11-26). A mailbox
has one reader and needs only a deque and an event: 23.7 KB in all with it.
"""

from __future__ import annotations

import collections
import threading
from typing import Any


class Mailbox:
    """At most `size` items (one more may be forced in by `force`); one reader."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: collections.deque[Any] = collections.deque()
        self._ready = threading.Event()

    def offer(self, item: Any) -> bool:
        """Queue `item`; False when the mailbox is full."""
        if len(self._items) >= self.size:
            return False
        self._items.append(item)
        self._ready.set()
        return True

    def force(self, item: Any) -> None:
        """Queue `item` whether it is full or not (the last word of a stream)."""
        self._items.append(item)
        self._ready.set()

    def clear(self) -> None:
        self._items.clear()

    def empty(self) -> bool:
        return not self._items

    def full(self) -> bool:
        return len(self._items) >= self.size

    def take(self, timeout: float) -> tuple[bool, Any]:
        """(True, the oldest item), or (False, None) when none came within `timeout` s."""
        while not self._items:
            self._ready.clear()
            if self._items:  # (it came between the look and the clear)
                break
            if not self._ready.wait(timeout):
                return False, None
        return True, self._items.popleft()
