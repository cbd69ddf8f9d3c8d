"""The plain values the use cases take and give: request conditions, outcomes, and the
refusals that are theirs (the rules' are in `service.rules.errors`). None of them speaks HTTP:
`service.api.http` alone turns an outcome into a status, headers and a body."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from service.eventlog.store import Quota as Quota
from service.rules.events import Event
from service.rules.ruleset import Ruleset
from service.tables import TableNotFound

TABLE_ID = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
IssueToken = Callable[[str, int, int], str]
"""Makes the token of the player who sat at (table, seat, version)."""


@dataclass(frozen=True)
class Conditions:
    """What a request asks of a command besides its arguments: the table version it expects
    (If-Match), and an idempotency key with a hash of the whole request, so that the same
    request sent again is answered again instead of run again. `sender` is the credential
    as sent: a table id or audit id derived from a key is derived per sender. `quota`
    counts the command against its sender's rate limit where it lands (see `Quota`)."""

    if_match: int | None = None
    idempotency_key: str | None = None
    request_hash: str = ""
    sender: str = ""
    quota: Quota | None = None


NO_CONDITIONS = Conditions()


Effect = Literal["made", "changed", "found", "started", "removed"]
"""What a use case did: made something (a table, a seat, a hand in play, a webhook), changed
something (a table, a player's limits), found what was asked for (a read), started work that
goes on after the answer (an audit, a report, a delivery attempt), or removed something (a
webhook). A refusal is an exception (`GutsError`, `Forbidden`), not an outcome."""


class Subject(NamedTuple):
    """What an outcome is about, by kind and id: ("table", table_id), ("webhook", id),
    ("audit", id), ("report", id). What was made or started can be read there."""

    kind: Literal["table", "webhook", "audit", "report"]
    id: str


@dataclass(frozen=True)
class Outcome:
    """A use case's answer: its effect, the facts in the game's words as plain (JSON) data,
    the table version to report (None: none), whether it is the answer kept for an earlier
    identical request, what it is about (None: nothing to point at), and the events a command
    appended (none when it was replayed, or read)."""

    effect: Effect
    facts: Any
    version: int | None = None
    replayed: bool = False
    subject: Subject | None = None
    events: tuple[Event, ...] = ()


@dataclass(frozen=True)
class HandHistory:
    """The record of one finished hand as the caller may see it, with the table's version and
    rules (which the hand-history formats need)."""

    record: dict[str, Any]
    version: int
    rules: Ruleset


def checked_table_id(table_id: str) -> str:
    """`table_id`, if it is one a table can have (else: no such table)."""
    if not TABLE_ID.fullmatch(table_id):
        raise TableNotFound(f"no table {table_id!r}"[:100])
    return table_id
