"""The API under test: the real app, served over real HTTP from a thread, on the test Redis.

Loaded as a pytest plugin by tests/conftest.py, so every test package can use `api`.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from werkzeug.serving import make_server

from service.api.app import create_app
from service.config import SHORTCUTS, Settings

OPERATOR = "op-key-for-tests"
AUDITOR = "aud-key-for-tests"


class Api:
    """A thin HTTP client: every call returns the `requests.Response`."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.session = requests.Session()
        self.session.trust_env = False  # (no proxy or netrc look-ups per request)

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        token: str | None = OPERATOR,
        headers: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> requests.Response:
        sent = dict(headers or {})
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        return self.session.request(
            method, self.base + path, json=body, headers=sent, timeout=30, **kwargs
        )

    def get(self, path: str, **kw: Any) -> requests.Response:
        return self.call("GET", path, **kw)

    def post(self, path: str, body: Any = None, **kw: Any) -> requests.Response:
        return self.call("POST", path, body, **kw)

    def delete(self, path: str, **kw: Any) -> requests.Response:
        return self.call("DELETE", path, **kw)

    # Conveniences for building games.
    def table(self, preset: str = "three-card", table_id: str | None = None, **rules: Any) -> str:
        """A new table of `preset` with `rules` (named `table_id`, else as the service draws)."""
        named = {} if table_id is None else {"table_id": table_id}
        response = self.post("/v1/tables", {"preset": preset, "rules": rules, **named})
        assert response.status_code == 201, response.text
        return str(response.json()["table_id"])

    def rules_table(self, players: int, **rules: Any) -> tuple[str, list[str]]:
        """A three-card table with `rules` and `players` seated; its id and the tokens."""
        table = self.table("three-card", **rules)
        return table, [self.seat(table, f"p{i}")["token"] for i in range(players)]

    def own_cards(self, table: str, token: str) -> list[str]:
        """The cards the player holding `token` sees in the hand in play."""
        return list(self.get(f"/v1/tables/{table}", token=token).json()["hand"]["cards"])

    def seat(self, table: str, player: str, buy_in: int = 100, **extra: Any) -> dict[str, Any]:
        body = {"player_id": player, "buy_in": buy_in, **extra}
        response = self.post(f"/v1/tables/{table}/players", body)
        assert response.status_code == 201, response.text
        return dict(response.json())


SERVED: dict[str, Any] = {}
"""The app behind each test server's URL (they run in this process)."""


def _settings(redis_url: str, sandbox: bool, database_url: str | None = None) -> Settings:
    return Settings(
        redis_url=redis_url,
        database_url=database_url,
        operator_keys=(OPERATOR,),
        auditor_keys=(AUDITOR,),
        sandbox=sandbox,
        token_secret="test-token-secret",
        key_prefix="guts",
        allow_private_urls=True,  # (the tests' wallets and receivers are on 127.0.0.1)
    )


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--plain-requests",
        action="store_true",
        help="serve the API without its shortcuts around libraries (service.config.SHORTCUTS): "
        "the plain path, every request read through Flask, every command through redis-py's "
        "public API",
    )


def _serve(settings: Settings, config: pytest.Config) -> Iterator[str]:
    if config.getoption("--plain-requests"):
        settings = dataclasses.replace(settings, shortcuts_off=SHORTCUTS)
    app = create_app(settings)
    # werkzeug's server closes every connection (`Connection: close`): a request is a new
    # connection and a new thread. Keeping connections open cannot be added to it: after each
    # response it reads, for 10 ms, whatever the client sends next and throws it away (so that
    # an unread body cannot be taken for a request), and on a kept connection that is the next
    # request (tried 2026-12-07: the client waited for its answer forever).
    server = make_server("127.0.0.1", 0, app, threaded=True)
    SERVED[f"http://127.0.0.1:{server.server_port}"] = app
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        app.extensions["guts"].feed.close("the test server is stopping")
        server.shutdown()
        thread.join(5)


@pytest.fixture(scope="session")
def sandbox_url(redis_url: str, database_url: str, pytestconfig: pytest.Config) -> Iterator[str]:
    yield from _serve(_settings(redis_url, True, database_url), pytestconfig)


@pytest.fixture(scope="session")
def production_url(redis_url: str, database_url: str, pytestconfig: pytest.Config) -> Iterator[str]:
    yield from _serve(_settings(redis_url, False, database_url), pytestconfig)


@pytest.fixture
def clean_archive(database_url: str, archive_admin: Any) -> str:
    """The session's archive, emptied if a test left anything in it (Redis is flushed for
    each test, so an archive that outlived its tables would disagree with them)."""
    archive_admin.empty(only_if_used=True)
    return database_url


