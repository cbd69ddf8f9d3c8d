"""Both pages as people meet them, in English and in Spanish (the browser's language picks
it): axe-core, run inside each page, reports no violation on /play (the operator's view and a
player's seat, a hand in play) or /admin (tables, a live table, a player's limits with a change
waiting and a refusal beside its field, the protection profile); the switch changes the
language and keeps it; and screenshots of those screens at 1280x800 and 390x844 are written
where `screenshots_dir()` says (printed), for a person to look at."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.pages import (
    OPERATOR,
    SIZES,
    Person,
    axe_violations,
    playwright_expect,
    post,
    put,
    screenshot,
    screenshots_dir,
    seat_link,
)
from tests.test_cli import Served

LOCALES = {"en": "en-GB", "es": "es-ES"}
HEADINGS = {"en": "What happened", "es": "Lo que pasó"}


@pytest.fixture(scope="module")
def dealt(served: Served) -> dict[str, Any]:
    """A hi-lo table with three players and a hand dealt (the most the felt shows)."""
    rules = {"hi_lo": True}
    table = post(
        served, "/v1/tables", OPERATOR, {"preset": "three-card", "ante": 2, "rules": rules}
    )
    seated = [
        post(served, f"/v1/tables/{table['table_id']}/players", OPERATOR, body)
        for body in ({"player_id": p, "buy_in": 100} for p in ("alice", "bob", "carol"))
    ]
    post(served, f"/v1/tables/{table['table_id']}/deal", OPERATOR, {})
    return {"table": table["table_id"], "tokens": [s["token"] for s in seated]}


@pytest.fixture(scope="module")
def limited(served: Served) -> str:
    """A player with a reality check and a raise of it waiting out its 24 h."""
    for minutes in (30, 90):
        body = {"loss_limit_24h": 500, "excluded_until": None, "reality_check_minutes": minutes}
        put(served, "/v1/players/zoe/limits", OPERATOR, body)
    return "zoe"


def _fill_the_limits_panel(page: Any, player: str) -> None:
    """The player's limits loaded, and a refusal (an exclusion in the past) beside its field."""
    expect = playwright_expect()
    page.locator("#limits-player").fill(player)
    page.locator("#limits-form button[type=submit]").click()
    expect(page.locator("#limits-pending li")).to_contain_text("90")
    page.locator("#excluded-until").fill("2020-01-01T00:00")
    page.locator("#limits-set button[type=submit]").click()
    expect(page.locator("#excluded-until-error")).not_to_be_empty()
    expect(page.locator("#profile-view dl")).to_be_visible()


def _check(person: Person, name: str) -> None:
    violations = axe_violations(person.page)
    summary = [(v["id"], v["impact"], [n["target"] for n in v["nodes"]][:3]) for v in violations]
    assert not violations, f"{name}: {summary}"


@pytest.mark.parametrize("language", ["en", "es"])
def test_the_pages_have_no_accessibility_violation(
    browser, contexts, served: Served, dealt: dict[str, Any], limited: str, language: str
):
    expect = playwright_expect()
    print(f"screenshots in {screenshots_dir()}")
    for size, (width, height) in SIZES.items():
        options = {"locale": LOCALES[language], "viewport": {"width": width, "height": height}}

        player = Person(browser, contexts, **options)
        player.page.goto(seat_link(served, dealt["table"], 0, dealt["tokens"][0]))
        expect(player.page.locator("#feed-state")).to_have_attribute("data-state", "live")
        expect(player.page.locator(".seat.mine .card:not(.back)")).to_have_count(3)
        expect(player.page.locator("#table h3")).to_have_text(HEADINGS[language])
        assert player.page.evaluate("document.documentElement.lang") == language
        _check(player, f"/play seat, {language}, {size}")
        screenshot(player.page, f"play-seat-{language}-{size}")

        operator = Person(browser, contexts, **options)
        operator.page.goto(f"{served.base}/play")
        expect(operator.page.locator("body")).to_have_attribute("data-ready", "1")
        operator.page.locator("#key").fill(OPERATOR)
        operator.page.locator("#key-form button[type=submit]").click()
        operator.page.locator("#open-table").fill(dealt["table"])
        operator.page.locator("#open-form button[type=submit]").click()
        expect(operator.page.locator("#feed-state")).to_have_attribute("data-state", "live")
        operator.page.locator("details.options summary").click()
        _check(operator, f"/play operator, {language}, {size}")
        screenshot(operator.page, f"play-operator-{language}-{size}")

        admin = Person(browser, contexts, **options)
        admin.page.goto(f"{served.base}/admin")
        expect(admin.page.locator("body")).to_have_attribute("data-ready", "1")
        admin.page.locator("#key").fill(OPERATOR)
        admin.page.locator("#key-form button[type=submit]").click()
        expect(admin.page.locator("body")).to_have_attribute("data-role", "operator")
        admin.page.locator("#tables-form button[type=submit]").click()
        admin.page.locator("#tables-list tbody tr").first.get_by_role("button").click()
        expect(admin.page.locator("#feed-state")).to_have_attribute("data-state", "live")
        admin.page.locator("#webhooks-load").click()
        admin.page.locator("#quarantine-load").click()
        expect(admin.page.locator("#quarantine-list table")).to_be_visible()
        _fill_the_limits_panel(admin.page, limited)
        _check(admin, f"/admin, {language}, {size}")
        screenshot(admin.page, f"admin-{language}-{size}")
        for person in (player, operator, admin):
            assert not person.errors, person.errors
            assert not person.missing, person.missing


def test_the_language_switch_changes_the_page_and_is_kept(browser, contexts, served: Served):
    expect = playwright_expect()
    person = Person(browser, contexts, locale="en-US")
    page = person.page
    page.goto(served.base + "/play")
    expect(page.locator("body")).to_have_attribute("data-ready", "1")
    expect(page.locator("#operator-title")).to_have_text("Operator")
    page.get_by_label("Language").select_option("es")
    expect(page.locator("#operator-title")).to_have_text("Operador")
    expect(page.get_by_label("Comodines")).to_have_count(1)  # the variant options too
    assert page.evaluate("document.documentElement.lang") == "es"
    page.goto(served.base + "/admin")  # the choice is kept for the other page
    expect(page.locator("#tables-title")).to_have_text("Mesas")


def test_the_accessibility_check_finds_a_violation_when_there_is_one(browser, contexts, served):
    """axe-core runs for real in the page: an image without a text alternative is reported."""
    expect = playwright_expect()
    person = Person(browser, contexts)
    person.page.goto(served.base + "/play")
    expect(person.page.locator("body")).to_have_attribute("data-ready", "1")
    person.page.evaluate(
        "document.querySelector('main').append(Object.assign(document.createElement('img'),"
        " {src: '/play/favicon.svg'}))"
    )
    assert "image-alt" in [v["id"] for v in axe_violations(person.page)]
