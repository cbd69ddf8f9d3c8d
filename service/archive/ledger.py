"""The ledger when there is an archive: its entries are in PostgreSQL (derived by the archive
from each batch of events it archives, in the same transaction: ``service.archive.archive``),
so Redis keeps none of them, and the players' 24 h net losses are summed there (an index by
player and time); only the players' limits (one small hash per tenant) stay in Redis."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from service.archive.archive import Archive, reachable
from service.projections.ledger import LedgerStore, page_cursor
from service.projections.protections import DAY_MS
from service.rules import ledger


class ArchiveLedger(LedgerStore):
    """A `LedgerStore` whose pages, per-table entries and net losses are read from `archive`;
    its limits are the Redis ones of `LedgerStore`. It is not followed as a projection: the
    archive is (its `apply` keeps the entries)."""

    def __init__(self, archive: Archive, ledger: LedgerStore) -> None:
        # (with `ledger`'s way to Redis: its limits read on a request's path, and a seat's
        # protections, go through the event store's shortcut when it was given)
        super().__init__(ledger.client, ledger.prefix, commands=ledger.commands)
        self.archive = archive

    @reachable
    def page(
        self,
        tenant: str,
        after: str | None,
        limit: int,
        *,
        table_id: str | None = None,
        player_id: str | None = None,
    ) -> tuple[list[dict[str, Any]], str]:
        """See `LedgerStore.page` (the cursor is the archive's sequence number)."""
        start = page_cursor(after)
        where, args = ["tenant = %s", "seq > %s"], [tenant, start]
        if table_id is not None:
            where.append("table_id = %s")
            args.append(table_id)
        if player_id is not None:
            where.append("player_id = %s")
            args.append(player_id)
        sql = (
            "SELECT seq, entry FROM ledger_entries WHERE "
            + " AND ".join(where)
            + " ORDER BY seq LIMIT %s"
        )
        with self.archive.pool.connection() as conn:
            rows = conn.execute(sql.encode(), [*args, limit]).fetchall()
        return [entry for _, entry in rows], str(rows[-1][0] if rows else start)

    @reachable
    def table_entries(self, tenant: str, table_id: str) -> tuple[int, list[dict[str, Any]]]:
        """The archived position of `table_id` and every entry derived for it, oldest first."""
        with self.archive.pool.connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")  # one snapshot
            row = conn.execute(
                "SELECT version FROM archive_tables WHERE table_id = %s", (table_id,)
            ).fetchone()
            entries = conn.execute(
                "SELECT entry FROM ledger_entries WHERE tenant = %s AND table_id = %s ORDER BY seq",
                (tenant, table_id),
            ).fetchall()
        return (row[0] if row else 0), [entry for (entry,) in entries]

    @reachable
    def net_losses(self, tenant: str, player_ids: Sequence[str], now_ms: int) -> dict[str, int]:
        """See `LedgerStore.net_losses`: summed over the archived entries of the 24 hours
        before `now_ms` (as far as the archive has followed the logs)."""
        if not player_ids:
            return {}
        since = datetime.fromtimestamp((now_ms - DAY_MS) / 1000, UTC)
        with self.archive.pool.connection() as conn:
            found = dict(
                conn.execute(
                    "SELECT player_id, -sum(amount) FROM ledger_entries WHERE tenant = %s"
                    " AND player_id = ANY(%s) AND at >= %s AND kind = ANY(%s)"
                    " GROUP BY player_id",
                    (tenant, list(player_ids), since, [*ledger.PAID_IN, *ledger.PAID_OUT]),
                ).fetchall()
            )
        return {player_id: int(found.get(player_id, 0)) for player_id in player_ids}
