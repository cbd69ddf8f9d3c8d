"""Three players and an operator at one table through the reference client `/play`, each in a
browser context of their own (separate storage, like separate people), against `guts serve`
run as a real process: the operator creates the table, seats the players and deals; each
player opens their seat link, sees their own cards and the countdown, declares, and watches
the reveal and the settlement arrive over the live feed; then the hand's history is verified
in the browser, and a tampered copy of it is reported as failing."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from tests.browser.pages import AUDITOR, OPERATOR, WAIT_MS, Person, post, seat_link
from tests.browser.pages import get as _get
from tests.browser.pages import need_the_live_feed as _need_the_live_feed
from tests.browser.pages import playwright_expect as _expect
from tests.test_cli import Served, _env


@dataclass
class Table:
    """A table opened through the page: the operator's and the players' browsers, the
    players' tokens (read from their links)."""

    table_id: str
    operator: Person
    players: list[Person]
    tokens: list[str]


def open_table(browser: Any, contexts: list[Any], served: Served, names: list[str]) -> Table:
    """The operator creates a three-card table in the page and seats `names`; each player
    opens their seat link in a browser context of their own and goes live."""
    expect = _expect()
    operator = Person(browser, contexts)
    page = operator.page
    page.goto(served.base + "/play")
    expect(page.locator("body")).to_have_attribute("data-ready", "1")  # (its forms wired)
    # The operator's key goes into the page (this tab's sessionStorage), never into a URL.
    page.get_by_label("Operator or auditor key").fill(OPERATOR)
    page.get_by_role("button", name="Use this key").click()
    page.get_by_label("Seconds to decide").fill("300")
    page.get_by_role("button", name="Create the table").click()
    expect(page.locator("#manage")).to_be_visible()
    table = operator.text("#table-id")
    for count, name in enumerate(names, start=1):
        page.get_by_label("Player id").fill(name)
        page.get_by_role("button", name="Seat", exact=True).click()
        try:
            expect(page.locator("#seat-links a")).to_have_count(count)
        except AssertionError as missing:  # (what the page said of the seating, if anything)
            said = operator.text("#status")
            raise AssertionError(f"{missing}\nthe page's status line: {said!r}") from None
    links = page.locator("#seat-links a").evaluate_all("(links) => links.map((a) => a.href)")
    # Each link has a copy button that puts it on the clipboard.
    operator.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=served.base)
    page.get_by_role("button", name=f"Copy the seat link for {names[-1]}").click()
    expect(page.locator("#status")).to_contain_text(f"The link for {names[-1]} is copied.")
    assert page.evaluate("navigator.clipboard.readText()") == links[-1]

    # Each link holds its seat's token in the fragment only.
    tokens = []
    for seat, link in enumerate(links):
        parts = urlsplit(link)
        assert parts.path == "/play" and not parts.query
        fragment = parse_qs(parts.fragment)
        assert fragment["table"] == [table] and fragment["seat"] == [str(seat)]
        tokens.append(fragment["token"][0])

    players = []
    for link in links:
        player = Person(browser, contexts)
        player.page.goto(link)
        expect(player.page.locator("#feed-state")).to_have_attribute("data-state", "live")
        players.append(player)
    return Table(table, operator, players, tokens)


