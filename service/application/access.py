"""Who may do what: the caller of a use case, and the checks on it.

These are pure: they look at the caller and, where it matters, the table's state. Proving
who the caller is (keys, signed player tokens) is the edge's business (`service.api.auth`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NoReturn

from service.rules.state import LEFT, TableState
from service.rules.views import AUDITOR, OPERATOR, PLAYER, Viewer
from service.tables import TableNotFound, TableQuarantined

from .errors import Forbidden

DEFAULT_TENANT = "default"
"""The tenant of a bare key (no `tenant:` in front), and of every table made before tenants."""
ALL_TENANTS = "*"
"""The tenant of a regulator: an auditor of every tenant."""


@dataclass(frozen=True)
class Caller:
    """An authenticated caller. Operators and auditors carry their `tenant` (`ALL_TENANTS`
    for a regulator); players carry the table and seat their token is for, and the table
    version at which they sat down there (their tenant is their table's)."""

    role: str
    table_id: str | None = None
    seat: int | None = None
    joined: int | None = None
    tenant: str | None = None

    def viewer(self) -> Viewer:
        """The rules' notion of this caller, for redaction."""
        return Viewer(self.role, self.seat, self.joined or 0)


def tenant_scope(caller: Caller) -> str | None:
    """The tenant whose tables, hands and reports an operator or auditor reads (None: every
    tenant's, a regulator's)."""
    return None if caller.tenant == ALL_TENANTS else (caller.tenant or DEFAULT_TENANT)


def require_tenant(caller: Caller, state: TableState) -> None:
    """An operator or auditor of another tenant learns nothing of the table: it is not found,
    exactly as a table that does not exist (a regulator sees every tenant's; a player's token
    is checked against its own table by the other checks)."""
    require_tenant_of(caller, state.table_id, state.tenant)


def require_tenant_of(caller: Caller, table_id: str, tenant: str) -> None:
    """`require_tenant` for a table known by its id and tenant only."""
    own = caller.tenant
    if own is not None and own != ALL_TENANTS and own != tenant:
        raise TableNotFound(f"no table {table_id!r}")


def hide_quarantined(caller: Caller, error: TableQuarantined) -> NoReturn:
    """Raise `error` for a caller who may know the table; for an operator or auditor of
    another tenant, the table is not found, as a table that does not exist (when its first
    event no longer says whose it is, nobody's tenant can be told apart: `error` for all)."""
    if error.tenant is not None:
        require_tenant_of(caller, error.table_id, error.tenant)
    raise error


def require(caller: Caller, *roles: str) -> None:
    """Forbidden unless the caller has one of `roles`."""
    if caller.role not in roles:
        raise Forbidden(f"this needs the {' or '.join(roles)} role")


def require_player_of(caller: Caller, state: TableState, seat: int | None = None) -> int:
    """The caller's seat, when they are the current player there (of this table)."""
    if caller.role != PLAYER or caller.table_id != state.table_id:
        raise Forbidden("this needs the token of a player at this table")
    holder = state.seats.get(caller.seat) if caller.seat is not None else None
    if holder is None or holder.status == LEFT or holder.joined != caller.joined:
        raise Forbidden("this player token is no longer seated at this table")
    if seat is not None and seat != caller.seat:
        raise Forbidden("a player token acts only for its own seat")
    assert caller.seat is not None
    return caller.seat


def require_operator_or_player_of(caller: Caller, state: TableState, seat: int) -> None:
    """The operator, or the player currently at `seat`; auditors are read-only."""
    if caller.role == OPERATOR:
        return
    if caller.role == AUDITOR:
        raise Forbidden("auditors are read-only")
    require_player_of(caller, state, seat)


def may_view(caller: Caller, state: TableState) -> Viewer:
    """The viewer this caller is at this table; players of other tables are refused, and
    another tenant's operators and auditors do not find it."""
    if caller.role in (OPERATOR, AUDITOR):
        require_tenant(caller, state)
        return caller.viewer()
    if caller.table_id != state.table_id:
        raise Forbidden("this player token is for another table")
    holder = state.seats.get(caller.seat) if caller.seat is not None else None
    if holder is None or holder.status == LEFT or holder.joined != caller.joined:
        raise Forbidden("this player token is no longer seated at this table (the player left)")
    return caller.viewer()
