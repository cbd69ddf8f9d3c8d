"""`guts wallet-check`: try a casino's wallet against every rule of the contract
(docs/wallet.md) with a test player, and say for each rule whether it holds.

The calls are the ones guts makes (`service.projections.wallet_messages.call`), under
transaction ids of their own (``check-<random>-...``); what they take from the test player is
given back (rolled back, or credited then debited), so the player's balance ends where it
began when the wallet keeps the contract.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import secrets
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from service.projections.wallet_messages import Answer, BadWallet, call, check_settings
from service.projections.webhook_messages import new_secret
from service.rules.wallet import MAX_DEBIT


@dataclass(frozen=True)
class Verdict:
    """One rule, and whether the wallet keeps it (`detail` says what was seen)."""

    rule: str
    passed: bool
    detail: str

    def line(self) -> str:
        return f"{'PASS' if self.passed else 'FAIL'}  {self.rule}: {self.detail}"


class _Probe:
    """The calls of one check: a player, a currency, an amount, fresh transaction ids."""

    def __init__(self, url: str, secret: str, player: str, amount: int, currency: str) -> None:
        self.url, self.secret, self.player = url, secret, player
        self.amount, self.currency = amount, currency
        self.run = secrets.token_hex(4)
        self.timeout_s = 5.0

    def txid(self, name: str) -> str:
        return f"check-{self.run}-{name}"

    def send(
        self,
        path: str,
        txid: str,
        amount: int | None = None,
        player: str | None = None,
        sign_with: str | None = None,
    ) -> Answer:
        payload: dict[str, Any] = {
            "transaction_id": txid,
            "player_id": player or self.player,
            "amount": self.amount if amount is None else amount,
            "currency": self.currency,
        }
        if path != "rollback":
            reason = {"debit": "buy_in", "credit": "cash_out"}[path]
            payload.update(table_id="guts-wallet-check", reason=reason)
        # (the operator's own check of a wallet they name: it may be on their own network)
        return call(self.url, path, self.secret, payload, self.timeout_s, sign_with, True)


def _said(answer: Answer) -> str:
    if answer.status is None:
        return f"no confirmation ({answer.problem})"
    return f"{answer.status}, balance {answer.balance}"


def _signed(probe: _Probe) -> Iterator[Verdict]:
    first = probe.send("debit", probe.txid("a"))
    yield Verdict("answers are signed with the secret", first.status == "ok", _said(first))
    again = probe.send("debit", probe.txid("a"))
    same = first.status == "ok" and again == first
    detail = f"first {_said(first)}; repeated {_said(again)}"
    yield Verdict("a repeated debit is the same transaction", same, detail)
    back = probe.send("rollback", probe.txid("a"))
    returned = (
        back.status == "ok" and first.balance is not None and back.balance is not None
        and back.balance == first.balance + probe.amount
    )  # fmt: skip
    yield Verdict("a rollback gives the debit back", returned, _said(back))
    twice = probe.send("rollback", probe.txid("a"))
    yield Verdict("a repeated rollback is the same transaction", twice == back, _said(twice))


def _unknown_rollback(probe: _Probe) -> Iterator[Verdict]:
    never = probe.txid("never")
    back = probe.send("rollback", never)
    yield Verdict("a rollback of a debit never seen is 200", back.status == "ok", _said(back))
    late = probe.send("debit", never)
    taken = late.status == "ok" and back.balance is not None and late.balance != back.balance
    yield Verdict("a debit after its rollback takes nothing", not taken, _said(late))


def _credit(probe: _Probe) -> Iterator[Verdict]:
    first = probe.send("credit", probe.txid("c"))
    again = probe.send("credit", probe.txid("c"))
    same = first.status == "ok" and again == first
    detail = f"first {_said(first)}; repeated {_said(again)}"
    yield Verdict("a repeated credit is the same transaction", same, detail)
    if first.status == "ok":
        probe.send("debit", probe.txid("c-back"))  # (the player's balance as it was)


def _refusals(probe: _Probe) -> Iterator[Verdict]:
    huge = 10**15
    poor = probe.send("debit", probe.txid("huge"), amount=huge)
    detail = _said(poor)
    yield Verdict("insufficient funds are refused", poor.status == "insufficient_funds", detail)
    if poor.status == "ok":
        probe.send("rollback", probe.txid("huge"), amount=huge)
    nobody = f"guts-check-nobody-{probe.run}"
    stranger = probe.send("debit", probe.txid("nobody"), player=nobody)
    known = stranger.status == "unknown_player"
    yield Verdict("an unknown player is refused", known, _said(stranger))


def _signatures(probe: _Probe) -> Iterator[Verdict]:
    for name, key in (("unsigned", ""), ("signed with another secret", _other(probe.secret))):
        txid = probe.txid(name.split()[0])
        forged = probe.send("debit", txid, sign_with=key)
        if forged.status == "ok":  # taken: give it back
            probe.send("rollback", txid)
        verdict = f"answered {forged.problem or forged.status}"
        if not forged.reached:  # (a wallet that cannot be reached refuses nothing)
            verdict = f"no answer ({forged.problem})"
        refused = forged.reached and forged.status != "ok"
        yield Verdict(f"a debit {name} is refused", refused, verdict)


def _other(secret: str) -> str:
    while (other := new_secret()) == secret:
        pass
    return other


CHECKS: tuple[Callable[[_Probe], Iterator[Verdict]], ...] = (
    _signed,
    _unknown_rollback,
    _credit,
    _refusals,
    _signatures,
)


def check_wallet(probe: _Probe) -> list[Verdict]:
    """Every rule of the contract, tried against the wallet `probe` calls."""
    return [verdict for check in CHECKS for verdict in check(probe)]


def configure(parser: argparse.ArgumentParser) -> None:
    """`guts wallet-check`'s arguments."""
    parser.add_argument("url", help="the wallet's base URL (guts posts to <url>/debit, ...)")
    parser.add_argument("--secret", required=True, help="the wallet's whsec_... secret")
    parser.add_argument("--player", default="guts-check", help="a test player of the wallet")
    parser.add_argument(
        "--amount", type=int, default=100, help="minor units to move (given back after)"
    )
    parser.add_argument("--currency", default="EUR", help="the wallet's currency")


