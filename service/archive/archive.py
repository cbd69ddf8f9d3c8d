"""The archive: the tables' logs copied from Redis into PostgreSQL, verified, then trimmed
from Redis; and the per-hand rows auditors search.

It is a projection of the logs (`service.projections.follower`): a follower hands it a table's
events after
its position, and `apply` copies them in one PostgreSQL transaction that also moves the
position, only if the position is still the one it read (the row is locked while it is
checked). So each event is archived exactly once, whoever archives and however often, and a
crash anywhere loses nothing. Each batch is checked before it is written (every event must
chain, by its stored hash, from the last one archived: a log edited in Redis is never
archived) and read back after the commit (the count and a SHA-256 of the bytes as PostgreSQL
holds them must be the ones read from Redis); only then is the table's stream in Redis
trimmed up to it (`RedisEventStore.trim`, which also keeps the snapshot's tail and the last
few events). A crash between the commit and the trim leaves a few more events in Redis until
the next batch trims them.

Readers get one history: `RedisEventStore.read` takes what was trimmed from here
(`read`), and the hand rows answer `GET /v1/hands` (`hands`) and find hands' events
(`hand_events`). A batch's checks, ledger entries and hand rows are worked out in
`service.archive.batch`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import wraps
from typing import Any, ParamSpec, Protocol, TypeVar

import orjson
import psycopg
from psycopg.types.json import Jsonb

from service.archive.batch import CopiedBatch
from service.archive.pool import Connections
from service.eventlog.codec import GENESIS
from service.eventlog.store import ArchiveUnavailable, CorruptLog, StoredEvent
from service.projections.projection import Followed
from service.rules import ledger
from service.rules.serial import from_data, to_data

P = ParamSpec("P")
R = TypeVar("R")


def reachable(method: Callable[P, R]) -> Callable[P, R]:
    """PostgreSQL going away, or taking no writes (a standby, or read-only by setting), is the
    archive being unavailable: a 503 at the API, a wait in the follower (as for Redis; the
    connection that met it is closed, so one made once it takes writes again serves)."""

    @wraps(method)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except psycopg.OperationalError as error:
            raise ArchiveUnavailable(f"PostgreSQL is unreachable: {error}") from error
        except psycopg.errors.ReadOnlySqlTransaction as error:
            raise ArchiveUnavailable(f"PostgreSQL takes no writes: {error}") from error

    return call


class ArchiveMismatch(CorruptLog):
    """What PostgreSQL holds after a commit is not what was read from Redis: nothing is
    trimmed."""


@dataclass(frozen=True)
class HandRow:
    """One archived hand: where its events are, and the cursor of the page it was on."""

    table_id: str
    hand: int
    first_version: int
    last_version: int
    cursor: str


class Trimmed(Protocol):
    """The event store whose logs are archived, as the archive trims them
    (``RedisEventStore``)."""

    def read(self, table_id: str, after: int = 0, limit: int | None = None) -> list[StoredEvent]:
        """Events with version > `after`, at most `limit`."""
        ...

    def trimmed(self, table_id: str) -> int:
        """The version the table's stream starts after."""
        ...

    def trim(self, table_id: str, archived: int) -> int:
        """Trim the table's stream up to `archived` (at most); where it now starts after."""
        ...


