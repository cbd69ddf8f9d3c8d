"""The tables layer: the one place that joins the rules, the event store and the clock
(`service.tables.tables`: load, decide, commit), and the decoded states each process keeps
(`service.tables.state_cache`)."""

from .tables import (
    Answer,
    Contention,
    IdempotencyReused,
    LogUnreadable,
    PreconditionFailed,
    Prepare,
    Result,
    TableExists,
    TableNotFound,
    TableQuarantined,
    Tables,
    Tell,
    tell_version,
    utc_now,
)

__all__ = [
    "Contention",
    "Answer",
    "IdempotencyReused",
    "LogUnreadable",
    "PreconditionFailed",
    "Prepare",
    "Result",
    "TableExists",
    "TableNotFound",
    "TableQuarantined",
    "Tables",
    "Tell",
    "tell_version",
    "utc_now",
]
