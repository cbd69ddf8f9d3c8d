"""A player's limits and protection in the back office `/admin`, in Debian's Chromium against
`guts serve`: the operator sets a reality check and a session limit, raises one and sees it
wait out its 24 h (when it takes effect, in the page's words), sets a time-out from a
datetime-local input (the browser's own time zone), changes the tenant's protection profile
and sees its defaults, and sees a refusal (an exclusion too short for the profile) beside the
field it names. An auditor's key sees the same panel with no form. Screenshots of the panel at
both sizes are written where `screenshots_dir()` says."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from tests.browser.pages import (
    AUDITOR,
    OPERATOR,
    SIZES,
    Person,
    get,
    playwright_expect,
    screenshots_dir,
)
from tests.test_cli import Served

ZONE = "America/Toronto"  # the browser's time zone: not the server's UTC, so a mix-up shows


def _signed_in(browser: Any, contexts: list[Any], served: Served, key: str) -> Person:
    person = Person(browser, contexts, locale="en-GB", timezone_id=ZONE)
    page = person.page
    page.goto(served.base + "/admin")
    playwright_expect()(page.locator("body")).to_have_attribute("data-ready", "1")
    page.get_by_label("Operator or auditor key").fill(key)
    page.get_by_role("button", name="Use this key").click()
    playwright_expect()(page.locator("body")).not_to_have_attribute("data-role", "none")
    return person


def _in_words(page: Any, moment: str) -> str:
    """A moment as the page's locale says it (en-GB: the day first; a short time)."""
    script = "(m) => new Intl.DateTimeFormat('en-GB', {dateStyle: 'medium', timeStyle: 'short'})"
    return str(page.evaluate(f"{script}.format(new Date(m))", moment))


def _load(page: Any, player: str) -> None:
    page.locator("#limits-player").fill(player)
    page.locator("#limits-form").get_by_role("button", name="Load").click()
    playwright_expect()(page.locator("#limits-view h3")).to_have_text(f"Limits of {player}")


def _save(page: Any) -> None:
    page.locator("#limits-set").get_by_role("button", name="Save").click()


def _panel_screenshots(page: Any) -> None:
    for size, (width, height) in SIZES.items():
        page.set_viewport_size({"width": width, "height": height})
        path = screenshots_dir() / f"admin-limits-{size}.png"
        page.locator("#limits").screenshot(path=str(path))
        print(f"screenshot: {path}")


def test_an_operator_sets_a_players_protection_and_the_tenants_profile(
    browser, contexts, served: Served
):
    expect = playwright_expect()
    operator = _signed_in(browser, contexts, served, OPERATOR)
    page = operator.page
    view, pending = page.locator("#limits-view"), page.locator("#limits-pending")
    expect(page.locator("#profile-view")).to_contain_text("Default")
    _load(page, "erin")
    expect(view).to_contain_text("no reality check")
    expect(view).to_contain_text("no time-out")
    expect(pending).to_have_text("No change is waiting.")

    # A reality check and a session limit: stricter than none, so at once.
    page.get_by_label("Reality check every (minutes)").fill("30")
    page.get_by_label("Session limit (minutes)").fill("120")
    _save(page)
    expect(view).to_contain_text("every 30 minutes")
    expect(view).to_contain_text("120 minutes a session")
    limits = get(served, "/v1/players/erin/limits", AUDITOR)
    assert (limits["reality_check_minutes"], limits["session_limit_minutes"]) == (30, 120)

    # Raised: it waits out its 24 h, listed with when it takes effect; the session limit
    # (left as it was) keeps its value.
    page.get_by_label("Reality check every (minutes)").fill("90")
    _save(page)
    expect(pending).to_contain_text("Reality check: every 90 minutes")  # (the save answered)
    limits = get(served, "/v1/players/erin/limits", AUDITOR)
    assert limits["reality_check_minutes"] == 30 and limits["session_limit_minutes"] == 120
    effective_at = limits["pending"]["reality_check_minutes"]["effective_at"]
    assert limits["pending"]["reality_check_minutes"]["value"] == 90
    expect(view).to_contain_text("every 30 minutes")
    expected = f"Reality check: every 90 minutes, from {_in_words(page, effective_at)}"
    expect(pending).to_have_text(expected)

    # A time-out, typed in the browser's time zone: the API has that moment (in UTC), and
    # the pending raise is still there (the form leaves a field it did not change alone).
    local = datetime.now(ZoneInfo(ZONE)).replace(second=0, microsecond=0) + timedelta(days=2)
    page.get_by_label("Time-out until").fill(local.strftime("%Y-%m-%dT%H:%M"))
    _save(page)
    # (the view's words for that moment say the save was answered: the view always names
    # the time-out's field, so its name alone would not)
    expect(view).to_contain_text(f"until {_in_words(page, local.astimezone(UTC).isoformat())}")
    limits = get(served, "/v1/players/erin/limits", AUDITOR)
    assert datetime.fromisoformat(limits["timeout_until"]) == local.astimezone(UTC)
    assert "reality_check_minutes" in limits["pending"]
    expect(pending).to_have_text(expected)

    # The tenant's profile: UKGC, and its defaults shown.
    page.get_by_label("The tenant's protection profile").select_option("ukgc")
    page.get_by_role("button", name="Set the profile").click()
    profile = page.locator("#profile-view")
    expect(profile).to_contain_text("UKGC (Great Britain)")
    expect(profile).to_contain_text("every 60 minutes")
    expect(profile).to_contain_text("6 months to 5 years")
    assert get(served, "/v1/protection/profile", AUDITOR)["profile"] == "ukgc"
    expect(view).to_contain_text("UKGC (Great Britain)")

    # Refused: under UKGC an exclusion is 6 months to 5 years; 30 days is too short. The
    # API's words are shown beside the field, which is marked invalid; nothing changed.
    soon = datetime.now(ZoneInfo(ZONE)) + timedelta(days=30)
    page.get_by_label("Excluded until").fill(soon.strftime("%Y-%m-%dT%H:%M"))
    _save(page)
    error = page.locator("#excluded-until-error")
    expect(error).to_contain_text("excluded_until must be")
    expect(page.get_by_label("Excluded until")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#status")).to_contain_text("422")
    assert get(served, "/v1/players/erin/limits", AUDITOR)["excluded_until"] is None
    _panel_screenshots(page)
    assert not operator.errors, operator.errors


def test_an_auditor_sees_a_players_protection_and_no_form(browser, contexts, served: Served):
    expect = playwright_expect()
    setup = _signed_in(browser, contexts, served, OPERATOR)
    _load(setup.page, "frank")
    setup.page.get_by_label("Reality check every (minutes)").fill("45")
    _save(setup.page)
    expect(setup.page.locator("#limits-view")).to_contain_text("every 45 minutes")

    auditor = _signed_in(browser, contexts, served, AUDITOR)
    page = auditor.page
    expect(page.locator("body")).to_have_attribute("data-role", "auditor")
    _load(page, "frank")
    expect(page.locator("#limits-view")).to_contain_text("every 45 minutes")
    expect(page.locator("#profile-view")).not_to_be_empty()
    for hidden in ("#limits-set", "#profile-form"):
        expect(page.locator(hidden)).to_be_hidden()
    expect(page.locator("#limits").get_by_role("button", name="Save")).to_have_count(0)
    assert not auditor.errors, auditor.errors
