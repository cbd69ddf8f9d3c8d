"""The money use cases: the ledger's pages and players' responsible-gaming limits, and what
the game's use cases ask of them (a player's loss-limit allowance, an exclusion's end).

The ledger is a projection of the tables' logs (`service.projections.ledger`), kept by the
dispatchers' follower within milliseconds; a page of one table, and every loss-limit decision,
first catches that table up itself, so it counts the table's latest movements.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, replace
from datetime import datetime
from typing import Any, NamedTuple

from service.rules.errors import InvalidCommand
from service.rules.limit_changes import (
    Profile,
    blocked_until,
    change_limits,
    effective,
    outbox_entry,
    profile,
)
from service.rules.limits import (
    Allowance,
    Limits,
    cooling_down_until,
    verify_cooled_down,
    verify_may_pay_in,
)
from service.rules.protection import SessionLimits
from service.rules.state import TableState
from service.rules.views import AUDITOR, OPERATOR
from service.tables import TableNotFound, TableQuarantined, Tables

from .access import ALL_TENANTS, DEFAULT_TENANT, Caller, hide_quarantined, require
from .errors import CorruptRecord, Forbidden, LedgerUnavailable
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
    apply_protection: Callable[[str, str, dict[str, Any]], int]  # (ProtectionUses')

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

    def _profile(self, tenant: str) -> Profile:
        return profile(self._ledger().profile(tenant))

    def _limits_of(self, tenant: str, player_ids: Sequence[str]) -> dict[str, Limits]:
        """Each player's limits in effect now: their own, else the tenant profile's defaults."""
        if self.ledger is None:
            return {}
        return self._limits_and_profile(tenant, player_ids)[0]

    def _limits_and_profile(
        self, tenant: str, player_ids: Sequence[str]
    ) -> tuple[dict[str, Limits], Profile]:
        """`_limits_of` and the tenant's profile, read together (one round trip)."""
        now = self.tables.now()
        stored, chosen = self._ledger().limits(tenant, list(player_ids))
        found = profile(chosen)
        limits = {pid: effective(stored.get(pid, found.defaults), now) for pid in player_ids}
        return limits, found

    def player_limits(self, caller: Caller, player_id: str, tenant: str | None = None) -> Outcome:
        """A player's limits in the tenant as in effect now (with the changes that wait out
        their 24 h in `pending`), their current 24 h net loss, the end of the cool-down a
        session limit started (while it runs) and the tenant's profile (operators and
        auditors; a regulator names the tenant)."""
        require(caller, OPERATOR, AUDITOR)
        store = self._ledger()
        tenant = ledger_tenant(caller, tenant)
        now = self.tables.now()
        stored, named, cool_down = store.seating(tenant, player_id)
        chosen = profile(named)
        found = effective(stored or chosen.defaults, now)
        loss = store.net_loss(tenant, player_id, _ms(now))
        body = {"player_id": player_id, **asdict(found), "net_loss_24h": loss}
        body["cool_down_until"] = cooling_down_until(cool_down, now)
        return Outcome("found", {**body, "profile": chosen.name})

    def set_player_limits(
        self, caller: Caller, player_id: str, asked: Mapping[str, Any]
    ) -> Outcome:
        """Change a player's limits in the operator's tenant (`asked`: field -> value): a
        stricter value at once, a looser one 24 h later. A time-out or exclusion that starts
        now ends the player's sessions at the tenant's tables, a lowered reality check or
        session limit applies there at once: recorded with the limits (an outbox entry) and
        applied now (`apply_protection`), or by a dispatcher if this process dies first.
        Limits stored unreadable are replaced (the operator's repair: `asked` is taken as if
        none were stored); an unreadable profile is refused, and set again on its own."""
        require(caller, OPERATOR)
        store = self._ledger()
        tenant = caller.tenant or DEFAULT_TENANT
        now = self.tables.now()
        try:
            found, chosen = self._limits_and_profile(tenant, [player_id])
            before = found[player_id]
        except CorruptRecord as unreadable:
            if unreadable.player_id != player_id:
                raise  # (the tenant's profile: PUT /v1/protection/profile sets it again)
            # Unreadable, they are replaced: `asked` taken as if none were stored before.
            chosen = self._profile(tenant)
            before = effective(chosen.defaults, now)
        after = change_limits(before, asked, now, chosen)
        entry = outbox_entry(before, after, now)
        store.set_limits(tenant, player_id, after, entry)
        if entry is not None:
            self.apply_protection(tenant, player_id, entry)
        return replace(self.player_limits(caller, player_id), effect="changed")

    def protection_profile(self, caller: Caller, tenant: str | None = None) -> Outcome:
        """The tenant's player-protection profile and the defaults it gives its players."""
        require(caller, OPERATOR, AUDITOR)
        tenant = ledger_tenant(caller, tenant)
        return Outcome("found", _profile_body(tenant, self._profile(tenant)))

    def set_protection_profile(self, caller: Caller, name: str) -> Outcome:
        """Set the operator's tenant's profile (`default`, `ukgc`, `agco`)."""
        require(caller, OPERATOR)
        chosen = profile(name)
        tenant = caller.tenant or DEFAULT_TENANT
        self._ledger().set_profile(tenant, chosen.name)
        return Outcome("changed", _profile_body(tenant, chosen))

    # --- what the game's use cases ask --------------------------------------------------------

    def allowances(self, state: TableState, player_ids: Iterable[str]) -> dict[str, Allowance]:
        """The loss-limit allowance of each of `player_ids` who has a limit in the table's
        tenant, their net loss counting this table's latest movements."""
        if self.ledger is None:
            return {}
        wanted = list(dict.fromkeys(player_ids))
        limited = {
            pid: limits.loss_limit_24h
            for pid, limits in self._limits_of(state.tenant, wanted).items()
            if limits.loss_limit_24h is not None
        }
        return self._allowances(state, limited)

    def _allowances(self, state: TableState, limited: Mapping[str, int]) -> dict[str, Allowance]:
        """The allowance of each player with a loss limit (`limited`: player id -> limit)."""
        if not limited or self.ledger is None:
            return {}
        self.catch_up(state.table_id, state.version)
        losses = self.ledger.net_losses(state.tenant, list(limited), _ms(self.tables.now()))
        return {pid: Allowance(limit, losses[pid]) for pid, limit in limited.items()}

    def seating(self, tenant: str, player_id: str, also: Any = None) -> Seating:
        """What a seat of `player_id` at a table of `tenant` asks of their protections, in
        one round trip (carrying `also`, another store's step: see `LedgerBook.seating`)."""
        if self.ledger is None:
            return Seating(Limits(), None)
        stored, chosen, cool_down = self.ledger.seating(tenant, player_id, also)
        return Seating(effective(stored or profile(chosen).defaults, self.tables.now()), cool_down)

    def seating_limits(
        self,
        state: TableState,
        player_id: str,
        *,
        paid_in: bool = False,
        seating: Seating | None = None,
    ) -> tuple[str | None, SessionLimits]:
        """When `player_id`'s exclusion or time-out in the table's tenant ends (None: neither
        runs), and the limits their session there runs under; `CoolingDown` while a session
        limit they reached keeps them from every seat of the tenant (`COOL_DOWN`). `paid_in`:
        the seat is paid by a debit of the wallet, refused (`LossLimitReached`) while their
        loss limit is reached (`verify_may_pay_in`). `seating`: their protections as read
        for this request (else read now)."""
        limits, cool_down = seating or self.seating(state.tenant, player_id)
        session = SessionLimits(limits.reality_check_minutes, limits.session_limit_minutes)
        now = self.tables.now()
        verify_cooled_down(player_id, cool_down, now)  # (a session limit reached: a 409)
        if paid_in:
            self.verify_pay_in(state, player_id, limits)
        return blocked_until(limits, now), session

    def verify_pay_in(self, state: TableState, player_id: str, limits: Limits) -> None:
        """`LossLimitReached` while `player_id`'s 24 h loss limit (of their `limits`) is
        reached: no debit of the wallet pays them in (`verify_may_pay_in`)."""
        if limits.loss_limit_24h is not None:
            allowance = self._allowances(state, {player_id: limits.loss_limit_24h})
            verify_may_pay_in(player_id, allowance.get(player_id))


class Seating(NamedTuple):
    """What a seat of a player asks of their protections: their limits in effect now, and
    the end of the cool-down a session limit they reached started (None: none)."""

    limits: Limits
    cool_down: str | None


def _profile_body(tenant: str, chosen: Profile) -> dict[str, Any]:
    defaults = asdict(chosen.defaults)
    defaults.pop("pending")
    return {"tenant": tenant, "profile": chosen.name, "defaults": defaults}


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)
