"""The one boundary where what a process reads about a table from Redis is parsed.

Everything stored about one table (its meta hash's fields, its stream's entries, its
idempotency records, its due index record, the projections' positions and books of it) is
written by this service, but anyone with access to Redis can change it. So each value is
parsed here, strictly, into a typed value, and anything that does not parse raises ONE error,
:class:`CorruptTable`, naming the table and what did not parse (a key, a field). The callers
then set that table aside (``DueIndex.quarantine``: listed in ``/healthz``, answered 409) and
go on with the others; a loop over many tables never lets one table's bad value stop it, and a
batched read parses each table's value separately (``parse_each``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import orjson

from .store import CorruptLog, Idempotency, StoredEvent

__all__ = [
    "CorruptTable",
    "META_FIELDS",
    "Meta",
    "count",
    "book_data",
    "due",
    "idempotency",
    "member_text",
    "meta",
    "position",
    "parse_each",
    "RECORDED_EFFECTS",
    "recorded_version",
    "replay",
    "stored_events",
    "version_of_id",
    "what_failed",
]

_COUNT = re.compile(rb"(?:0|[1-9][0-9]{0,17})")
"""A version, a position or a count as the service writes them: a decimal without sign,
leading zeros or spaces, below 10**18."""
_DUE = re.compile(rb"-?[0-9]{1,12}(?:\.[0-9]{1,9})?")
"""A due moment as the service writes it (``f"{due:.3f}"``)."""

T = TypeVar("T")


class CorruptTable(CorruptLog):
    """A value stored about table `table_id` does not parse (`what`: which key or field);
    the table is set aside until an operator repairs it."""

    def __init__(self, table_id: str, what: str, detail: str = "") -> None:
        super().__init__(table_id, what, detail)  # all args: the error pickles
        self.table_id = table_id
        self.what = what
        self.detail = detail

    def __str__(self) -> str:
        tail = f" ({self.detail})" if self.detail else ""
        return f"table {self.table_id!r}: {self.what} does not parse{tail}"


def what_failed(error: BaseException) -> str:
    """Which stored key or field of a table `error` (or what it was raised from) is about:
    "log" when none of them says."""
    seen: BaseException | None = error
    while seen is not None:
        what = getattr(seen, "what", None)
        if isinstance(what, str):
            return what
        seen = seen.__cause__
    return "log"


def count(table_id: str, what: str, raw: object) -> int:
    """`raw`, a stored version, position or count, as an int (CorruptTable naming `what`)."""
    if not isinstance(raw, bytes) or _COUNT.fullmatch(raw) is None:
        raise CorruptTable(table_id, what, f"{_shown(raw)} is not a count")
    return int(raw)


def _shown(raw: object) -> str:
    """A stored value as a log line may show it (short, never decoded as anything)."""
    return repr(raw)[:40]


def due(table_id: str, raw: object) -> float | None:
    """The meta hash's "due" field: None when absent, else finite epoch seconds."""
    if raw is None:
        return None
    if not isinstance(raw, bytes) or _DUE.fullmatch(raw) is None:
        raise CorruptTable(table_id, "meta field due", f"{_shown(raw)} is not epoch seconds")
    value = float(raw)
    if not math.isfinite(value):  # (the pattern allows no other, but say it)
        raise CorruptTable(table_id, "meta field due", f"{_shown(raw)} is not finite")
    return value


class Meta:
    """A table's meta hash, parsed: its version (0: no table), snapshot (bytes), the version
    the snapshot is of, its due moment and the version its stream starts after."""

    __slots__ = ("due", "snapshot", "snapshot_version", "trimmed", "version")

    def __init__(
        self,
        version: int,
        snapshot: bytes | None,
        snapshot_version: int,
        due: float | None,
        trimmed: int,
    ) -> None:
        self.version = version
        self.snapshot = snapshot
        self.snapshot_version = snapshot_version
        self.due = due
        self.trimmed = trimmed


META_FIELDS = ("version", "snapshot", "snapshot_version", "due", "trimmed")
"""The fields `meta` parses, in the order it takes them."""


def meta(table_id: str, fields: Iterable[object]) -> Meta:
    """The meta hash's `META_FIELDS` (as an HMGET returns them), parsed and checked against
    each other; CorruptTable naming the first field that does not."""
    raw_version, snapshot, raw_since, raw_due, raw_trimmed = fields
    if raw_version is None:  # no table (whatever else is there: nothing was ever appended)
        return Meta(0, None, 0, None, 0)
    version = count(table_id, "meta field version", raw_version)
    if version == 0:
        raise CorruptTable(
            table_id, "meta field version", "a stored table is at version 1 at least"
        )
    if not isinstance(snapshot, bytes):
        raise CorruptTable(table_id, "meta field snapshot", "missing")
    since = (
        version if raw_since is None else count(table_id, "meta field snapshot_version", raw_since)
    )
    if not 0 < since <= version:
        raise CorruptTable(
            table_id, "meta field snapshot_version", f"{since} is not within 1..{version}"
        )
    trimmed = 0 if raw_trimmed is None else count(table_id, "meta field trimmed", raw_trimmed)
    if trimmed > version:
        raise CorruptTable(table_id, "meta field trimmed", f"{trimmed} is past version {version}")
    return Meta(version, snapshot, since, due(table_id, raw_due), trimmed)


