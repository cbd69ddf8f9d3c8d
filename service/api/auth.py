"""Who is calling: operator and auditor keys, and player tokens.

A player token names one seat of one table and the table version at which that player sat
down, signed with HMAC-SHA256 under the service's token secret:
`<base64url(table_id:seat:joined)>.<base64url(mac)>`. It is unguessable without the secret,
checked in constant time, and dies when the player leaves (a new player in the same seat
sits down at another version). Keys and tokens are never logged.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass

from service.rules.state import LEFT, TableState
from service.rules.views import AUDITOR, OPERATOR, PLAYER, Viewer


class Unauthorized(Exception):
    """No credential, or one that is not valid: 401."""


class Forbidden(Exception):
    """A valid credential that may not do this: 403."""


@dataclass(frozen=True)
class Principal:
    """An authenticated caller. Players carry the table and seat their token is for."""

    role: str
    table_id: str | None = None
    seat: int | None = None
    joined: int | None = None

    def viewer(self) -> Viewer:
        """The rules' notion of this caller, for redaction."""
        return Viewer(self.role, self.seat, self.joined or 0)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Authenticator:
    """Checks bearer credentials against the configured keys and the token secret."""

    def __init__(
        self, operator_keys: tuple[str, ...], auditor_keys: tuple[str, ...], secret: bytes
    ):
        self._operators = [k.encode() for k in operator_keys]
        self._auditors = [k.encode() for k in auditor_keys]
        # Keyed once; each token's MAC starts from a copy (no key setup, no digest lookup).
        self._keyed = hmac.new(secret, digestmod=hashlib.sha256)

    def issue(self, table_id: str, seat: int, joined: int) -> str:
        """The token for the player who sat at `seat` at table version `joined`."""
        claim = f"{table_id}:{seat}:{joined}".encode()
        return f"{_b64(claim)}.{_b64(self._mac(claim))}"

    def _mac(self, claim: bytes) -> bytes:
        mac = self._keyed.copy()
        mac.update(claim)
        return mac.digest()

    def authenticate(self, header: str | None) -> Principal:
        """The caller named by an `Authorization: Bearer ...` header, or Unauthorized."""
        scheme, _, value = (header or "").partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise Unauthorized("an Authorization: Bearer credential is required")
        credential = value.strip().encode()
        # Compare against every key so the time taken does not tell which list matched.
        is_operator = any([hmac.compare_digest(credential, k) for k in self._operators])
        is_auditor = any([hmac.compare_digest(credential, k) for k in self._auditors])
        if is_operator:
            return Principal(OPERATOR)
        if is_auditor:
            return Principal(AUDITOR)
        return self._player(credential)

    def _player(self, credential: bytes) -> Principal:
        try:
            claim_b64, mac_b64 = credential.decode("ascii").split(".")
            claim, mac = _unb64(claim_b64), _unb64(mac_b64)
        except (ValueError, UnicodeDecodeError):
            raise Unauthorized("the credential is not valid") from None
        if not hmac.compare_digest(mac, self._mac(claim)):
            raise Unauthorized("the credential is not valid")
        table_id, seat, joined = claim.decode().rsplit(":", 2)
        return Principal(PLAYER, table_id=table_id, seat=int(seat), joined=int(joined))


def require(principal: Principal, *roles: str) -> None:
    """Forbidden unless the caller has one of `roles`."""
    if principal.role not in roles:
        raise Forbidden(f"this needs the {' or '.join(roles)} role")


def require_player_of(principal: Principal, state: TableState, seat: int | None = None) -> int:
    """The caller's seat, when they are the current player there (of this table)."""
    if principal.role != PLAYER or principal.table_id != state.table_id:
        raise Forbidden("this needs the token of a player at this table")
    holder = state.seats.get(principal.seat) if principal.seat is not None else None
    if holder is None or holder.status == LEFT or holder.joined != principal.joined:
        raise Forbidden("this player token is no longer seated at this table")
    if seat is not None and seat != principal.seat:
        raise Forbidden("a player token acts only for its own seat")
    assert principal.seat is not None
    return principal.seat


def may_view(principal: Principal, state: TableState) -> Viewer:
    """The viewer this caller is at this table; players of other tables are refused."""
    if principal.role in (OPERATOR, AUDITOR):
        return principal.viewer()
    if principal.table_id != state.table_id:
        raise Forbidden("this player token is for another table")
    holder = state.seats.get(principal.seat) if principal.seat is not None else None
    if holder is None or holder.joined != principal.joined:
        raise Forbidden("this player token is no longer seated at this table")
    return principal.viewer()
