"""The backstop: closes hands whose deadline passed without a close.

RQ's scheduler lives in one worker at a time; if that worker dies, another takes the scheduler
over only at its next maintenance pass (minutes). So every worker process also runs this sweep
in a thread: once a `interval_s`, it reads the deadline index for hands overdue by more than
`GRACE_S` and closes them itself. Closing is idempotent (a version-checked append), so several
workers sweeping at once is harmless.
"""

from __future__ import annotations

import logging
import threading
import time

from redis import Redis, RedisError

from service.rules.state import TIMED_PHASES
from service.rules.times import parse_iso
from service.tables import TableNotFound

from .jobs import close_hand, tables_for
from .scheduling import deadlines_key, overdue

GRACE_S = 0.5
log = logging.getLogger("guts.backstop")


def sweep(connection: Redis, now_epoch: float | None = None) -> int:
    """Close every overdue hand; returns how many were closed."""
    now_epoch = time.time() if now_epoch is None else now_epoch
    tables = tables_for(connection)
    closed = 0
    for table_id, _ in overdue(connection, now_epoch - GRACE_S):
        try:
            state = tables.load(table_id)
        except TableNotFound:
            connection.zrem(deadlines_key(), table_id)
            continue
        hand = state.hand
        if hand is None or hand.phase not in TIMED_PHASES:
            connection.zrem(deadlines_key(), table_id)
            continue
        due = parse_iso(hand.deadline).timestamp()
        if due > now_epoch:  # the index was stale: the hand's deadline moved later
            connection.zadd(deadlines_key(), {table_id: due})
            continue
        if close_hand(connection, table_id, hand.number, hand.deadline) == "closed":
            closed += 1
            log.info('{"backstop":"closed","table_id":"%s","hand":%d}', table_id, hand.number)
    return closed


class Backstop(threading.Thread):
    """A daemon thread running `sweep` every `interval_s` until `stop()`."""

    def __init__(self, redis_url: str, interval_s: float = 1.0) -> None:
        super().__init__(name="guts-backstop", daemon=True)
        self.redis_url = redis_url
        self.interval_s = interval_s
        self._stopped = threading.Event()

    def run(self) -> None:
        connection = Redis.from_url(self.redis_url)
        while not self._stopped.wait(self.interval_s):
            try:
                sweep(connection)
            except (RedisError, OSError) as exc:
                log.warning("backstop sweep failed: %s", type(exc).__name__)
            except Exception:  # keep sweeping whatever one table did
                log.exception("backstop sweep failed")
        connection.close()

    def stop(self) -> None:
        self._stopped.set()
