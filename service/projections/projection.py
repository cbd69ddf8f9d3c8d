"""What a projection is (`Projection`), what it is given to apply (`Followed`), and what
it says of a tenant whose record of positions it cannot read (`HeldProjection`): the follower's
contract with each projection (`service.projections.follower`)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Protocol

from service.eventlog.codec import decode_event
from service.eventlog.store import CorruptLog, StoredEvent
from service.rules import events as ev


class HeldProjection(Exception):
    """A projection's record of positions for `tenant` (`key`) holds another type of value
    than the projection writes there (a value written outside the service): nothing can be
    read of any of the tenant's tables there, nor applied. It says nothing of a table's log,
    so no table is set aside: the follower holds that projection for the tenant (logged)
    until an operator repairs the key; the tables play on, and the other projections, and
    this one for other tenants, keep up."""

    def __init__(self, projection: str, tenant: str, key: str) -> None:
        super().__init__(projection, tenant, key)  # all args: the error pickles
        self.projection, self.tenant, self.key = projection, tenant, key

    def __str__(self) -> str:
        return (
            f"{self.projection} positions of tenant {self.tenant!r} unreadable ({self.key} "
            "holds another type): held for its tables until the key is repaired"
        )


class Followed:
    """What a projection is given to apply: a table, its tenant, the position the events
    follow, and the events, oldest first: `stored` as the log holds them, `events` decoded
    (version, event) on first use (a projection that needs only the bytes decodes nothing)."""

    def __init__(
        self,
        table_id: str,
        tenant: str,
        after: int,
        events: tuple[tuple[int, ev.Event], ...] | None = None,
        stored: tuple[StoredEvent, ...] = (),
    ) -> None:
        self.table_id, self.tenant, self.after, self.stored = table_id, tenant, after, stored
        if events is not None:
            self.__dict__["events"] = events

    @functools.cached_property
    def events(self) -> tuple[tuple[int, ev.Event], ...]:
        return tuple((s.version, decode_event(s.data)) for s in self.stored)


class Projection(Protocol):
    """Something derived from the tables' logs (see `service.projections.follower`)."""

    name: str

    def positions(
        self, tables: Sequence[tuple[str, str]]
    ) -> Sequence[int | CorruptLog | HeldProjection]:
        """The version applied up to for each (tenant, table id), 0 for none, in one round
        trip; for a table whose stored position does not parse, its CorruptTable; for each of
        a tenant whose record of positions cannot be read at all, its HeldProjection."""
        ...

    def apply(self, followed: Followed) -> bool:
        """Apply `followed.events` and move the position to the last one's version, in one
        atomic step, if the position is still `followed.after`; whether it was applied."""
        ...

    def tidy(self, table_id: str, position: int) -> None:
        """After a sweep found the table caught up at `position`: finish what a crash may
        have left half done (the archive trims what it holds; most have nothing to do)."""
        ...
