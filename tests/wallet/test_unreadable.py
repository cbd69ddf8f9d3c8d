"""What the wallet stores, found unreadable (a bad write, a hand edit): the tenant's settings
and a transaction's record answer a 409 naming the fix, not a 500; the wallet duty leaves an
unreadable transaction pending and pays the others; a tenant whose keys break its duty's
pass holds up no other tenant; and the duty's thread outlives what it meets (it used to die
on the first error that was not Redis going away, leaving every tenant's credits unpaid
while the dispatcher ran on)."""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from service.eventlog.redis_store import RedisEventStore
from service.projections.follower import Follower
from service.projections.wallet import WalletStore
from service.projections.wallet_credits import WalletCredits
from service.projections.webhooks import WebhookStore
from tests.apiclient import SERVED, Api
from tests.wallet.conftest import connect, follow, transactions, wallet_of
from tests.wallet_server import TestWallet
from workers.wallet_duty import finish_due, run_wallet_duty


def _redis(api: Api) -> Any:
    return SERVED[api.base].extensions["guts"].redis


def _funded(api: Api, table: str, player: str) -> Any:
    body = {"player_id": player, "buy_in": 30, "funding": "wallet"}
    return api.post(f"/v1/tables/{table}/players", body)


def _pending_credit(api: Api, wallet: TestWallet) -> str:
    """A table whose wallet-funded seat (ann's) left, its credit derived and pending."""
    table = api.table("three-card")
    assert _funded(api, table, "ann").status_code == 201
    assert api.delete(f"/v1/tables/{table}/players/0").status_code == 200
    follow(api, table)
    (credit,) = [t for t in transactions(api) if t["kind"] == "credit"]
    assert credit["status"] == "pending"
    return str(credit["transaction_id"])


def _refused(response: Any, words: str) -> None:
    assert response.status_code == 409, response.text
    assert response.json()["title"] == "Record Failed Verification", response.text
    assert words in response.json()["detail"], response.text


def test_unreadable_wallet_settings_are_named_and_set_again(wallet_api: Api, wallet: TestWallet):
    connect(wallet_api, wallet)
    _redis(wallet_api).hset("guts:{%wallet:default}:settings", "chip_value_minor", "lots")
    fix = "set them again (PUT /v1/wallet)"
    _refused(wallet_api.get("/v1/wallet"), fix)
    table = wallet_api.table("three-card")
    _refused(_funded(wallet_api, table, "ann"), fix)
    assert wallet.count("debit") == 0  # nothing was sent
    settings = {"url": wallet.url, "currency": "EUR", "chip_value_minor": 100}
    repaired = wallet_api.call("PUT", "/v1/wallet", settings)  # the repair (the secret kept)
    assert repaired.status_code == 200 and "secret" not in repaired.json(), repaired.text
    assert _funded(wallet_api, table, "ann").status_code == 201


def test_an_unreadable_transaction_is_left_pending_and_the_others_are_paid(
    wallet_api: Api, wallet: TestWallet, caplog: pytest.LogCaptureFixture
):
    connect(wallet_api, wallet)
    credit = _pending_credit(wallet_api, wallet)
    client = _redis(wallet_api)
    client.hset("guts:{%wallet:default}:tx", "c-broken", b"{not json")
    client.zadd("guts:{%wallet:default}:order", {"c-broken": 10_000})
    client.zadd("guts:{%wallet:default}:due", {"c-broken": 0})
    with ThreadPoolExecutor(4) as pool, caplog.at_level(logging.ERROR, logger="guts.wallet"):
        finish_due(wallet_of(wallet_api), pool)
    assert wallet.effects["credit"] == 1
    assert client.zscore("guts:{%wallet:default}:due", credit) is None  # settled
    assert client.zscore("guts:{%wallet:default}:due", "c-broken") is not None  # still pending
    said = [record.getMessage() for record in caplog.records]
    assert any("c-broken of tenant default cannot be read" in line for line in said), said
    listed = wallet_api.get("/v1/wallet/transactions")
    _refused(listed, "wallet transaction 'c-broken' cannot be read")


