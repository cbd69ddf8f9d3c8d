"""Player protection at a player's seat in the reference client `/play`, against `guts serve`
run as a real process: the session line (time played, net result in chips), the away/back
switch, and a reality check that falls due on the served node's own clock and is shown as a
modal dialog the player must answer.

`guts serve` runs its dispatcher on the real clock and cannot be shifted, so the player's
reality check is set to the least the API accepts (1 minute) and the test waits for it: the
test takes about 75 s (most of it that wait), besides the 20 s or so `guts serve` takes to start.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import requests

from tests.browser.pages import (
    OPERATOR,
    SIZES,
    Person,
    axe_violations,
    get,
    playwright_expect,
    post,
    screenshot,
    seat_link,
)
from tests.test_cli import Served

WEB = Path(__file__).resolve().parents[2] / "service" / "api" / "web"
STRINGS = {
    lang: json.loads((WEB / "strings" / f"{lang}.json").read_text()) for lang in ("en", "es")
}
LOCALES = {"en": "en-GB", "es": "es-ES"}
CHECK_DUE_MS = 120_000  # the check falls due a minute after the seating; the dispatcher's poll
"""How long the page may take to show the first reality check (a bound, not a timing)."""


def _words(language: str, key: str, **values: Any) -> str:
    text = STRINGS[language][key]
    for name, value in values.items():
        text = text.replace("{" + name + "}", str(value))
    return text


def _net(language: str, chips: int) -> str:
    if chips == 0:
        return _words(language, "play.net.even")
    way = "up" if chips > 0 else "down"
    return _words(
        language, f"play.net.{way}.{'one' if abs(chips) == 1 else 'other'}", chips=abs(chips)
    )


def _session(served: Served, table: str) -> dict[str, Any]:
    return dict(get(served, f"/v1/tables/{table}", OPERATOR)["seats"][0]["session"])


def test_a_reality_check_is_a_dialog_answered_before_playing_on(browser, contexts, served):
    expect = playwright_expect()
    limits = {"loss_limit_24h": None, "excluded_until": None, "reality_check_minutes": 1}
    put = requests.put(
        served.base + "/v1/players/rita/limits",
        json=limits,
        headers={"Authorization": f"Bearer {OPERATOR}"},
        timeout=10,
    )
    assert put.status_code == 200, put.text
    body = {"preset": "three-card", "ante": 1, "decision_timeout_s": 300}
    table = post(served, "/v1/tables", OPERATOR, body)["table_id"]
    tokens = [
        post(served, f"/v1/tables/{table}/players", OPERATOR, {"player_id": p, "buy_in": 50})[
            "token"
        ]
        for p in ("rita", "sam")
    ]
    rita = Person(browser, contexts, locale="en-GB")
    page = rita.page
    page.goto(seat_link(served, table, 0, tokens[0]))
    expect(page.locator("#feed-state")).to_have_attribute("data-state", "live")
    line = page.locator("#session-line")
    expect(line).to_have_text(re.compile(r"^This session: \d+ min played, even"))
    expect(page.locator("#reality-check")).to_be_hidden()

    # Away, by keyboard: the switch says so, the felt shows the seat away to everyone.
    toggle = page.get_by_role("switch", name="Away")
    expect(toggle).to_have_attribute("aria-checked", "false")
    toggle.focus()
    page.keyboard.press("Space")
    expect(toggle).to_have_attribute("aria-checked", "true")
    expect(page.locator("#away-state")).to_have_text(STRINGS["en"]["play.away.on"])
    expect(page.locator(".seat[data-seat='0'] .seat-status")).to_contain_text("away")
    expect(page.locator("#events")).to_contain_text("rita is away.")
    assert get(served, f"/v1/tables/{table}", OPERATOR)["seats"][0]["away"] is True
    page.keyboard.press("Enter")  # the focus stayed on the switch
    expect(toggle).to_have_attribute("aria-checked", "false")
    expect(page.locator(".seat[data-seat='0'] .seat-status")).to_contain_text("playing")
    expect(page.locator("#events")).to_contain_text("rita is back.")
    assert get(served, f"/v1/tables/{table}", OPERATOR)["seats"][0]["away"] is False

    # A hand: the ante changes the session's net result, and the line follows it.
    post(served, f"/v1/tables/{table}/deal", OPERATOR, {})
    expect(page.locator(".seat.mine .card:not(.back)")).to_have_count(3)
    expect(line).to_contain_text(_net("en", _session(served, table)["net_result"]))
    post(served, f"/v1/tables/{table}/declare", tokens[0], {"decision": "in"})
    post(served, f"/v1/tables/{table}/declare", tokens[1], {"decision": "out"})
    post(served, f"/v1/tables/{table}/resolve", OPERATOR, {})
    net = _session(served, table)["net_result"]
    assert net != 0  # (rita won or paid: the line below is not the "even" it said before)
    expect(line).to_contain_text(_net("en", net))

    # The reality check falls due on the served node's clock and reaches the page live.
    dialog = page.locator("#reality-check")
    expect(dialog).to_be_visible(timeout=CHECK_DUE_MS)
    check = [
        e
        for e in get(served, f"/v1/tables/{table}/events?limit=1000", tokens[0])["events"]
        if e["type"] == "reality_check"
    ][0]["data"]
    played = _words("en", "play.check.played", minutes=check["minutes_played"], net=_net("en", net))
    expect(page.locator("#check-played")).to_have_text(played)
    expect(page.locator("#events")).to_contain_text(
        f"Reality check for rita: {check['minutes_played']} min played"
    )
    assert page.evaluate(
        "document.getElementById('reality-check').contains(document.activeElement)"
    )
    page.keyboard.press("Escape")  # not dismissed without an answer
    page.keyboard.press("Escape")
    expect(dialog).to_be_visible()
    assert _session(served, table)["reality_check_pending"] is True

    # Opened while the check waits, the page shows it at once; axe-core finds nothing wrong
    # with the dialog open, in either language, at either size.
    others = []
    for language, locale in LOCALES.items():
        for size, (width, height) in SIZES.items():
            viewport = {"width": width, "height": height}
            other = Person(browser, contexts, locale=locale, viewport=viewport)
            other.page.goto(seat_link(served, table, 0, tokens[0]))
            expect(other.page.locator("#reality-check")).to_be_visible()
            expect(other.page.locator("#check-title")).to_have_text(
                STRINGS[language]["play.check.title"]
            )
            expect(other.page.locator("#check-played")).to_contain_text(_net(language, net))
            violations = axe_violations(other.page)
            summary = [(v["id"], [n["target"] for n in v["nodes"]][:3]) for v in violations]
            assert not violations, f"reality check, {language}, {size}: {summary}"
            screenshot(other.page, f"play-reality-check-{language}-{size}", full_page=False)
            others.append(other)

    # "Continue" closes it (here, and in the other tabs of the seat over the feed), and the
    # player is dealt into the next hand.
    page.get_by_role("button", name="Continue playing").click()
    expect(dialog).to_be_hidden()
    for other in others:
        expect(other.page.locator("#reality-check")).to_be_hidden()
    expect(page.locator("#events")).to_contain_text("rita carries on playing.")
    assert _session(served, table)["reality_check_pending"] is False
    dealt = post(served, f"/v1/tables/{table}/deal", OPERATOR, {})
    assert 0 in dealt["order"], dealt
    expect(page.locator(".seat.mine .card:not(.back)")).to_have_count(3)
    for person in (rita, *others):
        assert not person.errors, person.errors
        assert not person.missing, person.missing
