"""The tables layer's refusals (all the rules' `GutsError`, mapped in `service/api/errors.py`)."""

from __future__ import annotations

from service.rules.errors import GutsError


class TableError(GutsError):
    """The root of the tables layer's refusals."""


class TableNotFound(TableError):
    """No table has this id."""


class TableExists(TableError):
    """A table with this id already exists."""


class LogUnreadable(TableError):
    """The table's stored log or snapshot fails verification: it cannot be loaded."""


class TableQuarantined(LogUnreadable):
    """Something stored about the table does not load or parse (its log, a field of it,
    `what`): the table is set aside, every read and command of it refused, until an operator
    repairs it."""

    def __init__(self, table_id: str, what: str, tenant: str | None = None) -> None:
        super().__init__(
            f"table {table_id!r} is quarantined: its stored {what} failed verification (it does "
            "not load or parse); it is set aside until an operator repairs it"
        )
        self.table_id = table_id
        self.what = what
        self.tenant = tenant
        """Whose table it is, when its first event still says (another tenant's callers must
        learn nothing of it: `service.application.access.hide_quarantined`)."""


class PreconditionFailed(TableError):
    """The caller's If-Match version is not the table's version."""


class IdempotencyReused(TableError):
    """The Idempotency-Key was used before with a different request."""


class Contention(TableError):
    """The command lost the version race too many times in a row."""


class OutcomeUnknown(TableError):
    """The command's events were written, but Redis did not confirm them on the replicas
    asked for in time (``GUTS_REDIS_MIN_REPLICAS``): they may be lost if the master fails
    now. Repeated with the same Idempotency-Key, the command answers what really happened."""