def test_a_tenant_whose_keys_break_the_pass_holds_up_no_other(
    wallet_api: Api, wallet: TestWallet, caplog: pytest.LogCaptureFixture
):
    connect(wallet_api, wallet)
    credit = _pending_credit(wallet_api, wallet)
    client = _redis(wallet_api)
    client.sadd("guts:{%wallet}:tenants", "aaa-broken")  # (looked at before "default")
    client.set("guts:{%wallet:aaa-broken}:due", "not a sorted set")
    with ThreadPoolExecutor(4) as pool, caplog.at_level(logging.ERROR, logger="guts.wallet"):
        finish_due(wallet_of(wallet_api), pool)
    assert wallet.effects["credit"] == 1
    assert client.zscore("guts:{%wallet:default}:due", credit) is None
    assert any("tenant aaa-broken" in r.getMessage() for r in caplog.records)


def test_the_duty_outlives_an_error_and_pays_once_it_clears(
    wallet_api: Api, wallet: TestWallet, caplog: pytest.LogCaptureFixture
):
    connect(wallet_api, wallet)
    _pending_credit(wallet_api, wallet)
    client = _redis(wallet_api)
    client.sadd("guts:{%wallet}:tenants", b"\xff")  # (names no tenant: passed over)
    client.rename("guts:{%wallet}:tenants", "kept")
    client.set("guts:{%wallet}:tenants", "not a set")  # every pass fails on it
    stop = threading.Event()
    duty = threading.Thread(target=run_wallet_duty, args=(wallet_of(wallet_api), stop))
    with caplog.at_level(logging.ERROR, logger="guts.wallet"):
        duty.start()
        try:
            deadline = time.monotonic() + 10
            while not any("failed" in r.getMessage() for r in caplog.records):
                assert time.monotonic() < deadline, "the duty's pass did not fail"
                time.sleep(0.05)
            assert duty.is_alive() and wallet.effects["credit"] == 0
            client.rename("kept", "guts:{%wallet}:tenants")
            while wallet.effects["credit"] == 0:
                assert time.monotonic() < deadline + 10, "the duty did not pay once it could"
                assert duty.is_alive()
                time.sleep(0.05)
        finally:
            stop.set()
            duty.join(10)
    assert wallet.effects["credit"] == 1


def test_a_webhook_stored_unreadable_holds_up_no_other_projection_and_loses_nothing(
    wallet_api: Api, wallet: TestWallet
):
    """An unreadable webhook once failed its tenant's whole catch-up: the projections after
    the webhooks' (the wallet's credits) never moved, so no cash-out of the tenant was paid.
    Each projection now goes on alone; the webhooks' waits, none lost, until the hook is
    deleted."""
    connect(wallet_api, wallet)
    client = _redis(wallet_api)
    made = wallet_api.call(
        "POST", "/v1/webhooks", {"url": "http://127.0.0.1:9/h", "events": ["player_cashed_out"]}
    )
    assert made.status_code == 201, made.text
    kept = made.json()["webhook_id"]
    client.hset("guts:{%hooks:default}:hooks", "wh_broken", b"{not json")
    _refused(wallet_api.get("/v1/webhooks"), "delete it (DELETE /v1/webhooks/wh_broken)")
    table = wallet_api.table("three-card")
    assert _funded(wallet_api, table, "ann").status_code == 201
    assert wallet_api.delete(f"/v1/tables/{table}/players/0").status_code == 200
    hooks = WebhookStore(client)
    store = WalletStore(client, RedisEventStore(client).idempotency_key)
    follower = Follower(RedisEventStore(client), [hooks, WalletCredits(store)])
    follower.catch_up(table)
    (credit,) = [t for t in transactions(wallet_api) if t["kind"] == "credit"]
    assert credit["status"] == "pending"  # derived, for the duty to pay
    assert hooks.deliveries("default", kept, 0, 10)[0] == []  # (its projection waits)
    assert wallet_api.delete("/v1/webhooks/wh_broken").status_code == 204
    follower.catch_up(table)
    (delivery,) = hooks.deliveries("default", kept, 0, 10)[0]
    assert delivery["body"]["type"] == "player_cashed_out"
