"""The protection duty of a dispatcher: apply the limits changes that their writer did not
finish applying at the tables (``service.application.protection``): a time-out or exclusion
that started ends the player's session at each table where they still sit, a lowered reality
check or session limit tightens it. The writer (the API process that took the change) applies
its entry at once; one older than `GRACE_S` is one whose writer died or failed partway, and
any dispatcher applies it again: per table the rules change a session once and the entry's id
is the idempotency key, so any number of dispatchers may run it.
"""

from __future__ import annotations

import logging
import threading

from service.application.usecases import TableService
from workers.duty import run_duty

log = logging.getLogger("guts.protection")
GRACE_S = 5.0
"""How long an outbox entry is its writer's to apply before the dispatchers apply it."""


def run_protection_duty(
    usecases: TableService, stop: threading.Event, grace_s: float = GRACE_S, idle_s: float = 0.5
) -> None:
    """Apply due outbox entries until `stop` (a thread of the dispatcher: `run_duty`); one
    that fails is logged and comes round again."""

    def one_pass() -> float:
        applied = usecases.apply_due_protection(grace_s)
        if applied:
            log.info("protection: applied %d limits change(s) at the tables", applied)
        return idle_s

    run_duty("protection", one_pass, stop, log)