def test_three_players_play_a_hand_live_and_verify_it(browser, contexts, served: Served):
    expect = _expect()
    opened = open_table(browser, contexts, served, ["alice", "bob", "carol"])
    table, operator, players, tokens = (
        opened.table_id,
        opened.operator,
        opened.players,
        opened.tokens,
    )
    page = operator.page
    page.get_by_role("button", name="Deal").click()
    for seat, player in enumerate(players):
        mine = player.page.locator(".seat.mine .card")
        expect(mine).to_have_count(3)
        # The page shows this seat's own cards face up (the ones the API gives its token) and
        # every other dealt-in seat's face down.
        view = _get(served, f"/v1/tables/{table}", tokens[seat])
        shown = mine.evaluate_all("(cards) => cards.map((c) => c.dataset.card)")
        assert shown == view["hand"]["cards"]
        expect(player.page.locator(".seat:not(.mine) .card.back")).to_have_count(6)
        expect(player.page.locator(".seat:not(.mine) .card:not(.back)")).to_have_count(0)
        expect(player.page.locator("#countdown")).to_have_text(re.compile(r"^\d+ s$"))
        # Every page here prefers reduced motion (tests/browser/pages.py): the ring steps.
        gliding = player.page.locator(".ring-left").evaluate(
            "(ring) => getComputedStyle(ring).transitionDuration"
        )
        assert gliding == "0s", gliding
        expect(player.page.locator(".seat.mine .seat-name")).to_contain_text(
            ["alice", "bob", "carol"][seat]
        )

    # Keyboard: the first stop of a player's Tab order is the first declaration button.
    alice = players[0].page
    alice.keyboard.press("Tab")
    assert alice.evaluate("document.activeElement.textContent") == "In"
    alice.keyboard.press("Enter")
    players[1].page.get_by_role("button", name="In", exact=True).click()
    for player in players[:2]:
        expect(player.page.locator("#act")).to_contain_text("waiting for the others")
    # Before the reveal, the others see that alice decided, never what; the log says so too.
    for player in players[1:]:
        expect(player.page.locator(".seat[data-seat='0'] .seat-status")).to_contain_text(
            "has decided"
        )
        expect(player.page.locator("#events")).to_contain_text("alice has decided.")
    players[2].page.get_by_role("button", name="Out", exact=True).click()

    # The reveal reaches every page over the feed: the hidden decisions are filled in.
    for player in players:
        events = player.page.locator("#events")
        expect(events).to_contain_text("The decisions are revealed.")
        expect(events).to_contain_text("alice is in.")
        expect(events).to_contain_text("carol is out.")
        expect(events).not_to_contain_text("has decided")
    page.get_by_role("button", name="Resolve the hand").click()
    expect(page.locator("#outcome")).to_contain_text("Hand 1: ")
    history = _get(served, f"/v1/tables/{table}/hands/1", AUDITOR)
    winner = history["outcome"]["winners"][0]
    names = ["alice", "bob", "carol"]
    loser = next(int(s) for s in history["outcome"]["matched"])
    won = history["outcome"]["won"][str(winner)]
    hand_name = history["hand_names"][str(winner)]["high"]["text"]
    for player in players:
        outcome = player.page.locator("#outcome")
        # Results in words, by name, with the hand's name from the rules.
        expect(outcome).to_contain_text(f"{names[winner]} wins {won} with ")
        expect(outcome).to_contain_text(hand_name.split(", ")[-1].split(" of ")[-1])
        expect(outcome).to_contain_text(f"{names[loser]} matches")
        for seat, cards in history["outcome"]["shown"].items():
            hand = player.page.locator(f".seat[data-seat='{seat}'] .card")
            assert sorted(hand.evaluate_all("(c) => c.map((x) => x.dataset.card)")) == sorted(cards)
    # The status line does not stay on what was done once the table moved on: alice's
    # "In: done." went when the hand was revealed and resolved.
    expect(alice.locator("#status")).to_be_empty()

    # Every viewer verifies the hand in the browser: each player, and the operator.
    for person in (*players, operator):
        person.page.get_by_label("Hand number").fill("1")
        person.page.get_by_role("button", name="Fetch and verify").click()
        verdict = person.page.locator("#verdict")
        expect(verdict).to_have_attribute("data-status", "verified")
        expect(verdict).to_contain_text(f"{table}/1: Verified")
        expect(person.page.locator("#checks")).to_contain_text("ok commitment")
    expect(page.locator("#checks")).to_contain_text("rest of the deck")  # the operator's view

    # A tampered history (a card of alice's hand changed) is reported as failing.
    pasted = json.loads(alice.locator("#pasted").input_value())
    dealt = pasted["cards"]["0"]
    dealt[0] = next(c for c in _deck() if c not in dealt)
    alice.locator("#pasted").fill(json.dumps(pasted))
    alice.get_by_role("button", name="Verify the pasted history").click()
    expect(alice.locator("#verdict")).to_have_attribute("data-status", "failed")
    expect(alice.locator("#checks .fail")).to_contain_text("cards of seat 0")
    # And one whose seed was replaced fails its commitment.
    pasted["seed"] = "00" * 32
    alice.locator("#pasted").fill(json.dumps(pasted))
    alice.get_by_role("button", name="Verify the pasted history").click()
    expect(alice.locator("#checks .fail").first).to_contain_text("commitment")

    # No credential ever went into a URL, and none was written to the server's log; no page
    # asked for anything that is not there (the favicon included).
    for person in (operator, *players):
        assert not person.errors, person.errors
        assert not person.missing, person.missing
        for url in person.urls:
            assert OPERATOR not in url and not any(token in url for token in tokens), url
            assert "#" not in url, url
    log = served.output()
    assert OPERATOR not in log and not any(token in log for token in tokens)


