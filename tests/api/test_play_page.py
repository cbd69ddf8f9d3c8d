"""The reference web client's files as the server serves them (no browser: see tests/browser)."""

from __future__ import annotations

import re

import pytest

from service.api.play_page import ASSETS
from tests.apiclient import Api


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
