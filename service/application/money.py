"""The money use cases: the ledger's pages and players' responsible-gaming limits, and what
the game's use cases ask of them (a player's loss-limit allowance, an exclusion's end).

The ledger is a projection of the tables' logs (`service.projections.ledger`), kept by the
dispatchers' follower within milliseconds; a page of one table, and every loss-limit decision,
first catches that table up itself, so it counts the table's latest movements.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, replace
from datetime import datetime

from service.rules.errors import InvalidCommand
from service.rules.limits import Allowance, Limits
from service.rules.state import TableState
from service.rules.views import AUDITOR, OPERATOR
from service.tables import TableNotFound, TableQuarantined, Tables

from .access import ALL_TENANTS, DEFAULT_TENANT, Caller, hide_quarantined, require
from .errors import Forbidden, LedgerUnavailable
from .ports import Catcher, LedgerBook
from .values import Outcome, checked_table_id


def ledger_tenant(caller: Caller, asked: str | None) -> str:
    """The tenant whose ledger the caller reads: their own; a regulator's must be named
    (`asked`), and nobody else may name another."""
    own = caller.tenant or DEFAULT_TENANT
    if own == ALL_TENANTS:
        if asked is None:
            raise InvalidCommand("a regulator must name the tenant (tenant=)", "tenant")
        return asked
    if asked is not None and asked != own:
        raise Forbidden("only a regulator may name another tenant")
    return own


class MoneyUses:
    """The money use cases (mixed into `TableService`, which provides these attributes)."""

    tables: Tables
    ledger: LedgerBook | None
    follower: Catcher | None

    def _ledger(self) -> LedgerBook:
        if self.ledger is None:
            raise LedgerUnavailable("the ledger cannot be read here; retry")
        return self.ledger

    def catch_up(self, table_id: str, upto: int | None = None) -> None:
        """Bring the projections of `table_id` up to its log (to `upto`, the version the
        caller knows it has, when given: that saves a look at the log), when this service
        follows."""
        if self.follower is not None:  # a log it cannot project is logged, not a 500:
            self.follower.safely_catch_up(table_id, upto)  # its table is quarantined anyway

    # --- the ledger ---------------------------------------------------------------------------

    def ledger_page(
        self,
        caller: Caller,
        after: str | None,
        limit: int,
        *,
        table_id: str | None = None,
        player_id: str | None = None,
        tenant: str | None = None,
    ) -> Outcome:
        """A page of the tenant's ledger, oldest first (operators and auditors of the tenant;
        a regulator names the tenant). With `table_id`, that table's entries, caught up to
        its log first; another tenant's table is not found."""
        require(caller, OPERATOR, AUDITOR)
        store = self._ledger()
        tenant = ledger_tenant(caller, tenant)
        if table_id is not None:
            try:
                state = self.tables.load(checked_table_id(table_id))
            except TableQuarantined as error:
                hide_quarantined(caller, error)
            if state.tenant != tenant:
                raise TableNotFound(f"no table {table_id!r}")
            self.catch_up(table_id)
        entries, cursor = store.page(tenant, after, limit, table_id=table_id, player_id=player_id)
        return Outcome("found", {"entries": entries, "next_after": cursor})

    # --- limits -------------------------------------------------------------------------------

    def player_limits(self, caller: Caller, player_id: str, tenant: str | None = None) -> Outcome:
        """A player's limits in the tenant, with their current 24 h net loss (operators and
        auditors; a regulator names the tenant)."""
        require(caller, OPERATOR, AUDITOR)
        store = self._ledger()
        tenant = ledger_tenant(caller, tenant)
        limits = store.limits(tenant, [player_id]).get(player_id, Limits())
        loss = store.net_loss(tenant, player_id, _ms(self.tables.now()))
        return Outcome("found", {"player_id": player_id, **asdict(limits), "net_loss_24h": loss})

    def set_player_limits(
        self,
        caller: Caller,
        player_id: str,
        loss_limit_24h: int | None,
        excluded_until: str | None,
    ) -> Outcome:
        """Set a player's limits in the operator's tenant (replacing any before)."""
        require(caller, OPERATOR)
        store = self._ledger()
        tenant = caller.tenant or DEFAULT_TENANT
        store.set_limits(tenant, player_id, Limits(loss_limit_24h, excluded_until))
        return replace(self.player_limits(caller, player_id), effect="changed")

    # --- what the game's use cases ask --------------------------------------------------------

    def allowances(self, state: TableState, player_ids: Iterable[str]) -> dict[str, Allowance]:
        """The loss-limit allowance of each of `player_ids` who has a limit in the table's
        tenant, their net loss counting this table's latest movements."""
        if self.ledger is None:
            return {}
        wanted = list(dict.fromkeys(player_ids))
        limited = {
            pid: limits.loss_limit_24h
            for pid, limits in self.ledger.limits(state.tenant, wanted).items()
            if limits.loss_limit_24h is not None
        }
        if not limited:
            return {}
        self.catch_up(state.table_id, state.version)
        losses = self.ledger.net_losses(state.tenant, list(limited), _ms(self.tables.now()))
        return {pid: Allowance(limit, losses[pid]) for pid, limit in limited.items()}

    def excluded_until(self, state: TableState, player_id: str) -> str | None:
        """When `player_id`'s exclusion in the table's tenant ends (None: not excluded)."""
        if self.ledger is None:
            return None
        limits = self.ledger.limits(state.tenant, [player_id]).get(player_id)
        return limits.excluded_until if limits is not None else None


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)
