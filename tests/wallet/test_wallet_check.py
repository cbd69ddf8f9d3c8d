"""`guts wallet-check` against the tests' wallet: every rule passes for a wallet that keeps
the contract (and the test player's balance ends where it began); each broken wallet fails
the rule it breaks, and the command then exits 1."""

from __future__ import annotations

import subprocess
import sys

import pytest

from service.projections.webhook_messages import new_secret
from tests.wallet.conftest import PLAYERS
from tests.wallet_server import TestWallet

RULES = (
    "answers are signed with the secret",
    "a repeated debit is the same transaction",
    "a rollback gives the debit back",
    "a repeated rollback is the same transaction",
    "a rollback of a debit never seen is 200",
    "a debit after its rollback takes nothing",
    "a repeated credit is the same transaction",
    "insufficient funds are refused",
    "an unknown player is refused",
    "a debit unsigned is refused",
    "a debit signed with another secret is refused",
)


def _check(wallet: TestWallet) -> tuple[int, dict[str, str]]:
    command = [sys.executable, "-m", "service.cli", "wallet-check", wallet.url]
    command += ["--secret", wallet.secret, "--player", "ann", "--amount", "250"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    verdicts = {}
    for line in done.stdout.splitlines():
        if line[:4] in ("PASS", "FAIL"):
            rule = line[6:].split(":", 1)[0]
            verdicts[rule] = line[:4]
    return done.returncode, verdicts


def test_a_wallet_that_keeps_the_contract_passes_every_rule(wallet: TestWallet):
    wallet.secret = new_secret()
    code, verdicts = _check(wallet)
    assert verdicts == dict.fromkeys(RULES, "PASS")
    assert code == 0
    assert wallet.balances["ann"] == PLAYERS["ann"]  # everything given back


@pytest.mark.parametrize(
    ("broken", "rules"),
    [
        (
            "not_idempotent",
            {
                "a repeated debit is the same transaction",
                "a rollback gives the debit back",  # (of the two debits it applied, one)
                "a repeated rollback is the same transaction",
                "a repeated credit is the same transaction",
            },
        ),
        (
            "ignores_signatures",
            {"a debit unsigned is refused", "a debit signed with another secret is refused"},
        ),
        ("refuses_unknown_rollback", {"a rollback of a debit never seen is 200"}),
    ],
)
def test_a_broken_wallet_fails_the_rule_it_breaks(wallet: TestWallet, broken: str, rules: set[str]):
    wallet.secret = new_secret()
    setattr(wallet, broken, True)
    code, verdicts = _check(wallet)
    assert set(verdicts) == set(RULES)
    assert {rule for rule, verdict in verdicts.items() if verdict == "FAIL"} == rules
    assert code == 1


@pytest.mark.parametrize(
    ("url", "more", "said"),
    [
        ("http://127.0.0.1:9/w", [], "the wallet gave no answer (ConnectionRefusedError)"),
        ("http://[::1/w", [], "url must be an absolute http:// or https:// URL"),
        ("ftp://127.0.0.1/w", [], "url must be an absolute http:// or https:// URL"),
        ("http://127.0.0.1:9/w", ["--amount", "0"], "--amount must be a whole number"),
        ("http://127.0.0.1:9/w", ["--currency", "eur"], "currency must be an ISO 4217 code"),
    ],
)
def test_a_wallet_that_cannot_be_tried_is_exit_2_with_no_verdict(
    url: str, more: list[str], said: str
) -> None:
    """Nothing that listens passed the signature rules before ("a debit unsigned is refused:
    answered ConnectionRefusedError"), and a URL Python cannot parse was a traceback."""
    command = [sys.executable, "-m", "service.cli", "wallet-check", url, *more]
    command += ["--secret", new_secret()]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.strip().startswith(said), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