def _bad_arguments(args: argparse.Namespace) -> str | None:
    """What is wrong with the arguments, if anything (the URL and currency as PUT
    /v1/wallet takes them)."""
    try:
        base64.b64decode(args.secret.removeprefix("whsec_"), validate=True)
    except binascii.Error:
        return "the secret must be whsec_ and base64 (as PUT /v1/wallet gave it)"
    try:
        check_settings(args.url, args.currency, 1, private_ok=True)
    except BadWallet as error:
        return str(error)
    if not 1 <= args.amount <= MAX_DEBIT:
        return f"--amount must be a whole number of minor units from 1 to {MAX_DEBIT}"
    if not args.player.strip():
        return "--player must name a test player of the wallet"
    return None


def run(args: argparse.Namespace) -> int:
    """Print a line per rule; 0 when every rule holds, 1 otherwise; 2: bad arguments, or a
    wallet that gave no answer at all to the first call (then no rule is tried further)."""
    bad = _bad_arguments(args)
    if bad is not None:
        print(bad, file=sys.stderr)
        return 2
    probe = _Probe(args.url, args.secret, args.player, args.amount, args.currency)
    first = probe.send("rollback", probe.txid("reach"))  # (of a debit never made: harmless)
    if not first.reached:
        print(f"the wallet gave no answer ({first.problem}): no rule was tried", file=sys.stderr)
        return 2
    verdicts = check_wallet(probe)
    for verdict in verdicts:
        print(verdict.line())
    failed = sum(not v.passed for v in verdicts)
    print(f"{len(verdicts) - failed} of {len(verdicts)} rules hold")
    return 1 if failed else 0
