"""The boundary where the casino wallet's stored records are read: a tenant's settings (a
hash's fields) and a transaction's record (JSON). What cannot be read is named
(`CorruptRecord`: a 409 at the API, with the fix) and logged, and holds up nothing else: the
wallet duty leaves an unreadable transaction pending for an operator and finishes the others.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson

from service.eventlog.store import CorruptRecord
from service.rules import wallet as w

log = logging.getLogger("guts.wallet")


class SettingsChanged(Exception):
    """The tenant's wallet settings are not the ones a transaction was made with: `settings`
    are the stored ones (None: the tenant has none now)."""

    def __init__(self, settings: dict[str, Any] | None) -> None:
        super().__init__("the wallet's settings changed")
        self.settings = settings


def opened(kept: Any) -> dict[str, Any] | None:
    """`OPEN`'s answer, when it was given settings: the record kept before (None: the new
    one was written); SettingsChanged, nothing written, when they are not the stored ones."""
    if isinstance(kept, list):
        raise SettingsChanged(settings_of(dict(zip(kept[::2], kept[1::2], strict=True))))
    if kept is None:
        return None
    record = decoded(kept)
    if record is None:
        raise CorruptRecord("a wallet transaction with this request's id cannot be read")
    return record


def settings_of(raw: dict[bytes, bytes]) -> dict[str, Any] | None:
    """Wallet settings as stored (a hash's fields), decoded; None for none; CorruptRecord when
    they cannot be read (PUT /v1/wallet writes them again)."""
    if not raw:
        return None
    try:
        found = {k.decode(): v.decode() for k, v in raw.items()}
        value = int(found["chip_value_minor"])
        if value <= 0 or not all(found[k] for k in ("url", "currency", "secret")):
            raise ValueError("a field is empty")
    except (KeyError, ValueError) as error:  # (a UnicodeDecodeError is a ValueError)
        log.error("the wallet settings stored cannot be read: %s", error)
        raise CorruptRecord(
            "the tenant's wallet settings cannot be read; an operator must set them again "
            "(PUT /v1/wallet)"
        ) from error
    return {**found, "chip_value_minor": value}


def decoded(raw: bytes) -> dict[str, Any] | None:
    """A transaction's record as stored, None when it is not a JSON object."""
    try:
        record = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return record if isinstance(record, dict) else None


def record_of(tenant: str, key: str, raw: bytes) -> dict[str, Any]:
    """A transaction's record as stored; CorruptRecord, naming it, when it cannot be read."""
    record = decoded(raw)
    if record is None:
        log.error("wallet transaction %s of tenant %s cannot be read", key, tenant,
                  extra={"tenant": tenant, "transaction": key})  # fmt: skip
        raise CorruptRecord(
            f"wallet transaction {key!r} cannot be read; an operator must repair it"
        )
    return record


def retried(raw: bytes) -> bool:
    """Whether a transaction's record is a credit or rollback still pending (one that cannot
    be read is not: the duty names it when it comes due)."""
    record = decoded(raw)
    return (
        record is not None and record.get("kind") != w.DEBIT and record.get("status") == w.PENDING
    )
