"""What operators watch: one JSON access-log line per request, and the Prometheus metrics
(requests by route and status, commands by type and outcome, latency by route)."""

from __future__ import annotations

import json
import re

from tests.apiclient import Api
from tests.metrics import samples


def _metric(api: Api, name: str, **labels: str) -> float:
    """The value of one sample on /metrics (0 when it is not there yet)."""
    found = samples(api.get("/metrics", token=None).text).get(name, [])
    return next((value for have, value in found if have == labels), 0.0)


def test_commands_are_counted_by_type_and_outcome_and_timed_by_route(api: Api):
    table = api.table("three-card")
    tokens = [api.seat(table, f"p{i}")["token"] for i in range(2)]
    api.post(f"/v1/tables/{table}/deal")
    route = "/v1/tables/<table_id>/declare"
    before = {
        "ok": _metric(api, "guts_commands_total", command="declare", outcome="ok"),
        "refused": _metric(api, "guts_commands_total", command="declare", outcome="refused"),
        "timed": _metric(api, "guts_request_seconds_count", endpoint=route),
        "409": _metric(api, "guts_requests_total", endpoint=route, method="POST", status="409"),
    }
    assert api.post(f"/v1/tables/{table}/declare", {"decision": "in"}, token=tokens[0]).ok
    twice = api.post(f"/v1/tables/{table}/declare", {"decision": "in"}, token=tokens[0])
    assert twice.status_code == 409
    assert _metric(api, "guts_commands_total", command="declare", outcome="ok") == before["ok"] + 1
    refused = _metric(api, "guts_commands_total", command="declare", outcome="refused")
    assert refused == before["refused"] + 1
    assert _metric(api, "guts_request_seconds_count", endpoint=route) == before["timed"] + 2
    statuses = _metric(api, "guts_requests_total", endpoint=route, method="POST", status="409")
    assert statuses == before["409"] + 1
    exposed = api.get("/metrics", token=None).text
    assert re.search(r"^guts_version_conflicts_total \d", exposed, re.MULTILINE), exposed


def test_every_request_logs_one_line_with_its_route_table_and_command(api: Api, capsys):
    table = api.table("three-card")
    capsys.readouterr()
    api.seat(table, "p0")
    assert api.get(f"/v1/tables/{table}/nowhere").status_code == 404
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line]
    seated, missing = [line for line in lines if "endpoint" in line]
    assert seated["endpoint"] == "/v1/tables/<table_id>/players"
    assert (seated["method"], seated["status"], seated["table_id"]) == ("POST", 201, table)
    assert seated["command"] == "seat_player" and seated["ms"] > 0
    assert missing["endpoint"] == "unmatched" and missing["status"] == 404
    assert missing["command"] is None and missing["table_id"] is None


def test_without_redis_every_503_says_when_to_retry(redis_url: str) -> None:
    from service.api.app import create_app
    from service.config import Settings
    from service.processes.redis_server import free_port

    dead = f"redis://127.0.0.1:{free_port()}/0"
    settings = Settings(redis_url=dead, operator_keys=("op",), token_secret="s")
    client = create_app(settings).test_client()
    for path in ("/healthz", "/v1/tables/t1"):
        answer = client.get(path, headers={"Authorization": "Bearer op"})
        assert answer.status_code == 503, (path, answer.data)
        assert answer.headers["Retry-After"] == "1"


def test_a_service_that_keeps_no_ledger_answers_503_not_500(redis_client, redis_url: str):
    """Every refusal has its status: `LedgerUnavailable` (a process built without a ledger)
    was unmapped, a 500."""
    from service.api.app import create_app
    from service.config import Settings

    settings = Settings(redis_url=redis_url, operator_keys=("op",), token_secret="t")
    app = create_app(settings)
    app.extensions["guts"].usecases.ledger = None
    answer = app.test_client().get("/v1/ledger", headers={"Authorization": "Bearer op"})
    assert answer.status_code == 503, answer.get_data(as_text=True)
    assert answer.mimetype == "application/problem+json"
    assert answer.json["title"] == "Unavailable" and answer.headers["Retry-After"]