class Archive:
    """The archive in the PostgreSQL behind `pool` (see the module doc). With `store`, it is
    the projection that archives that store's logs, and trims them once verified; it is also
    the ledger's: it derives the entries of the events it archives and stores them in the same
    transaction (``service.archive.ledger`` reads them)."""

    name = "archive"

    def __init__(self, pool: Connections, store: Trimmed | None = None) -> None:
        self.pool = pool
        self.store = store

    @classmethod
    def open(cls, url: str, *, store: Trimmed | None = None, size: int = 4) -> Archive:
        """The archive at `url`, with up to `size` connections (made when needed: a
        PostgreSQL that is down makes calls fail with ArchiveUnavailable, not the start)."""
        return cls(Connections(url, size), store)

    def close(self) -> None:
        self.pool.close()

    @contextmanager
    def _conn(self) -> Iterator[psycopg.Connection]:
        with self.pool.connection() as conn:
            yield conn

    # -- reading (the events Redis no longer holds) ----------------------------------------

    @reachable
    def read(self, table_id: str, after: int, upto: int, limit: int | None) -> list[StoredEvent]:
        """The archived events after `after` up to `upto`, oldest first, at most `limit`;
        CorruptLog unless they are all there (Redis trimmed only what was archived)."""
        count = upto - after if limit is None else min(limit, upto - after)
        if count <= 0:
            return []
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT version, data FROM archive_events"
                " WHERE table_id = %s AND version > %s AND version <= %s"
                " ORDER BY version LIMIT %s",
                (table_id, after, upto, count),
            ).fetchall()
        if [version for version, _ in rows] != list(range(after + 1, after + count + 1)):
            raise CorruptLog(
                f"table {table_id!r}: the archive lacks events after {after} that Redis trimmed"
            )
        return [StoredEvent(version, bytes(data)) for version, data in rows]

    # -- the projection --------------------------------------------------------------------

    @reachable
    def positions(self, tables: Sequence[tuple[str, str]]) -> list[int]:
        """The version each table is archived up to (0: nothing yet)."""
        with self._conn() as conn:
            found = dict(
                conn.execute(
                    "SELECT table_id, version FROM archive_tables WHERE table_id = ANY(%s)",
                    ([table_id for _, table_id in tables],),
                ).fetchall()
            )
        return [found.get(table_id, 0) for _, table_id in tables]

    @reachable
    def apply(self, followed: Followed) -> bool:
        """Archive `followed`'s events and move the position, if it is still
        `followed.after`; then read them back and trim Redis (see the module doc)."""
        if not followed.stored:
            return True
        table_id = followed.table_id
        raws = [stored.data for stored in followed.stored]
        with self._conn() as conn, conn.transaction():
            held = self._lock_position(conn, followed)
            if held is None:
                return False
            head, open_hand, book = held
            copied = CopiedBatch(table_id, followed.tenant, head, open_hand, book)
            for stored in followed.stored:
                copied.add(stored.version, stored.data)
            with conn.cursor() as cur:
                with cur.copy("COPY archive_events (table_id, version, data) FROM STDIN") as copy:
                    for stored in followed.stored:
                        copy.write_row((table_id, stored.version, stored.data))
                if copied.entries:
                    with cur.copy(
                        "COPY ledger_entries (tenant, table_id, player_id, kind, amount, at, entry)"
                        " FROM STDIN"
                    ) as copy:
                        for entry in copied.entries:
                            copy.write_row(
                                (
                                    followed.tenant,
                                    table_id,
                                    entry.player_id,
                                    entry.kind,
                                    entry.amount,
                                    entry.at,
                                    orjson.dumps(entry).decode(),  # (a dataclass: its fields)
                                )
                            )
                if copied.hands:
                    with cur.copy(
                        "COPY archive_hands (tenant, table_id, hand, first_version,"
                        " last_version, started_at, ended_at, players, winners, outcome, pot,"
                        " rake, in_players, won, paid, declared_after) FROM STDIN"
                    ) as copy:
                        for hand in copied.hands:
                            copy.write_row(hand)
                cur.execute(
                    "UPDATE archive_tables SET version = %s, head = %s, open_hand = %s,"
                    " book = %s WHERE table_id = %s",
                    (
                        followed.stored[-1].version,
                        copied.head,
                        None if copied.open_hand is None else Jsonb(copied.open_hand),
                        Jsonb(to_data(copied.book)),
                        table_id,
                    ),
                )
        last = followed.stored[-1].version
        self._verify(table_id, followed.after, last, raws)
        if self.store is not None:
            self.store.trim(table_id, last)
        return True

    @reachable
    def tidy(self, table_id: str, position: int) -> None:
        """Trim what a crash between an archiving and its trim left in Redis: the events
        archived (up to `position`) that the stream still holds are verified against the
        archive again, then trimmed (the follower's sweep calls this for tables it finds
        archived up to their version)."""
        if self.store is None:
            return
        trimmed = self.store.trimmed(table_id)
        if position <= trimmed:
            return
        held = self.store.read(table_id, trimmed, position - trimmed)
        self._verify(table_id, trimmed, position, [stored.data for stored in held])
        self.store.trim(table_id, position)

    def _lock_position(
        self, conn: psycopg.Connection, followed: Followed
    ) -> tuple[str, dict[str, Any] | None, ledger.Book] | None:
        """Lock the table's position row (made at its first batch); its head, open hand and
        ledger book, or None when the position is not `followed.after`."""
        if followed.after == 0:
            conn.execute(
                "INSERT INTO archive_tables (table_id, tenant, head) VALUES (%s, %s, %s)"
                " ON CONFLICT (table_id) DO NOTHING",
                (followed.table_id, followed.tenant, GENESIS),
            )
        row = conn.execute(
            "SELECT version, head, open_hand, book FROM archive_tables"
            " WHERE table_id = %s FOR UPDATE",
            (followed.table_id,),
        ).fetchone()
        if row is None or row[0] != followed.after:
            return None
        book = from_data(ledger.Book, row[3]) if row[3] else ledger.Book()
        return row[1], row[2], book

    def _verify(self, table_id: str, after: int, last: int, raws: list[bytes]) -> None:
        """Read back what was committed: ArchiveMismatch unless PostgreSQL holds exactly
        `raws` at versions after..last."""
        with self._conn() as conn:
            count, digest = conn.execute(
                "SELECT count(*), sha256(string_agg(data, ''::bytea ORDER BY version))"
                " FROM archive_events WHERE table_id = %s AND version > %s AND version <= %s",
                (table_id, after, last),
            ).fetchone() or (0, None)
        if count != len(raws) or bytes(digest or b"") != hashlib.sha256(b"".join(raws)).digest():
            raise ArchiveMismatch(
                f"table {table_id!r}: versions {after + 1}..{last} read back from PostgreSQL"
                " differ from Redis; nothing trimmed"
            )

    # -- hands -----------------------------------------------------------------------------

    @reachable
    def hand_events(
        self, hands: Sequence[tuple[str, int]]
    ) -> dict[tuple[str, int], list[StoredEvent]]:
        """The stored events from the deal to the end of each archived hand of `hands`
        ((table id, hand) pairs), in one read; a hand not archived (yet) is absent."""
        if not hands:
            return {}
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT h.table_id, h.hand, e.version, e.data"
                " FROM unnest(%s::text[], %s::int[]) AS k(table_id, hand)"
                " JOIN archive_hands h USING (table_id, hand)"
                " JOIN archive_events e ON e.table_id = h.table_id"
                " AND e.version BETWEEN h.first_version AND h.last_version"
                " ORDER BY h.table_id, h.hand, e.version",
                ([table_id for table_id, _ in hands], [hand for _, hand in hands]),
            ).fetchall()
        found: dict[tuple[str, int], list[StoredEvent]] = {}
        for table_id, hand, version, data in rows:
            found.setdefault((table_id, hand), []).append(StoredEvent(version, bytes(data)))
        return found

    @reachable
    def hands(
        self,
        *,
        tenant: str | None,
        player_id: str | None = None,
        table_id: str | None = None,
        start: datetime | None = None,
        end: datetime | None = None,
        after: str | None = None,
        limit: int = 20,
    ) -> tuple[list[HandRow], str | None]:
        """A page of finished hands, newest (by end) first, filtered (None: any tenant),
        and the cursor of the next page (None: no more)."""
        where: list[str] = []
        args: list[object] = []
        for clause, value in (
            ("tenant = %s", tenant),
            ("players @> ARRAY[%s]::text[]", player_id),
            ("table_id = %s", table_id),
            ("ended_at >= %s", start),
            ("ended_at < %s", end),
        ):
            if value is not None:
                where.append(clause)
                args.append(value)
        if after is not None:
            micros, seq = parse_cursor(after)
            where.append("(ended_at, seq) < (to_timestamp(%s / 1e6), %s)")
            args += [micros, seq]
        sql = (
            "SELECT table_id, hand, first_version, last_version,"
            " (extract(epoch FROM ended_at) * 1e6)::bigint, seq FROM archive_hands"
            + (" WHERE " + " AND ".join(where) if where else "")
            + " ORDER BY ended_at DESC, seq DESC LIMIT %s"
        )
        with self._conn() as conn:
            rows = conn.execute(sql.encode(), [*args, limit + 1]).fetchall()
        page = [HandRow(t, h, f, last, f"{m}.{s}") for t, h, f, last, m, s in rows[:limit]]
        return page, (page[-1].cursor if len(rows) > limit else None)


def parse_cursor(cursor: str) -> tuple[int, int]:
    """The (end in microseconds, sequence) a hands cursor names; ValueError if malformed."""
    micros, dot, seq = cursor.partition(".")
    if not dot or not micros.isdigit() or not seq.isdigit():
        raise ValueError(f"not a hands cursor: {cursor!r}")
    return int(micros), int(seq)
