"""The tables layer: the one place that joins the rules, the event store and the clock
(`service.tables.tables`: load, decide, commit), and the decoded states each process keeps
(`service.tables.state_cache`)."""

from .errors import (
    Contention,
    IdempotencyReused,
    LogUnreadable,
    OutcomeUnknown,
    PreconditionFailed,
    TableExists,
    TableNotFound,
    TableQuarantined,
)
from .steps import Answer, Gate, Prepare, Result, Tell, tell_version, utc_now
from .tables import Tables

__all__ = [
    "Contention",
    "Answer",
    "Gate",
    "IdempotencyReused",
    "LogUnreadable",
    "OutcomeUnknown",
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
