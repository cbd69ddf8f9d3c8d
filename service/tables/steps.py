"""The values a command passes between its steps (`service.tables.tables`: load, decide,
commit): what the application hands in (`Prepare`, `Guard`, `Tell`), what each step makes,
and the `Result`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from service.eventlog.store import Quota
from service.rules.clock import Due
from service.rules.decide import Command
from service.rules.events import Event
from service.rules.state import TableState
from service.tables.state_cache import Known

Effect = Literal["made", "changed"]
"""What a command did: made something (a table, a seat, a hand in play), or changed the table."""
Prepare = Callable[[TableState], Command]
"""The application's part of a command, on the loaded state: who sits where, a player's
exclusion or loss limits, whatever the command needs to be decided that the rules cannot look
up. Called again on each attempt, on the state that attempt decides on."""
Guard = Callable[[TableState], None]
"""A check of who may act on the table, before anything else (an idempotent replay, a version
precondition) could tell the caller something about it."""
Gate = Callable[[], None]
"""What a decided command waits for before it is appended, raising when it must not be (a
wallet-funded seat's debit, sent before the seat is decided: its answer, so that the seat is
decided while the wallet answers). Called before each append of the command: it must give the
same outcome each time."""


def utc_now() -> datetime:
    """The wall clock, in UTC."""
    return datetime.now(UTC)


@dataclass(frozen=True)
class Answer:
    """What a command's caller is told, and what its idempotency record keeps to tell a retry:
    its effect and the facts, in the game's words, as plain (JSON) data."""

    effect: Effect
    facts: Any


Tell = Callable[[TableState, list[Event]], Answer]
"""The answer to a command, from the table's state after it and the events it appended."""


def tell_version(state: TableState, events: list[Event]) -> Answer:
    """The table changed; the facts: its version."""
    return Answer("changed", {"version": state.version})


@dataclass
class Result:
    """What a command did: its answer, and the new state and the events (a replayed answer
    has neither)."""

    answer: Answer
    state: TableState | None = None
    events: list[Event] = field(default_factory=list)
    replayed: bool = False


@dataclass(frozen=True)
class Submission:
    """A command as `Tables.execute` received it: the table, the command (or the application's
    `Prepare` of it), what to answer, and the request's conditions."""

    table_id: str
    command: Command | Prepare
    tell: Tell
    create: bool
    if_match: int | None
    idempotency_key: str | None
    request_hash: str
    guard: Guard | None
    quota: Quota | None = None
    fresh_key: bool = False
    """The idempotency key was made for this request and never used before (so no answer can
    be kept under it: no look-up before deciding; the append still checks it atomically)."""
    gate: Gate | None = None


@dataclass
class Loaded:
    """The table as an attempt loaded it: its `version`, the working state to decide on (out
    of the cache: it goes back there only once the attempt lands) and its log's head hash."""

    version: int
    state: TableState
    head: str


@dataclass
class Decided:
    """A command decided on a loaded state (now changed by the events), its answer, and the
    table's due before it."""

    loaded: Loaded
    events: list[Event]
    answer: Answer
    due_before: Due | None


@dataclass(frozen=True)
class Attempt:
    """What an attempt at a command starts from: `known`, what this process knows of the table
    (the cache's entry, or what a lost race brought back), or None: a load from the store."""

    known: Known | None = None
