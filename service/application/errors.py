"""The refusals a caller of the use cases can meet, in one place: the application's own (its
root is `Refused`) and those of the layers below that reach it unchanged. Each layer has one
root (the rules' `GutsError`, the tables' `TableError` (a `GutsError`), the event log's
`StoreError`, the application's `Refused` (a `GutsError`), the API's `ApiError`), and
`service/api/errors.py` maps every one of them to a problem+json answer."""

from __future__ import annotations

from service.eventlog.store import (
    ArchiveUnavailable,
    BadCursor,
    CorruptLog,
    CorruptRecord,
    OverLimit,
    StoreError,
    StoreRefusesWrites,
    StoreUnavailable,
)
from service.rules.errors import GutsError
from service.tables.errors import (
    Contention,
    IdempotencyReused,
    LogUnreadable,
    OutcomeUnknown,
    PreconditionFailed,
    TableError,
    TableExists,
    TableNotFound,
    TableQuarantined,
)


class Refused(GutsError):
    """The root of the application's own refusals."""


class Forbidden(Refused):
    """A known caller who may not do this."""


class HandNotFound(Refused):
    """The table has no finished hand with this number."""


class AuditNotFound(Refused):
    """No audit has this id (or its record has expired)."""


class ReportNotFound(Refused):
    """No report has this id for the caller (or its record has expired)."""


class WebhookNotFound(Refused):
    """No such webhook (or delivery) of the caller's tenant."""


class LedgerUnavailable(Refused):
    """This process keeps no ledger (a 503, as a store that cannot be reached: it was one
    that does not answer that had none to give)."""


class WalletNotSet(Refused):
    """The tenant has no wallet (a 409: set one with PUT /v1/wallet)."""


class WalletRefused(Refused):
    """The wallet refused the debit (insufficient funds, unknown player): a 409."""


class WalletOutcomeUnknown(Refused):
    """The wallet's answer was not a confirmation (no answer, an error, a bad signature or
    body): the debit is rolled back and the seat refused (a 502)."""


__all__ = [
    "ArchiveUnavailable",
    "AuditNotFound",
    "BadCursor",
    "Contention",
    "CorruptLog",
    "CorruptRecord",
    "Forbidden",
    "GutsError",
    "HandNotFound",
    "IdempotencyReused",
    "LedgerUnavailable",
    "LogUnreadable",
    "OutcomeUnknown",
    "OverLimit",
    "PreconditionFailed",
    "Refused",
    "ReportNotFound",
    "StoreError",
    "StoreRefusesWrites",
    "StoreUnavailable",
    "TableError",
    "TableExists",
    "TableNotFound",
    "TableQuarantined",
    "WalletNotSet",
    "WalletOutcomeUnknown",
    "WalletRefused",
    "WebhookNotFound",
]
