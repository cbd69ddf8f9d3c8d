"""The interactive API reference `/docs` in Debian's Chromium: Swagger UI renders every
operation of openapi.yaml, from files this server sends, with no Content-Security-Policy
violation and no request to another host."""

from __future__ import annotations

from typing import Any

from tests.apiclient import Api
from tests.spec import load_spec

METHODS = ("get", "post", "put", "patch", "delete")
WAIT_MS = 20_000  # how long the page may take to render the spec (a bound, not a timing)


def test_docs_renders_every_operation_under_the_plays_policy(
    api: Api, browser: Any, contexts: list[Any]
):
    from playwright.sync_api import expect

    spec = load_spec()
    operations = {
        (method, path, op["operationId"])
        for path, item in spec["paths"].items()
        for method, op in item.items()
        if method in METHODS
    }
    context = browser.new_context()
    contexts.append(context)
    page_errors: list[str] = []
    console: list[str] = []
    urls: list[str] = []
    context.on("request", lambda request: urls.append(request.url))
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    page.on("pageerror", lambda error: page_errors.append(str(error)))
    page.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
    page.goto(f"{api.base}/docs")
    expect(page.locator(".opblock")).to_have_count(len(operations))
    shown = {
        (
            block.locator(".opblock-summary-method").inner_text().strip().lower(),
            block.locator(".opblock-summary-path").get_attribute("data-path"),
            block.locator(".opblock-summary-operation-id").inner_text().strip(),
        )
        for block in page.locator(".opblock").all()
    }
    assert shown == operations, sorted(operations ^ shown)
    violations = [line for line in console if "Content Security Policy" in line]
    assert not violations, violations
    assert not page_errors, page_errors
    assert not [line for line in console if line.startswith("error")], console
    assert urls and all(url.startswith(api.base) for url in urls), urls
