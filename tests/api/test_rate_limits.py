"""Rate limits hold across API nodes: two servers on one Redis, many concurrent clients, and
never more admitted in a window than the limit; over it, 429 problem+json with Retry-After.

The windows here are a minute long, so a burst of requests all falls in one window whatever
the machine's speed, and exactly the limit is admitted (the counting is a moving window kept
in Redis: ``service.api.rate_limits``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import requests

from service.api.rate_limits import RateLimited, RateLimits
from service.application.access import Caller
from service.config import Settings
from service.rules.views import OPERATOR as OPERATOR_ROLE
from tests.apiclient import AUDITOR, OPERATOR, Api

Ask = Callable[[Api], requests.Response]


def _burst(nodes: list[Api], ask: Ask, count: int) -> list[requests.Response]:
    """`count` requests at once from 16 threads, alternating between `nodes`."""
    turns = itertools.cycle(nodes)
    targets = [next(turns) for _ in range(count)]
    with ThreadPoolExecutor(16) as pool:
        return list(pool.map(ask, targets))


def _check_refusal(answer: requests.Response, window_s: int) -> None:
    assert answer.headers["Content-Type"] == "application/problem+json"
    problem = answer.json()
    assert (problem["status"], problem["title"]) == (429, "Too Many Requests")
    assert problem["type"].endswith("/too-many-requests")
    assert problem["request_id"] == answer.headers["X-Request-Id"]
    assert 1 <= int(answer.headers["Retry-After"]) <= window_s


@pytest.fixture
def two_nodes(api: Api, serve_with: Callable[..., Api]) -> Callable[..., list[Api]]:
    """Two API servers on the suite's (flushed) Redis with the rate limits given."""

    def start(**limits: Any) -> list[Api]:
        return [serve_with(**limits), serve_with(**limits)]

    return start


def test_failed_authentications_per_address_hold_across_nodes(two_nodes):
    nodes = two_nodes(rate_limit_auth_failures="10/minute")
    guess = lambda node: node.get("/v1/tables", token="a-wrong-guess")  # noqa: E731
    answers = _burst(nodes, guess, 40)
    statuses = sorted(a.status_code for a in answers)
    assert statuses == [401] * 10 + [429] * 30
    for answer in answers:
        if answer.status_code == 429:
            _check_refusal(answer, 60)
    # The address is held off whatever it sends now, a good key included, on either node.
    for node in nodes:
        held = node.get("/v1/tables")
        assert held.status_code == 429
        _check_refusal(held, 60)


def test_commands_per_player_token_hold_across_nodes(two_nodes):
    nodes = two_nodes(rate_limit_commands="6/minute")
    table = nodes[0].table("three-card")
    token = nodes[0].seat(table, "p0")["token"]
    nodes[0].seat(table, "p1")
    command = lambda node: node.post(  # noqa: E731
        f"/v1/tables/{table}/players/0/sit-out", token=token
    )
    answers = _burst(nodes, command, 30)
    admitted = [a for a in answers if a.status_code != 429]
    assert len(admitted) == 6, [a.status_code for a in answers]
    assert all(a.status_code in (200, 409) for a in admitted)
    for answer in answers:
        if answer.status_code == 429:
            _check_refusal(answer, 60)
    # Reading is not a command; another player's token has its own count.
    assert nodes[1].get(f"/v1/tables/{table}", token=token).status_code == 200
    other = nodes[1].seat(table, "p2")["token"]
    assert nodes[1].post(f"/v1/tables/{table}/players/2/sit-out", token=other).status_code != 429


def test_a_players_command_over_the_limit_writes_nothing_and_every_kind_counts(two_nodes):
    """Counted at the table: a command refused before it reaches it (a body that does not
    parse), one the rules refuse and one that writes all use up the same count, on either
    node; over it, a command that would have written is 429 and writes nothing."""
    nodes = two_nodes(rate_limit_commands="3/minute")
    table = nodes[0].table("three-card")
    token = nodes[0].seat(table, "p0")["token"]
    other = nodes[0].seat(table, "p1")["token"]
    declare = f"/v1/tables/{table}/declare"
    assert nodes[0].post(declare, {"decision": "maybe"}, token=token).status_code == 422
    assert nodes[1].post(declare, {"decision": "in"}, token=token).status_code == 409  # no hand
    assert nodes[1].post(declare, {"decision": "maybe"}, token=token).status_code == 422
    assert nodes[0].post(f"/v1/tables/{table}/deal", {}).status_code == 201
    version = nodes[0].get(f"/v1/tables/{table}").json()["version"]
    for node in nodes:
        refused = node.post(declare, {"decision": "in"}, token=token)
        assert refused.status_code == 429, refused.text
        _check_refusal(refused, 60)
    assert nodes[0].get(f"/v1/tables/{table}").json()["version"] == version
    # The same command with a token under its limit writes (the other seat's: its own count).
    assert nodes[1].post(declare, {"decision": "in"}, token=other).status_code == 200
    assert nodes[0].get(f"/v1/tables/{table}").json()["version"] == version + 1


def test_requests_per_key_follow_the_tenants_limit_across_nodes(two_nodes):
    nodes = two_nodes(rate_limit_tenants={"default": "8/minute"})
    answers = _burst(nodes, lambda node: node.get("/v1/tables"), 30)
    assert sorted(a.status_code for a in answers) == [200] * 8 + [429] * 22
    for answer in answers:
        if answer.status_code == 429:
            _check_refusal(answer, 60)
    # Each key is counted apart: the auditor still gets in.
    assert nodes[1].get("/v1/tables", token=AUDITOR).status_code == 200


def test_without_limits_nothing_is_refused(two_nodes):
    nodes = two_nodes()  # the suite's servers: no limits
    answers = _burst(nodes, lambda node: node.get("/v1/tables", token="a-wrong-guess"), 40)
    assert {a.status_code for a in answers} == {401}


def test_the_limits_are_kept_on_a_redis_cluster_too(redis_cluster: Any, cluster_client: Any):
    settings = Settings(
        redis_url=redis_cluster.url,
        redis_cluster=True,
        queue_redis_url="redis://127.0.0.1:1/0",
        rate_limit_keys="5/minute",
    )
    nodes = [RateLimits(settings), RateLimits(settings)]  # two API nodes' limiters
    caller = Caller(OPERATOR_ROLE, tenant="default")
    admitted = 0
    for node in itertools.islice(itertools.cycle(nodes), 12):
        try:
            node.admit(caller, f"Bearer {OPERATOR}", "GET")
            admitted += 1
        except RateLimited as refused:
            assert 1 <= refused.retry_after_s <= 60
    assert admitted == 5


def test_a_rate_that_cannot_be_read_is_refused_at_start():
    with pytest.raises(ValueError, match="GUTS_RATE_LIMIT_COMMANDS"):
        Settings(rate_limit_commands="ten a second")
    with pytest.raises(ValueError, match="GUTS_RATE_LIMIT_TENANTS"):
        Settings.from_env({"GUTS_RATE_LIMIT_TENANTS": "casino-a"})


def test_without_redis_a_limited_request_is_503_not_500(serve_with: Callable[..., Api]):
    from service.processes.redis_server import free_port

    dead = serve_with(
        redis_url=f"redis://127.0.0.1:{free_port()}/0",
        rate_limit_keys="5/minute",
        rate_limit_auth_failures="5/minute",
    )
    for token in (OPERATOR, "a-wrong-guess"):
        answer = dead.get("/v1/tables", token=token)
        assert answer.status_code == 503, answer.text
        assert answer.headers["Retry-After"] == "1"
