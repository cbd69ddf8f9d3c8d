"""Webhooks apart from their storage: what a casino may register (`check_url`, `check_events`,
`new_secret`), what a log event sends (`webhook_events`), how a message is signed (`sign`, as
the Standard Webhooks specification says) and how attempts are paced (`Schedule`).

The deliveries, their keys and their attempts are `service.projections.webhooks`' business.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import urlsplit

import orjson

from service.eventlog.store import CorruptRecord
from service.rules import events as ev
from service.rules.errors import InvalidCommand
from service.rules.serial import to_data

EVENT_NAMES = (
    "hand_finished",
    "hand_voided",
    "player_seated",
    "chips_added",
    "player_cashed_out",
    "table_ended",
)
"""What a webhook may subscribe to (see `webhook_events` for what each is)."""


@dataclass(frozen=True)
class Schedule:
    """How attempts are paced (seconds)."""

    first_retry_s: float = 5.0
    """The wait after the first failed attempt; it doubles after each, up to `max_wait_s`."""
    max_wait_s: float = 3600.0
    retry_for_s: float = 25 * 3600.0
    """How long after its first attempt a delivery is tried again before it is `dead`."""
    timeout_s: float = 10.0
    """Connect and read timeout of one attempt."""

    def wait_after(self, attempts: int) -> float:
        """The wait before attempt `attempts + 1`."""
        return float(min(self.first_retry_s * 2 ** (attempts - 1), self.max_wait_s))


class BadWebhook(InvalidCommand):
    """A registration that cannot be accepted (422), naming the field."""


def check_url(url: str, private_ok: bool) -> str:
    """An absolute http(s) URL without credentials in it, or BadWebhook: one that every call
    can be sent to (no space or control character, a port from 1 to 65535); unless
    `private_ok`, not naming a host that is plainly not public (an address that is not, or
    ``localhost``: a name is checked where each call's connection lands, as it may change)."""
    plain = "url must be an absolute http:// or https:// URL"
    if any(c <= " " or c == "\x7f" for c in url):
        raise BadWebhook(f"{plain}, without spaces or control characters", "url")
    try:
        parts = urlsplit(url)
        port = parts.port  # (ValueError: not a number from 0 to 65535)
    except ValueError:
        raise BadWebhook(plain, "url") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or port == 0:
        raise BadWebhook(plain, "url")
    if parts.username is not None or parts.password is not None:
        raise BadWebhook("url must not hold credentials (sign with the secret instead)", "url")
    if not private_ok and _plainly_private(parts.hostname):
        raise BadWebhook(
            "url must name a public host: this service calls no loopback, private or "
            "link-local address (GUTS_ALLOW_PRIVATE_URLS allows it)",
            "url",
        )
    return url


def public(address: str) -> bool:
    """Whether `address` (an IP address; an IPv6 one maybe with its zone) is a public one:
    not loopback, private, link-local, shared, reserved or unspecified."""
    ip = ipaddress.ip_address(address.partition("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global


def _plainly_private(host: str) -> bool:
    """Whether `host` (a URL's) is an address that is not public, or ``localhost``."""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return not public(host)
    except ValueError:  # (a name)
        return False


def check_events(names: Sequence[str]) -> list[str]:
    """The subscribed event names, each known, or BadWebhook."""
    unknown = [n for n in names if n not in EVENT_NAMES]
    if unknown or not names:
        raise BadWebhook(f"events must be some of: {', '.join(EVENT_NAMES)}", "events")
    return list(dict.fromkeys(names))


def new_secret() -> str:
    """A signing secret as the specification writes one: ``whsec_`` + base64 of 32 bytes."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` header: ``v1,`` + base64 HMAC-SHA256 of ``id.timestamp.body``
    under the secret's bytes."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{msg_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def webhook_events(event: ev.Event) -> list[tuple[str, dict[str, Any]]]:
    """The webhook events (name, data) a log event makes: `hand_finished` (a resolution, its
    outcome), `hand_voided`, `player_seated`, `chips_added`, `player_cashed_out` (a player
    left, or was paid out when the table ended: seat, player, chips) and `table_ended`. None
    of them holds a secret (the hands shown at a showdown are public then)."""
    if isinstance(event, ev.HandResolved):
        return [("hand_finished", to_data(event))]
    if isinstance(event, ev.HandVoided):
        return [("hand_voided", to_data(event))]
    if isinstance(event, ev.PlayerSeated):
        return [("player_seated", to_data(event))]
    if isinstance(event, ev.ChipsAdded):
        return [("chips_added", to_data(event))]
    if isinstance(event, ev.PlayerLeft):
        return [("player_cashed_out", {"seat": event.seat, "cash_out": event.cash_out})]
    if isinstance(event, ev.TableEnded):
        paid = [
            ("player_cashed_out", {"seat": s, "player_id": event.players.get(s), "cash_out": a})
            for s, a in event.cash_outs.items()
        ]
        return [*paid, ("table_ended", to_data(event))]
    return []


_HOOK_TEXTS = ("webhook_id", "url", "secret", "created_at")


def hook_of(webhook_id: str, raw: bytes) -> dict[str, Any]:
    """A webhook's record as stored; CorruptRecord naming it (and its repair: delete it, make
    it again) when it cannot be read. Until then its tenant's deliveries wait, none lost."""
    try:
        hook = orjson.loads(raw)
    except orjson.JSONDecodeError:
        hook = None
    texts = isinstance(hook, dict) and all(isinstance(hook.get(k), str) for k in _HOOK_TEXTS)
    events = hook.get("events") if texts else None
    if not (isinstance(events, list) and all(isinstance(e, str) for e in events)):
        raise CorruptRecord(
            f"webhook {webhook_id!r} cannot be read; an operator must delete it (DELETE "
            f"/v1/webhooks/{webhook_id}) and make it again"
        )
    return cast(dict[str, Any], hook)