def version_of_id(entry_id: object) -> int | None:
    """The version a stream id ``<version>-0`` encodes, None for any other id."""
    if not isinstance(entry_id, bytes):
        return None
    milliseconds, _, sequence = entry_id.partition(b"-")
    if sequence != b"0" or _COUNT.fullmatch(milliseconds) is None:
        return None
    return int(milliseconds)


def stored_events(table_id: str, after: int, entries: Iterable[Any]) -> list[StoredEvent]:
    """A stream's entries (XRANGE's reply) as the events after `after`: each must be the next
    version and hold one "data" field (a gap, another id, another field: CorruptTable)."""
    events = []
    for expected, (entry_id, fields) in enumerate(entries, start=after + 1):
        if version_of_id(entry_id) != expected:
            raise CorruptTable(
                table_id, f"stream entry {_shown(entry_id)}", f"version {expected} belongs there"
            )
        data = fields.get(b"data") if isinstance(fields, dict) else None
        if not isinstance(data, bytes):
            raise CorruptTable(table_id, f"stream entry {expected}", "no data field")
        events.append(StoredEvent(version=expected, data=data))
    return events


def idempotency(table_id: str, key: str, request_hash: object, response: object) -> Idempotency:
    """An idempotency record's fields (both there: the caller checked) as a record."""
    what = f"idempotency record {key!r}"
    if not isinstance(request_hash, bytes) or not isinstance(response, bytes):
        raise CorruptTable(table_id, what, "a field is not bytes")
    try:
        text = request_hash.decode("ascii")
    except UnicodeDecodeError:
        raise CorruptTable(table_id, what, "its request hash is not text") from None
    return Idempotency(key=key, request_hash=text, response=response)


RECORDED_EFFECTS = ("made", "changed")
"""What a command did, as its idempotency record keeps it: made something (a table, a seat,
a hand in play) or changed the table."""
_EFFECT_OF_STATUS = {201: "made", 200: "changed"}
"""Records written before they kept effects held the HTTP response instead, `{"status", "body"}`
(they live 24 h, across a deploy): upcast on read, their status to its effect, the body as the
facts."""


def replay(table_id: str, record: Idempotency) -> tuple[str, Any]:
    """The effect and facts of the first answer an idempotency record keeps (a record of the
    older form upcast: see `_EFFECT_OF_STATUS`)."""
    what = f"idempotency record {record.key!r}"
    try:
        stored = orjson.loads(record.response)
    except orjson.JSONDecodeError:
        raise CorruptTable(table_id, what, "its answer is not JSON") from None
    if not isinstance(stored, dict):
        raise CorruptTable(table_id, what, "its answer is not a JSON object")
    if "effect" in stored:
        effect = stored["effect"]
        if not isinstance(effect, str) or effect not in RECORDED_EFFECTS:
            raise CorruptTable(table_id, what, "its answer has no known effect")
        return effect, stored.get("facts")
    status = stored.get("status")
    upcast = None
    if isinstance(status, int) and not isinstance(status, bool):
        upcast = _EFFECT_OF_STATUS.get(status)
    if upcast is None:
        raise CorruptTable(table_id, what, "its answer has neither an effect nor a status")
    return upcast, stored.get("body")


def position(table_id: str, projection: str, raw: object) -> int:
    """A projection's position of a table (None: 0, nothing applied yet)."""
    return 0 if raw is None else count(table_id, f"{projection} position", raw)


def recorded_version(table_id: str, raw: object) -> int:
    """The due index's record of the version whose due it holds (None: -1, none)."""
    return -1 if raw is None else count(table_id, "due index version", raw)


def book_data(table_id: str, projection: str, raw: bytes) -> dict[str, Any]:
    """A projection's stored JSON object of a table (the ledger's book)."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise CorruptTable(table_id, f"{projection} book", "not JSON") from None
    if not isinstance(data, dict):
        raise CorruptTable(table_id, f"{projection} book", "not a JSON object")
    return data


def member_text(raw: object) -> str | None:
    """A member of a list of tables (the due index, the table list) as text, None when it is
    not UTF-8 (no table's: table ids are text)."""
    if isinstance(raw, str):
        return raw
    if not isinstance(raw, bytes):
        return None
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return None


def parse_each(
    table_ids: Iterable[str],
    replies: Iterable[object],
    parse: Callable[[str, Any], T],
    key: str,
) -> list[T | CorruptTable]:
    """`parse(table_id, reply)` for each table's reply of a batch (a pipeline run with
    ``raise_on_error=False``), where a reply that is Redis refusing the key (``WRONGTYPE``:
    `key` is of the wrong type) or does not parse is that table's CorruptTable, and the others
    are parsed all the same. Any other error reply (a node unreachable, a failover under way)
    is raised: it says nothing of the table."""
    parsed: list[T | CorruptTable] = []
    for table_id, reply in zip(table_ids, replies, strict=True):
        if isinstance(reply, Exception):
            if not str(reply).startswith("WRONGTYPE"):
                raise reply
            parsed.append(CorruptTable(table_id, key, str(reply)[:80]))
            continue
        try:
            parsed.append(parse(table_id, reply))
        except CorruptTable as corrupt:
            parsed.append(corrupt)
    return parsed
