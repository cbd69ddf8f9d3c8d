"""The tables layer: the one place that joins the rules, the event store and the clock
(`service.tables.tables`: load, decide, commit), and the decoded states each process keeps
(`service.tables.state_cache`)."""

from .tables import (
    Contention,
    Decide,
    IdempotencyReused,
    LogUnreadable,
    PreconditionFailed,
    Respond,
    Result,
    TableExists,
    TableNotFound,
    TableQuarantined,
    Tables,
    utc_now,
)

__all__ = [
    "Contention",
    "Decide",
    "IdempotencyReused",
    "LogUnreadable",
    "PreconditionFailed",
    "Respond",
    "Result",
    "TableExists",
    "TableNotFound",
    "TableQuarantined",
    "Tables",
    "utc_now",
]
