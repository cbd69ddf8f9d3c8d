"""The log as stored, read by the audit without the store's checks: the stream's entries by
their ids (a gap, an id of no version, an entry without data are the audit's findings, at the
version where they are), the events trimmed into the archive, and the copies both hold."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple, Protocol, runtime_checkable

from service.eventlog.store import (
    CorruptLog,
    EventStore,
    StoredEvent,
    StoreError,
)

from .findings import Discrepancy

PAGE = 5000


@runtime_checkable
class RawStream(Protocol):
    """A store whose log the audit can read as stored (`RedisEventStore`): the stream's entries
    unchecked, and the archive holding the events trimmed from it."""

    archive: Any

    def trimmed(self, table_id: str) -> int:
        """The version the stream starts after (the archive holds the ones before)."""
        ...

    def stream_entries(
        self, table_id: str, start: bytes, limit: int
    ) -> list[tuple[bytes, bytes | None]]:
        """The stream's ids and "data" fields from `start` on (``(<id>``: after it)."""
        ...


@runtime_checkable
class ArchivePositions(Protocol):
    """An archive that says how far it holds each table (`service.archive.Archive`)."""

    def positions(self, tables: Any) -> list[int]:
        """The version each (tenant, table id) is archived up to (0: nothing)."""
        ...

    def read(self, table_id: str, after: int, upto: int, limit: int | None) -> list[StoredEvent]:
        """The archived events after `after` up to `upto`; CorruptLog unless all there."""
        ...


class Entry(NamedTuple):
    """One entry of the log as stored: its id, the version the id says (None: an id of no
    version), its data (None: none)."""

    id: str
    version: int | None
    data: bytes | None


def entries(store: EventStore, table_id: str) -> Iterator[Entry]:
    """The table's log as stored, oldest first: from a `RawStream`, the archived events, then
    the stream's entries unchecked; from another store, its (checked) read."""
    if not isinstance(store, RawStream):
        after = 0
        while True:
            page = store.read(table_id, after, PAGE)
            yield from (Entry(f"{s.version}-0", s.version, s.data) for s in page)
            if len(page) < PAGE:
                return
            after = page[-1].version
    trimmed = store.trimmed(table_id)
    yield from from_archive(store, table_id, 0, trimmed)
    start, following = (f"({trimmed}-0".encode() if trimmed else b"-"), trimmed + 1
    while True:
        raw = store.stream_entries(table_id, start, PAGE)
        first = version_of(raw[0][0]) if raw else None
        if first is not None and first > following and store.trimmed(table_id) >= first - 1:
            # Trimmed while the audit read the stream: the archive holds those events.
            yield from from_archive(store, table_id, following - 1, first - 1)
        for entry_id, data in raw:
            version = version_of(entry_id)
            yield Entry(entry_id.decode(errors="replace"), version, data)
            following = following if version is None else version + 1
        if len(raw) < PAGE:
            return
        start = b"(" + raw[-1][0]


def from_archive(store: RawStream, table_id: str, after: int, upto: int) -> Iterator[Entry]:
    """The archived events after `after` up to `upto` (trimmed from the stream)."""
    if upto > after and store.archive is None:
        raise StoreError(f"events up to {upto} are archived, and the audit has no archive")
    while after < upto:
        page = archived_page(store.archive, table_id, after, upto)
        yield from (Entry(f"{s.version}-0", s.version, s.data) for s in page)
        if not page or page[-1].version < min(upto, after + PAGE):
            version = after + len(page) + 1
            problem = (
                f"version {version} is missing: the stream was trimmed up to {upto}, and "
                "the archive does not hold it"
            )
            raise Discrepancy(version, "?", problem, "missing")
        after = page[-1].version


def archived_page(archive: Any, table_id: str, after: int, upto: int) -> list[StoredEvent]:
    """Up to `PAGE` archived events after `after`: as many as are there in a row."""
    try:
        return list(archive.read(table_id, after, upto, PAGE))
    except CorruptLog:  # a version is missing: find how many are there before it
        there, lacking = 0, min(PAGE, upto - after)
        while lacking - there > 1:
            middle = (there + lacking) // 2
            try:
                archive.read(table_id, after, upto, middle)
                there = middle
            except CorruptLog:
                lacking = middle
        return list(archive.read(table_id, after, upto, there)) if there else []


def version_of(entry_id: bytes) -> int | None:
    """The version a stream id ``<version>-0`` says, None for any other id."""
    milliseconds, dash, sequence = entry_id.partition(b"-")
    if dash and sequence == b"0" and milliseconds.isdigit() and milliseconds[:1] != b"0":
        return int(milliseconds)
    return None


class ArchivedCopies:
    """The archive's copies of the versions after the stream's trim up to how far the archive
    holds the table, to compare with the stream's."""

    def __init__(self, store: EventStore, table_id: str) -> None:
        self.table_id = table_id
        self.archive: ArchivePositions | None = None
        self.upto = self.after = 0
        archive = store.archive if isinstance(store, RawStream) else None
        if isinstance(archive, ArchivePositions):
            self.archive = archive
            (self.upto,) = archive.positions([("", table_id)])  # (the tenant is not needed)
            self.after = store.trimmed(table_id) if isinstance(store, RawStream) else 0
        self.copies: dict[int, bytes] = {}

    def check(self, version: int, data: bytes, event_type: str) -> None:
        """The stream's `data` of `version` must be the archive's, when it holds it."""
        if self.archive is None or version <= self.after or version > self.upto:
            return
        if version not in self.copies:
            page = archived_page(self.archive, self.table_id, version - 1, self.upto)
            self.copies = {stored.version: stored.data for stored in page}
        copy = self.copies.pop(version, None)
        if copy is None:
            problem = f"the archive holds the table up to {self.upto}, but not version {version}"
            raise Discrepancy(version, event_type, problem, "archive")
        if copy != data:
            problem = "the event differs from the archive's copy of it (changed after archiving)"
            raise Discrepancy(version, event_type, problem, "archive")