def test_a_table_is_created_with_variant_options(browser, contexts, served: Served):
    """Every ruleset option is offered at table creation; the ones set are sent."""
    expect = _expect()
    operator = Person(browser, contexts)
    page = operator.page
    page.goto(served.base + "/play")
    expect(page.locator("body")).to_have_attribute("data-ready", "1")
    options = requests.get(served.base + "/play/rule-options.json", timeout=10).json()["options"]
    for name in options:
        if name not in ("ante", "decision_timeout_s"):
            expect(page.locator(f"#rule-{name}")).to_have_count(1)
    page.get_by_label("Operator or auditor key").fill(OPERATOR)
    page.get_by_role("button", name="Use this key").click()
    page.get_by_text("Variant options").click()
    page.get_by_label("Wild cards").select_option("deuces")
    page.get_by_label("High-low (two pots)").select_option("true")
    page.get_by_label("Cards per hand").fill("3")
    page.get_by_label("Ante", exact=True).fill("2")
    page.get_by_role("button", name="Create the table").click()
    expect(page.locator("#manage")).to_be_visible()
    rules = _get(served, f"/v1/tables/{operator.text('#table-id')}", AUDITOR)["rules"]
    assert (rules["wild"], rules["hi_lo"], rules["cards"]) == ("deuces", True, 3)
    # On a hi-lo table the low pot is on the felt.
    expect(page.locator(".pots")).to_contain_text("Low pot")


def _deck() -> list[str]:
    return [rank + suit for rank in "23456789TJQKA" for suit in "shdc"]


def test_after_a_restart_the_pages_resume_the_feed_with_a_new_ticket(
    browser, contexts, tmp_path: Path
):
    """`guts serve` stops (its streams end) and starts again on the same port and data: each
    page asks for a new ticket, resumes after the last event it had, and receives what happened
    since, every event once and in order."""
    expect = _expect()
    env = _env(GUTS_OPERATOR_KEYS=OPERATOR, GUTS_AUDITOR_KEYS=AUDITOR)
    (tmp_path / "first").mkdir()
    (tmp_path / "second").mkdir()
    first = Served(tmp_path / "data", tmp_path / "first", env=env)
    second = None
    try:
        first.wait_healthy()
        _need_the_live_feed(first)
        opened = open_table(browser, contexts, first, ["alice", "bob"])
        opened.operator.page.get_by_role("button", name="Deal").click()
        for player in opened.players:
            expect(player.page.locator(".seat.mine .card")).to_have_count(3)
        assert first.terminate() == 0
        for player in opened.players:
            # The page says the feed is down while it is.
            expect(player.page.locator("#feed-state")).to_have_attribute(
                "data-state", "reconnecting"
            )
            expect(player.page.locator("#feed-state")).to_contain_text("Reconnecting")

        second = Served(tmp_path / "data", tmp_path / "second", env=env, port=first.port)
        second.wait_healthy()
        for token in opened.tokens:
            declared = requests.post(
                f"{second.base}/v1/tables/{opened.table_id}/declare",
                json={"decision": "in"},
                headers={"Authorization": f"Bearer {token}"},
                timeout=10,
            )
            assert declared.status_code == 200, declared.text
        version = _get(second, f"/v1/tables/{opened.table_id}", AUDITOR)["version"]
        for player in opened.players:
            expect(player.page.locator("#events")).to_contain_text("The decisions are revealed.")
            expect(player.page.locator("#feed-state")).to_have_attribute("data-state", "live")
            items = player.page.locator("#events li")
            expect(items.first).to_have_attribute("data-version", str(version))
            seen = [int(v) for v in items.evaluate_all("(l) => l.map((i) => i.dataset.version)")]
            # Newest first; from the deal (the first event after the page opened) to now.
            assert seen == list(range(version, seen[-1] - 1, -1)), seen
            dealt = player.page.locator("#events li[data-type='hand_dealt']")
            expect(dealt).to_have_count(1)
    finally:
        first.kill()
        if second is not None:
            second.kill()


