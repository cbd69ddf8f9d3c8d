"""Who is calling: operator and auditor keys, and player tokens (what each may do is the
application's business: `service.application.access`).

A player token names one seat of one table and the table version at which that player sat
down, signed with HMAC-SHA256 under the service's token secret:
`<base64url(table_id:seat:joined)>.<base64url(mac)>`. It is unguessable without the secret,
checked in constant time, and dies when the player leaves (a new player in the same seat
sits down at another version). Keys and tokens are never logged.

A stream ticket (for browsers' EventSource, which cannot send headers) carries the rights of
the credential that asked for it, for one table's stream, until it expires (60 s):
`<base64url(table_id:role:tenant:seat:joined:expires)>.<base64url(mac)>`, its MAC taken over the
claim behind a `stream-ticket` label, so a ticket is never a valid bearer credential nor a
token a valid ticket. Tickets are accepted only as `?ticket=` on the stream; no long-lived
credential is accepted in a URL.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from collections.abc import Callable

from service.application.access import ALL_TENANTS, DEFAULT_TENANT, Caller
from service.application.errors import Forbidden
from service.rules.views import AUDITOR, OPERATOR, PLAYER

from .refusal import ApiError


class Unauthorized(ApiError):
    """No credential, or one that is not valid: 401."""

    status, title = 401, "Unauthorized"


TENANT_NAME = re.compile(r"[a-z0-9-]{1,32}")
"""What a tenant may be called."""


def tenant_key(entry: str, *, regulator: bool = False) -> tuple[str, bytes]:
    """The tenant and key of one entry of `GUTS_OPERATOR_KEYS` / `GUTS_AUDITOR_KEYS`:
    `tenant:key`, or a bare `key` of the tenant `default`; with `regulator`, `*:key` is an
    auditor of every tenant. An entry whose part before the first `:` is not a tenant name is
    a bare key (so keys that contain a colon keep working)."""
    tenant, colon, key = entry.partition(":")
    if colon and key and (TENANT_NAME.fullmatch(tenant) or (regulator and tenant == "*")):
        return (ALL_TENANTS if tenant == "*" else tenant), key.encode()
    return DEFAULT_TENANT, entry.encode()


_TICKET = b"stream-ticket\0"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Authenticator:
    """Checks bearer credentials against the configured keys and the token secret."""

    def __init__(
        self,
        operator_keys: tuple[str, ...],
        auditor_keys: tuple[str, ...],
        secret: bytes | Callable[[], bytes],
    ):
        """`secret` signs the player tokens: the bytes, or where to get them when first needed
        (so that a process starts while the store that keeps the secret is away)."""
        self._operators = [tenant_key(k) for k in operator_keys]
        self._auditors = [tenant_key(k, regulator=True) for k in auditor_keys]
        self._secret = secret
        self._keyed: hmac.HMAC | None = None
        self._players: dict[bytes, Caller] = {}

    PLAYERS_KEPT = 10_000
    """Player tokens found valid, remembered per process (the oldest forgotten first): a token
    names the same caller for as long as the secret stays (whether that player still sits
    there is the application's check, on the table's state), so a table's next command with it
    skips the decoding and the MAC (each request of a hand sends one)."""

    def issue(self, table_id: str, seat: int, joined: int) -> str:
        """The token for the player who sat at `seat` at table version `joined`."""
        claim = f"{table_id}:{seat}:{joined}".encode()
        return f"{_b64(claim)}.{_b64(self._mac(claim))}"

    def issue_ticket(self, caller: Caller, table_id: str, expires: int) -> str:
        """A ticket for `table_id`'s stream with `caller`'s rights, valid until the epoch
        second `expires`."""
        seat = "-" if caller.seat is None else str(caller.seat)
        joined = "-" if caller.joined is None else str(caller.joined)
        tenant = caller.tenant or "-"
        claim = f"{table_id}:{caller.role}:{tenant}:{seat}:{joined}:{expires}".encode()
        return f"{_b64(claim)}.{_b64(self._mac(_TICKET + claim))}"

    def ticket_caller(self, ticket: str, table_id: str, now: float) -> Caller:
        """The caller a stream ticket stands for: Unauthorized when it is not one of ours or
        has expired, Forbidden when it is for another table."""
        try:
            claim_b64, mac_b64 = ticket.split(".")
            claim, mac = _unb64(claim_b64), _unb64(mac_b64)
        except (ValueError, UnicodeDecodeError):
            raise Unauthorized("the stream ticket is not valid") from None
        if not hmac.compare_digest(mac, self._mac(_TICKET + claim)):
            raise Unauthorized("the stream ticket is not valid")
        for_table, role, tenant, seat, joined, expires = claim.decode().rsplit(":", 5)
        if now >= int(expires):
            raise Unauthorized("the stream ticket has expired: ask for another")
        if for_table != table_id:
            raise Forbidden("the stream ticket is for another table")
        if role != PLAYER:
            return Caller(role, tenant=tenant)
        return Caller(PLAYER, table_id=for_table, seat=int(seat), joined=int(joined))

    def _mac(self, claim: bytes) -> bytes:
        if self._keyed is None:
            secret = self._secret if isinstance(self._secret, bytes) else self._secret()
            # Keyed once; each token's MAC starts from a copy (no key setup, no digest lookup).
            self._keyed = hmac.new(secret, digestmod=hashlib.sha256)
        mac = self._keyed.copy()
        mac.update(claim)
        return mac.digest()

    def authenticate(self, header: str | None) -> Caller:
        """The caller named by an `Authorization: Bearer ...` header, or Unauthorized."""
        scheme, _, value = (header or "").partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise Unauthorized("an Authorization: Bearer credential is required")
        credential = value.strip().encode()
        # Compare against every key so the time taken does not tell which one matched.
        operator = [t for t, k in self._operators if hmac.compare_digest(credential, k)]
        auditor = [t for t, k in self._auditors if hmac.compare_digest(credential, k)]
        if operator:
            return Caller(OPERATOR, tenant=operator[0])
        if auditor:
            return Caller(AUDITOR, tenant=auditor[0])
        return self._player(credential)

    def _player(self, credential: bytes) -> Caller:
        known = self._players.get(credential)
        if known is None:
            known = self._players[credential] = self._verified_player(credential)
            if len(self._players) > self.PLAYERS_KEPT:
                self._players.pop(next(iter(self._players)), None)
        return known

    def _verified_player(self, credential: bytes) -> Caller:
        try:
            claim_b64, mac_b64 = credential.decode("ascii").split(".")
            claim, mac = _unb64(claim_b64), _unb64(mac_b64)
        except (ValueError, UnicodeDecodeError):
            raise Unauthorized("the credential is not valid") from None
        if not hmac.compare_digest(mac, self._mac(claim)):
            raise Unauthorized("the credential is not valid")
        table_id, seat, joined = claim.decode().rsplit(":", 2)
        return Caller(PLAYER, table_id=table_id, seat=int(seat), joined=int(joined))
