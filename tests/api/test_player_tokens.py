"""Player tokens as the authenticator reads them (pure: no server), the ones it remembers
included."""

from __future__ import annotations

import pytest

from service.api.auth import Authenticator, Unauthorized
from service.application.access import Caller
from service.rules.views import PLAYER


def test_a_remembered_token_lets_no_forged_one_through():
    auth = Authenticator((), (), b"secret")
    token = auth.issue("t1", 0, 3)
    player = Caller(PLAYER, table_id="t1", seat=0, joined=3)
    assert auth.authenticate(f"Bearer {token}") == player
    claim, mac = token.split(".")
    with pytest.raises(Unauthorized):
        auth.authenticate(f"Bearer {claim}.{mac[:-2]}AA")
    assert auth.authenticate(f"Bearer {token}") == player


def test_tokens_forgotten_past_the_bound_are_read_again(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(Authenticator, "PLAYERS_KEPT", 2)
    auth = Authenticator((), (), b"secret")
    tokens = {seat: auth.issue("t1", seat, 1) for seat in range(5)}
    for _ in range(2):
        for seat, token in tokens.items():
            assert auth.authenticate(f"Bearer {token}").seat == seat
    other = Authenticator((), (), b"another secret")
    with pytest.raises(Unauthorized):
        other.authenticate(f"Bearer {tokens[0]}")