def test_a_view_answered_late_never_replaces_a_newer_one(browser, contexts, served: Served):
    """The page fetches the table's view again after events; two fetches can answer out of
    order (one browser, several connections, two server workers). The older view, answered
    last, is dropped: the page keeps showing the newer one."""
    expect = _expect()
    table = post(served, "/v1/tables", OPERATOR, {"preset": "three-card", "ante": 1})["table_id"]
    tokens = [
        post(served, f"/v1/tables/{table}/players", OPERATOR, {"player_id": p, "buy_in": 50})[
            "token"
        ]
        for p in ("ann", "ben")
    ]
    ann = Person(browser, contexts)
    page = ann.page
    page.goto(seat_link(served, table, 0, tokens[0]))
    expect(page.locator("#feed-state")).to_have_attribute("data-state", "live")
    ann_status, ben_status = (page.locator(f".seat[data-seat='{n}'] .seat-status") for n in (0, 1))
    expect(ben_status).to_contain_text("playing")

    held: list[tuple[Any, Any]] = []  # the first view asked for after this: (route, its answer)

    def hold_the_first(route: Any) -> None:
        if held or route.request.method != "GET":
            route.continue_()
        else:
            held.append((route, route.fetch()))

    page.route(f"{served.base}/v1/tables/{table}", hold_the_first)
    post(served, f"/v1/tables/{table}/players/1/sit-out", OPERATOR)  # ben out: held
    for _ in range(WAIT_MS // 20):  # (the handler runs while Playwright is waited on)
        if held:
            break
        page.wait_for_timeout(20)
    assert held, "the page never asked for the view after ben sat out"
    ((route, older),) = held
    assert [s["status"] for s in older.json()["seats"]] == ["active", "sitting_out"]
    post(served, f"/v1/tables/{table}/players/0/sit-out", OPERATOR)  # ann out too: answered
    expect(ann_status).to_contain_text("sitting out")  # (only the newer view says so)
    expect(ben_status).to_contain_text("sitting out")
    with page.expect_event("requestfinished"):
        route.fulfill(response=older)  # the older view (ann playing) answered last
    page.wait_for_timeout(300)  # (the page reads the answer and would render it)
    expect(ann_status).to_contain_text("sitting out")
    assert ann.errors == []


@pytest.mark.parametrize("path", ["/play", "/admin"])
def test_a_key_submitted_before_the_script_runs_goes_nowhere(browser, contexts, served, path):
    """Before the page's script has wired its forms (here it never loads), the key form
    submitted by Enter or by its button loads nothing: the key never goes into a URL (a plain
    form would load the page again with ``?key=...``, as a loaded suite once did)."""
    person = Person(browser, contexts)
    page = person.page
    held: list[Any] = []
    # The page's scripts are never answered: none runs.
    page.route(f"{served.base}/play/*.js", lambda route: held.append(route))
    page.goto(served.base + path, wait_until="commit")
    secret = "a-key-that-must-stay-out-of-urls"
    page.locator("#key").fill(secret)
    page.locator("#key").press("Enter")
    page.locator("#key-form button[type=submit]").click()
    page.wait_for_timeout(300)  # (a navigation would have been asked for by now)
    assert held, "the page's script was asked for"
    assert page.url == served.base + path
    assert [url for url in person.urls if secret in url] == []
