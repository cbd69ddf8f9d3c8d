"""The casino wallet's calls apart from their storage: the settings a casino may give
(`check_settings`), one signed call and its verified answer (`call`), and how retries are
paced (`WalletSchedule`).

Every call is a JSON POST signed exactly as webhooks are (Standard Webhooks: ``webhook-id`` =
the call's `request_id`, ``webhook-timestamp``, ``webhook-signature`` = ``v1,`` + base64
HMAC-SHA256 of ``id.timestamp.body`` under the wallet's secret). The wallet signs its answer
the same way, with the same secret, over the answer's body and with the request's id in
``webhook-id`` (so an answer cannot be replayed for another call); its timestamp must be
within `TOLERANCE_S` of ours. An answer that is not 200, not signed so, not JSON of the
contract's shape, or not there within the timeout is an *unknown outcome* (`Answer.status`
None): never a confirmation.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import orjson

from service.projections.wallet_http import CONNECTIONS, FAILURES
from service.projections.webhook_messages import check_url, sign
from service.rules.errors import InvalidCommand

ANSWERS = ("ok", "insufficient_funds", "unknown_player")
"""What a wallet may answer (status); anything else is an unknown outcome."""
TOLERANCE_S = 300
"""How far the answer's timestamp may be from ours (the Standard Webhooks default)."""
CURRENCY_DIGITS = 3  # ISO 4217 codes: three capital letters


class BadWallet(InvalidCommand):
    """Wallet settings that cannot be accepted (422), naming the field."""


@dataclass(frozen=True)
class WalletSchedule:
    """How calls are paced (seconds)."""

    timeout_s: float = 5.0
    """No answer within this is an unknown outcome."""
    first_retry_s: float = 5.0
    """The wait after a failed attempt; it doubles after each, up to `max_wait_s`."""
    max_wait_s: float = 3600.0
    credit_for_s: float = 25 * 3600.0
    """How long after its first attempt a credit is retried before it is `failed` (>= 24 h)."""
    debit_grace_s: float = 30.0
    """How long a debit is its sender's to finish; then the wallet duty finishes it."""

    def wait_after(self, attempts: int) -> float:
        """The wait before attempt `attempts + 1`."""
        return float(min(self.first_retry_s * 2 ** max(attempts - 1, 0), self.max_wait_s))


@dataclass(frozen=True)
class Answer:
    """A wallet's verified answer: its `status` (one of `ANSWERS`; None: unknown outcome),
    the `balance` it reported, and why the outcome is unknown (`problem`)."""

    status: str | None
    balance: int | None = None
    problem: str = ""
    reached: bool = True
    """False when no HTTP answer came at all (refused, timed out, dropped, not HTTP)."""


def check_settings(url: str, currency: str, chip_value_minor: int, private_ok: bool) -> None:
    """Settings a wallet can be called with, or BadWallet naming the field (`private_ok`: as
    `check_url` takes it)."""
    try:
        check_url(url, private_ok)
    except InvalidCommand as error:
        raise BadWallet(str(error), "url") from error
    if len(currency) != CURRENCY_DIGITS or not currency.isascii() or not currency.isupper():
        raise BadWallet("currency must be an ISO 4217 code (three capital letters)", "currency")
    if chip_value_minor < 1:
        raise BadWallet("chip_value_minor must be a positive integer", "chip_value_minor")


def signed_headers(secret: str, msg_id: str, body: bytes, now: float) -> dict[str, str]:
    """The Standard Webhooks headers of a message (a call, or a wallet's answer)."""
    stamp = int(now)
    return {
        "content-type": "application/json",
        "webhook-id": msg_id,
        "webhook-timestamp": str(stamp),
        "webhook-signature": sign(secret, msg_id, stamp, body),
    }


def verify_signature(secret: str, msg_id: str, headers: Any, body: bytes, now: float) -> str | None:
    """Why a message is not signed by `secret` as `msg_id` (None: it is). `headers` is any
    mapping with a case-insensitive ``get``."""
    if headers.get("webhook-id") != msg_id:
        return "the answer's webhook-id is not the request's id"
    stamp = headers.get("webhook-timestamp") or ""
    if not stamp.isdigit() or abs(int(stamp) - now) > TOLERANCE_S:
        return "the answer's webhook-timestamp is missing or too far from now"
    expected = sign(secret, msg_id, int(stamp), body)
    offered = (headers.get("webhook-signature") or "").split()
    if not any(hmac.compare_digest(expected, each) for each in offered):
        return "the answer is not signed with the wallet's secret"
    return None


def new_request_id() -> str:
    """A new id for one attempt (the wallet de-duplicates by `transaction_id`, not by this)."""
    return "req_" + secrets.token_hex(12)


def call(
    url: str,
    path: str,
    secret: str,
    payload: dict[str, Any],
    timeout_s: float,
    sign_with: str | None = None,
    private_ok: bool = False,
) -> Answer:
    """POST `payload` (with a new `request_id`) to ``url/path``, signed; the verified answer.
    Never raises for what the wallet did: every failure is an unknown outcome, whose
    `problem` never holds the URL (its query may carry the casino's token). `sign_with`
    (`guts wallet-check` only) signs with another secret, or not at all (""). `private_ok`:
    the wallet may be at an address that is not public (`GUTS_ALLOW_PRIVATE_URLS`)."""
    return send(url, path, secret, payload, timeout_s, sign_with, private_ok)()


def send(
    url: str,
    path: str,
    secret: str,
    payload: dict[str, Any],
    timeout_s: float,
    sign_with: str | None = None,
    private_ok: bool = False,
) -> Callable[[], Answer]:
    """`call` in two steps: the call is sent now; the function returned waits for its verified
    answer (read once: the same answer each time it is called). The caller must call it: what
    it does before is done while the wallet answers."""
    request_id = new_request_id()
    body = orjson.dumps({"request_id": request_id, **payload})
    signer = secret if sign_with is None else sign_with
    headers = signed_headers(signer, request_id, body, time.time())
    if not signer:
        headers = {"content-type": "application/json", "webhook-id": request_id}
    try:
        posting = CONNECTIONS.send(endpoint(url, path), body, headers, timeout_s, private_ok)
    except FAILURES as failed:
        unreached = _unreached(failed)
        return lambda: unreached

    @cache
    def answer() -> Answer:
        try:
            status, answer_headers, answer_body = posting.answer()
        except FAILURES as failed:
            return _unreached(failed)
        if status != 200:  # (a redirect too: never followed)
            return Answer(None, problem=f"HTTP {status}")
        why = verify_signature(secret, request_id, answer_headers, answer_body, time.time())
        if why is not None:
            return Answer(None, problem=why)
        return parse_answer(answer_body)

    return answer


def _unreached(failed: Exception) -> Answer:
    return Answer(None, problem=type(failed).__name__, reached=False)


def endpoint(url: str, path: str) -> str:
    """The wallet's `url` with `path` (``debit``, ``credit``, ``rollback``) added to its path,
    its query (which may carry the casino's token) kept after it."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/" + path))


def parse_answer(body: bytes) -> Answer:
    """The answer of a verified body: `{"status", "balance"}` of the contract's shape, else
    an unknown outcome."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return Answer(None, problem="the answer is not JSON")
    if not isinstance(data, dict) or data.get("status") not in ANSWERS:
        return Answer(None, problem="the answer's status is not one of the contract's")
    balance = data.get("balance")
    if balance is not None and (not isinstance(balance, int) or isinstance(balance, bool)):
        return Answer(None, problem="the answer's balance is not an integer")
    return Answer(str(data["status"]), balance)