@pytest.fixture
def api(sandbox_url: str, redis_client: Any, clean_archive: str) -> Api:
    """A client of the sandbox server, on an empty Redis (and archive)."""
    return Api(sandbox_url)


@pytest.fixture(scope="session")
def plain_url(redis_url: str, pytestconfig: pytest.Config) -> Iterator[str]:
    """A sandbox server without an archive (the ledger is then a Redis projection)."""
    yield from _serve(_settings(redis_url, True), pytestconfig)


@pytest.fixture
def serve_with(redis_url: str, database_url: str, pytestconfig: pytest.Config) -> Iterator[Any]:
    """Start another API server on the suite's Redis with settings changed: `serve_with(
    database_url=...)`."""
    started: list[Iterator[str]] = []

    def serve(**changes: Any) -> Api:
        settings = dataclasses.replace(_settings(redis_url, True, database_url), **changes)
        served = _serve(settings, pytestconfig)
        started.append(served)
        return Api(next(served))

    yield serve
    for served in started:
        next(served, None)


@pytest.fixture
def plain_api(plain_url: str, redis_client: Any, monkeypatch: pytest.MonkeyPatch) -> Api:
    """A client of the server without an archive, on an empty Redis; jobs run without one."""
    monkeypatch.delenv("GUTS_DATABASE_URL", raising=False)
    return Api(plain_url)


@pytest.fixture
def production_api(production_url: str, redis_client: Any, clean_archive: str) -> Api:
    """A client of a server without GUTS_SANDBOX."""
    return Api(production_url)


TENANT_A, TENANT_B, REGULATOR = "key-of-casino-a", "key-of-casino-b", "key-of-regulator"
AUDITOR_A = "auditor-of-casino-a"


class As(Api):
    """A client that sends `key` unless told otherwise."""

    def __init__(self, base: str, key: str) -> None:
        super().__init__(base)
        self.key = key

    def call(self, method: str, path: str, body: Any = None, token: Any = "", **kw: Any) -> Any:
        return super().call(method, path, body, token=self.key if token == "" else token, **kw)


@pytest.fixture(scope="session")
def tenants_url(redis_url: str, database_url: str, pytestconfig: pytest.Config) -> Iterator[str]:
    """A sandbox server whose keys belong to tenants: operators of casino-a and casino-b, an
    auditor of casino-a and a regulator (an auditor of every tenant)."""
    settings = Settings(
        redis_url=redis_url,
        operator_keys=(f"casino-a:{TENANT_A}", f"casino-b:{TENANT_B}"),
        auditor_keys=(f"*:{REGULATOR}", f"casino-a:{AUDITOR_A}"),
        database_url=database_url,
        sandbox=True,
        token_secret="test-token-secret",
        key_prefix="guts",
        allow_private_urls=True,  # (the tests' wallets and receivers are on 127.0.0.1)
    )
    yield from _serve(settings, pytestconfig)


@pytest.fixture
def casino_a(tenants_url: str, redis_client: Any, clean_archive: str) -> As:
    """casino-a's operator, on an empty Redis."""
    return As(tenants_url, TENANT_A)


@pytest.fixture
def casino_b(tenants_url: str, redis_client: Any, clean_archive: str) -> As:
    """casino-b's operator, on an empty Redis."""
    return As(tenants_url, TENANT_B)


def follow_webhooks(api: Api, table: str) -> None:
    """Derive the webhook deliveries of `table`'s new events now, as the dispatchers' follower
    does (the test servers run none)."""
    from service.eventlog.redis_store import RedisEventStore
    from service.projections.follower import Follower
    from service.projections.webhooks import WebhookStore

    client = SERVED[api.base].extensions["guts"].redis
    Follower(RedisEventStore(client), [WebhookStore(client)]).catch_up(table)


KEEP = 4
"""How many events the archived test server's store keeps in Redis once archived."""


@pytest.fixture(scope="session")
def archived_url(redis_url: str, database_url: str, pytestconfig: pytest.Config) -> Iterator[str]:
    """A sandbox server with an archive in the session's PostgreSQL (keeping `KEEP` events)."""
    settings = dataclasses.replace(
        _settings(redis_url, True, database_url), archive_keep_events=KEEP
    )
    yield from _serve(settings, pytestconfig)


@pytest.fixture
def archived_api(archived_url: str, redis_client: Any, empty_archive: str) -> Api:
    """A client of the archived server, on an empty Redis and an empty archive."""
    return Api(archived_url)
