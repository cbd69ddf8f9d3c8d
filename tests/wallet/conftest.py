"""Fixtures of the wallet's tests: a test wallet (`tests.wallet_server`) and an API server
that calls it with short timeouts."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.apiclient import Api
from tests.wallet_server import TestWallet

PLAYERS = {"ann": 10_000, "bob": 10_000, "cat": 10_000, "poor": 50}
"""The test wallet's players and their balances (minor units)."""


@pytest.fixture
def wallet() -> Iterator[TestWallet]:
    made = TestWallet(balances=PLAYERS)
    made.slow_s = 1.0
    yield made
    made.close()


@pytest.fixture
def wallet_api(serve_with: Callable[..., Api], redis_client: Any, clean_archive: str) -> Api:
    """An API server on an empty Redis whose wallet calls time out after 0.5 s."""
    return serve_with(wallet_timeout_s=0.5, wallet_first_retry_s=0.1, wallet_max_wait_s=0.2)


def connect(api: Api, wallet: TestWallet, currency: str = "EUR", value: int = 100) -> str:
    """Set `wallet` as the tenant's; the secret it signs with."""
    made = api.call(
        "PUT", "/v1/wallet", {"url": wallet.url, "currency": currency, "chip_value_minor": value}
    )
    assert made.status_code == 200, made.text
    wallet.secret = made.json()["secret"]
    return wallet.secret


def transactions(api: Api, **query: Any) -> list[dict[str, Any]]:
    answer = api.get("/v1/wallet/transactions", params=query)
    assert answer.status_code == 200, answer.text
    return list(answer.json()["transactions"])
