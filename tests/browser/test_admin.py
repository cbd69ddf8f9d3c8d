"""An operator's day in the back office `/admin`, in Debian's Chromium against `guts serve`:
register a webhook, open a table, seat two players, deal and resolve a hand they play, end
the table, find it among the ended tables, page the ledger, read the webhook's deliveries and
redeliver one, verify a hand in the browser, set a player's limits, and audit a table whose log
was tampered with and see its first bad event highlighted. An auditor's key sees only the
read-only parts. With the casino's wallet set (the tests' wallet server), a wallet-funded
player's debit and credit show in the wallet panel."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

import redis
import requests

from tests.browser.pages import AUDITOR, OPERATOR, Person, get, playwright_expect, post
from tests.tampering import rewrite_log
from tests.test_cli import Served
from tests.wallet_server import TestWallet


def _signed_in(browser: Any, contexts: list[Any], served: Served, key: str) -> Person:
    person = Person(browser, contexts)
    page = person.page
    page.goto(served.base + "/admin")
    playwright_expect()(page.locator("body")).to_have_attribute("data-ready", "1")
    page.get_by_label("Operator or auditor key").fill(key)
    page.get_by_role("button", name="Use this key").click()
    return person


def _tokens(person: Person) -> list[str]:
    links = person.page.locator("#seat-links a").evaluate_all("(a) => a.map((x) => x.href)")
    return [parse_qs(urlsplit(link).fragment)["token"][0] for link in links]


def test_an_operators_day(browser, contexts, served: Served):
    expect = playwright_expect()
    operator = _signed_in(browser, contexts, served, OPERATOR)
    page = operator.page
    expect(page.locator("#role")).to_have_text("Signed in as the operator.")

    # A webhook first, so that the day's events are delivered to it (to nowhere: they fail).
    page.get_by_label("URL").fill("http://127.0.0.1:9/hooks")
    page.get_by_role("button", name="Register", exact=True).click()
    expect(page.locator("#webhooks-list tbody tr")).to_have_count(1)

    # Open a table, seat two players, deal; they play from their links (here: their tokens).
    page.get_by_label("Seconds to decide").fill("300")
    page.get_by_role("button", name="Create the table").click()
    expect(page.locator("#live")).to_be_visible()
    expect(page.locator("#feed-state")).to_have_attribute("data-state", "live")
    table = operator.text("#live-id")
    for count, name in enumerate(["alice", "bob"], start=1):
        page.get_by_label("Player id", exact=True).first.fill(name)
        page.get_by_role("button", name="Seat", exact=True).click()
        expect(page.locator("#seat-links a")).to_have_count(count)
    expect(page.locator("#live-seats tbody tr")).to_have_count(2)
    tokens = _tokens(operator)
    page.get_by_role("button", name="Deal").click()
    expect(page.locator("#events")).to_contain_text("Hand 1 is dealt to 2 players.")
    for token in tokens:
        post(served, f"/v1/tables/{table}/declare", token, {"decision": "in"})
    expect(page.locator("#events")).to_contain_text("alice is in.")
    page.get_by_role("button", name="Resolve the hand").click()
    expect(page.locator("#events")).to_contain_text("Hand 1: ")
    page.get_by_role("button", name="End the table").click()
    expect(page.locator("#events")).to_contain_text("The table has ended.")

    # The table is among the ended ones, and not among the open ones.
    page.get_by_label("Status", exact=True).select_option("ended")
    page.locator("#tables-form").get_by_role("button", name="Load").click()
    expect(page.locator("#tables-list")).to_contain_text(table)
    page.get_by_label("Status", exact=True).select_option("open")
    page.locator("#tables-form").get_by_role("button", name="Load").click()
    expect(page.locator("#tables-list")).not_to_contain_text(table)
    assert any("/v1/tables?status=ended" in url for url in operator.urls)  # the API filters

    # The ledger, two entries a page: the next page holds other entries.
    ledger = get(served, f"/v1/ledger?table_id={table}&limit=100", AUDITOR)["entries"]
    assert len(ledger) > 2
    page.locator("#ledger-table").fill(table)
    page.get_by_label("Per page").fill("2")
    page.locator("#ledger-form").get_by_role("button", name="Search").click()
    rows = page.locator("#ledger-list tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.first).to_contain_text(ledger[0]["tx_id"])
    page.locator("#ledger-list").get_by_role("button", name="Next page").click()
    expect(rows.first).to_contain_text(ledger[2]["tx_id"])
    page.locator("#ledger-list").get_by_role("button", name="First page").click()
    expect(rows.first).to_contain_text(ledger[0]["tx_id"])

    # The webhook's deliveries: the day's events, each redeliverable.
    page.locator("#webhooks-load").click()
    page.locator("#webhooks-list").get_by_role("button", name="Deliveries to").click()
    deliveries = page.locator("#deliveries tbody tr")
    expect(deliveries.first).to_be_visible()
    expect(page.locator("#deliveries")).to_contain_text("player_seated")
    expect(page.locator("#deliveries")).to_contain_text("hand_finished")
    deliveries.first.get_by_role("button", name="Redeliver").click()
    expect(page.locator("#status")).to_contain_text("queued to be delivered again")

    # Hands by player, verified in the browser; the hands shown are named.
    page.locator("#hands-player").fill("alice")
    page.locator("#hands-form").get_by_role("button", name="Search").click()
    expect(page.locator("#hands-list tbody tr")).to_have_count(1)
    page.locator("#hands-list").get_by_role("button", name="Verify").click()
    expect(page.locator("#verdict")).to_have_attribute("data-status", "verified")

    # A player's limits, changed and read back.
    page.locator("#limits-player").fill("alice")
    page.locator("#limits-form").get_by_role("button", name="Load").click()
    expect(page.locator("#limits-view")).to_contain_text("no limit")
    expect(page.locator("#limits-view")).to_contain_text("no cool-down running")
    page.get_by_label("Loss limit over 24 hours").fill("50")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#limits-view")).to_contain_text("50")
    assert get(served, "/v1/players/alice/limits", AUDITOR)["loss_limit_24h"] == 50

    # The wallet's transactions: shown, or said to be missing from this server.
    page.locator("#wallet-form").get_by_role("button", name="Search").click()
    expect(page.locator("#wallet-list")).not_to_be_empty()

    # An audit of a table whose log was rewritten (a dealt card swapped with the deck's, the
    # hash chain recomputed): the report names the first bad event and the log highlights it.
    tampered = _played_table(served)
    version = _swap_a_dealt_card(served, tampered)
    page.locator("#audit-table").fill(tampered)
    page.get_by_role("button", name="Start an audit").click()
    report = page.locator("#audit-report")
    expect(report).to_contain_text(f"The first bad event is version {version} (hand_dealt)")
    bad = page.locator("#audit-report tr.bad")
    expect(bad).to_have_count(1)
    expect(bad.locator("td").first).to_have_text(str(version))

    page.locator("#quarantine-load").click()
    expect(page.locator("#quarantine-list table")).to_be_visible()
    assert not operator.errors, operator.errors
    # Nothing missing but what the page handles: a server without the wallet's read model.
    missing = [url for url in operator.missing if "/v1/wallet/transactions" not in url]
    assert not missing, missing
    assert all(OPERATOR not in url for url in operator.urls)


def _played_table(served: Served) -> str:
    table = post(served, "/v1/tables", OPERATOR, {"preset": "three-card"})["table_id"]
    tokens = [
        post(served, f"/v1/tables/{table}/players", OPERATOR, {"player_id": p, "buy_in": 50})[
            "token"
        ]
        for p in ("carol", "dave")
    ]
    post(served, f"/v1/tables/{table}/deal", OPERATOR, {})
    for token in tokens:
        post(served, f"/v1/tables/{table}/declare", token, {"decision": "in"})
    post(served, f"/v1/tables/{table}/resolve", OPERATOR, {})
    return table


def _swap_a_dealt_card(served: Served, table: str) -> int:
    """Swap a dealt card with the deck's next one in the stored log, rechained; the version."""
    found: list[int] = []

    def change(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        at = next(i for i, r in enumerate(records) if r["type"] == "hand_dealt")
        data = records[at]["data"]
        seat = next(iter(data["cards"]))
        data["cards"][seat][0], data["deck"][0] = data["deck"][0], data["cards"][seat][0]
        found.append(at + 1)
        return records

    client = redis.Redis(port=served.redis_port())
    try:
        rewrite_log(client, table, change, rechain=True)
    finally:
        client.close()
    return found[0]


def test_an_auditor_sees_only_the_read_only_parts(browser, contexts, served: Served):
    expect = playwright_expect()
    auditor = _signed_in(browser, contexts, served, AUDITOR)
    page = auditor.page
    expect(page.locator("#role")).to_have_text("Signed in as an auditor: read-only.")
    for hidden in ("#webhooks", "#create-form", "#limits-set"):
        expect(page.locator(hidden)).to_be_hidden()
    for shown in ("#tables-form", "#hands-form", "#ledger-form", "#audit-form", "#report-form"):
        expect(page.locator(shown)).to_be_visible()
    page.locator("#tables-form").get_by_role("button", name="Load").click()
    expect(page.locator("#tables-list table")).to_be_visible()
    assert not auditor.errors, auditor.errors


def _wallet_transactions(served: Served, player: str) -> list[dict[str, Any]]:
    return list(get(served, f"/v1/wallet/transactions?player_id={player}", AUDITOR)["transactions"])


def _both_confirmed(found: list[dict[str, Any]]) -> bool:
    """Whether `found` is a debit then a credit, both confirmed."""
    kinds = [(t["kind"], t["status"]) for t in found]
    return kinds == [("debit", "confirmed"), ("credit", "confirmed")]


def test_the_wallet_panel_shows_a_wallet_funded_players_debit_and_credit(
    browser, contexts, served: Served
):
    """The tenant's wallet is the tests' wallet server: the operator seats a player paid from
    it (a debit of 40 chips x 25 minor units), ends the table (the dispatchers credit them
    back), and reads both transactions, confirmed, in the panel."""
    expect = playwright_expect()
    wallet = TestWallet(balances={"wanda": 5_000})
    try:
        answer = requests.put(
            served.base + "/v1/wallet",
            json={"url": wallet.url, "currency": "GBP", "chip_value_minor": 25},
            headers={"Authorization": f"Bearer {OPERATOR}"},
            timeout=10,
        )
        assert answer.status_code == 200, answer.text
        wallet.secret = answer.json()["secret"]
        operator = _signed_in(browser, contexts, served, OPERATOR)
        page = operator.page
        page.get_by_role("button", name="Create the table").click()
        expect(page.locator("#live")).to_be_visible()
        page.get_by_label("Player id", exact=True).first.fill("wanda")
        page.get_by_label("Buy-in").fill("40")
        page.get_by_label("Paid from").select_option("wallet")
        page.get_by_role("button", name="Seat", exact=True).click()
        expect(page.locator("#live-seats tbody tr")).to_have_count(1)
        assert wallet.balances["wanda"] == 5_000 - 1_000  # debited before she was seated
        page.get_by_role("button", name="End the table").click()
        expect(page.locator("#events")).to_contain_text("The table has ended.")

        # The credit is the dispatchers' (follower, then the wallet duty): wait for it.
        deadline = time.monotonic() + 60
        while not _both_confirmed(found := _wallet_transactions(served, "wanda")):
            assert time.monotonic() < deadline, found
            time.sleep(0.2)
        assert wallet.balances["wanda"] == 5_000

        page.locator("#wallet-player").fill("wanda")
        page.locator("#wallet-form").get_by_role("button", name="Search").click()
        rows = page.locator("#wallet-list tbody tr")
        expect(rows).to_have_count(2)
        for kind, reason in (("debit", "buy-in"), ("credit", "cash-out")):
            row = rows.filter(has_text=kind)
            expect(row).to_have_count(1)
            for shown in (reason, "confirmed", "1000", "GBP", "wanda"):
                expect(row).to_contain_text(shown)
        headers = page.locator("#wallet-list thead th")
        expect(headers).to_contain_text(["Kind", "Amount (minor units)", "Currency", "Status"])
        assert not operator.errors, operator.errors
    finally:
        wallet.close()
