"""The reference web client's files as the server serves them (no browser: see tests/browser)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from service.api.play_page import ASSETS, LANGUAGES
from service.projections.webhook_messages import EVENT_NAMES
from service.rules.events import EVENT_TYPES
from service.rules.ruleset import OPTION_NAMES, PRESETS
from tests.apiclient import Api

WEB = Path(__file__).resolve().parents[2] / "service" / "api" / "web"


def test_the_page_and_its_files_are_served_with_a_strict_policy(api: Api):
    page = api.get("/play", token=None)
    assert page.status_code == 200
    assert page.headers["Content-Type"].startswith("text/html")
    policy = page.headers["Content-Security-Policy"]
    assert "default-src 'none'" in policy and "script-src 'self'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert page.headers["Referrer-Policy"] == "no-referrer"
    for name, media_type in ASSETS.items():
        served = api.get(f"/play/{name}", token=None)
        assert served.status_code == 200, name
        assert served.headers["Content-Type"].startswith(media_type), name
        assert served.headers["Content-Security-Policy"] == policy


def test_the_page_loads_only_its_own_files_and_nothing_inline(api: Api):
    html = api.get("/play", token=None).text
    sources = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert sources and all(s.startswith("/play/") for s in sources), sources
    for source in sources:
        assert source.removeprefix("/play/") in ASSETS
    assert "<script>" not in html and "<style" not in html and " style=" not in html
    assert not re.search(r"\son[a-z]+=", html)  # no inline event handlers either


@pytest.mark.parametrize("name", ["nope.js", "play.html", "..%2Fapp.py", "PLAY.JS"])
def test_any_other_file_is_404_problem_json(api: Api, name: str):
    response = api.get(f"/play/{name}", token=None)
    assert response.status_code == 404
    assert response.headers["Content-Type"] == "application/problem+json"
    assert response.json()["title"] == "Not Found"


def test_the_back_office_loads_only_files_under_play_and_nothing_inline(api: Api):
    page = api.get("/admin", token=None)
    assert page.status_code == 200 and page.headers["Content-Type"].startswith("text/html")
    assert (
        page.headers["Content-Security-Policy"]
        == api.get("/play", token=None).headers["Content-Security-Policy"]
    )
    sources = re.findall(r'(?:src|href)="(/[^"]+)"', page.text)
    assert sources and all(s.removeprefix("/play/") in ASSETS for s in sources), sources
    assert "<script>" not in page.text and " style=" not in page.text
    assert not re.search(r"\son[a-z]+=", page.text)


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_strings_are_served_under_the_same_policy(api: Api, language: str):
    served = api.get(f"/play/strings/{language}.json", token=None)
    assert served.status_code == 200
    assert served.headers["Content-Type"].startswith("application/json")
    assert "default-src 'none'" in served.headers["Content-Security-Policy"]
    assert served.json() == json.loads((WEB / "strings" / f"{language}.json").read_text())
    missing = api.get("/play/strings/xx.json", token=None)
    assert missing.status_code == 404 and missing.json()["title"] == "Not Found"


def test_the_creation_form_offers_every_ruleset_option(api: Api):
    served = api.get("/play/rule-options.json", token=None).json()
    assert list(served["options"]) == list(OPTION_NAMES)
    assert set(served["presets"]) == set(PRESETS)
    assert served["options"]["wild"] == {
        "kind": "choice",
        "choices": ["none", "deuces", "one_eyed_jacks"],
        "default": "none",
    }


def test_the_back_office_offers_every_webhook_event():
    script = (WEB / "admin-panels.js").read_text()
    listed = re.search(r"export const WEBHOOK_EVENTS = \[([^\]]*)\]", script)
    assert listed is not None
    assert re.findall(r'"([a-z_]+)"', listed.group(1)) == list(EVENT_NAMES)


def test_the_live_feed_listens_for_every_event_type_the_rules_define():
    """EventSource hands a page only the event types it listens for: one the rules define and
    feed.js does not name would never reach the page (as the protection events did not)."""
    script = (WEB / "feed.js").read_text()
    listed = re.search(r"export const EVENT_TYPES = \[([^\]]*)\]", script)
    assert listed is not None
    assert sorted(re.findall(r'"([a-z_]+)"', listed.group(1))) == sorted(EVENT_TYPES)


def test_every_event_type_the_rules_define_is_put_in_words():
    """The live log words each event type (words.js: the SIMPLE table or a `case`), so a new
    event type cannot be left to show as its raw name; test_strings.py checks that the keys
    those words use are in both string tables."""
    script = (WEB / "words.js").read_text()
    simple = re.search(r"const SIMPLE = \{([^}]*)\}", script)
    assert simple is not None
    worded = set(re.findall(r"^\s*([a-z_]+):", simple.group(1), re.MULTILINE))
    worded |= set(re.findall(r'case "([a-z_]+)":', script))
    missing = sorted(set(EVENT_TYPES) - worded)
    assert not missing, f"event types with no words in words.js: {missing}"
