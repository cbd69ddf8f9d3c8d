"""openapi.yaml is valid, complete, served as is, and the running server conforms to it.

The conformance test fuzzes every operation with schemathesis over real HTTP against the real
app on the test Redis, authenticated (as the operator, or as the roles each operation serves),
on tables prepared in the state each operation needs (see tests/openapi_helpers.py). It is
deterministic and bounded by default; to hunt, run it with fresh randomness and more examples:

    GUTS_FUZZ_RANDOM=1 GUTS_FUZZ_EXAMPLES=200 pytest tests/test_openapi.py -k server_conforms

Server bugs it found are listed in `openapi_helpers.BUGS`, each with a probe; all are fixed, and
`test_fixed_server_bugs_stay_fixed` fails if one comes back (the fuzzer then steps around the
cases it would hit, so the failure names the bug instead of a generated case).
"""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from openapi_spec_validator import validate
from schemathesis.checks import not_a_server_error
from schemathesis.config import ChecksConfig
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from service.api.app import SPEC_PATH, create_app
from service.config import Settings
from service.eventlog.vitals import Vitals
from tests.apiclient import AUDITOR, OPERATOR, Api
from tests.openapi_helpers import BUGS, PLAN, SpecValidator, World, aim_body, aim_path, audit_runner
from tests.spec import load_spec

SPEC_FILE = Path(__file__).resolve().parents[1] / "openapi.yaml"
METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
    negative_data_rejection,
]
# Examples per operation in the fuzzing phase (the coverage phase adds its own boundary cases).
MAX_EXAMPLES = int(os.environ.get("GUTS_FUZZ_EXAMPLES", "25"))


def _spec() -> dict[str, Any]:
    return load_spec()


# --- the document -----------------------------------------------------------------------------


def test_the_spec_is_valid_openapi():
    assert SPEC_PATH.resolve() == SPEC_FILE.resolve()  # the file the app serves is this one
    validate(_spec())


def test_every_route_is_documented_and_every_documented_operation_is_served(redis_url: str):
    app = create_app(Settings(redis_url=redis_url, token_secret="routes"))
    served = set()
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static":
            continue
        path = re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", r"{\1}", rule.rule)
        for method in rule.methods or ():
            if method not in ("HEAD", "OPTIONS"):
                served.add((method, path))
    documented = {
        (method.upper(), path)
        for path, item in _spec()["paths"].items()
        for method in item
        if method in METHODS
    }
    undocumented = sorted(served - documented)
    unserved = sorted(documented - served)
    assert not undocumented and not unserved, (
        f"served but not in openapi.yaml: {undocumented}; "
        f"in openapi.yaml but not served: {unserved}"
    )


def test_every_operation_names_its_roles_and_errors():
    spec = _spec()
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            if method not in METHODS:
                continue
            label = f"{method.upper()} {path}"
            # any request may be malformed HTTP or carry a malformed body (README "Limits")
            assert "400" in operation["responses"], f"{label} does not document 400"
            roles = operation.get("x-roles")
            first_line = operation["description"].splitlines()[0]
            assert roles and first_line.startswith("Roles: "), f"{label} names no roles"
            for role in roles:
                assert role in first_line, f"{label}: its description does not name {role}"
            if path.startswith("/v1/"):
                assert "security" not in operation, f"{label} must need a credential"
                assert {"401", "503"} <= set(operation["responses"]), label
                if method in ("post", "delete"):
                    assert {"400", "413", "422"} <= set(operation["responses"]), label
            else:
                assert operation["security"] == [], f"{label} needs no credential"


def test_the_served_spec_is_the_file(api: Api):
    served = api.get("/openapi.yaml", token=None)
    assert served.status_code == 200
    assert served.headers["Content-Type"].startswith("application/yaml")
    assert served.content == SPEC_FILE.read_bytes()


def test_the_docs_page_is_swagger_ui_from_this_server_under_the_plays_policy(api: Api):
    """(tests/browser/test_docs.py loads it in a browser and finds every operation.)"""
    from service.api.play_page import CONTENT_SECURITY_POLICY

    page = api.get("/docs", token=None)
    assert page.status_code == 200
    assert page.headers["Content-Type"].startswith("text/html")
    assert page.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    loaded = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert loaded and all(url.startswith("/") for url in loaded), loaded  # this host only
    assert "<script>" not in page.text  # no inline script
    for url in loaded:
        if url.startswith("/docs/"):
            asset = api.get(url, token=None)
            assert asset.status_code == 200, url
            assert asset.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert "SwaggerUIBundle" in api.get("/docs/swagger-ui-bundle.js", token=None).text
    assert api.get("/docs/index.html", token=None).status_code == 404


# --- problems ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status"),
    [
        ("GET", "/v1/tables/{table}", {"token": None}, 401),
        ("GET", "/v1/tables/{table}", {"token": "not-a-key"}, 401),
        ("POST", "/v1/tables", {"token": AUDITOR, "body": {}}, 403),
        ("GET", "/v1/tables/nope", {}, 404),
        ("POST", "/v1/tables/{table}/resolve", {}, 409),
        ("POST", "/v1/tables/{table}/deal", {"headers": {"If-Match": '"999"'}}, 412),
        ("POST", "/v1/tables/{table}/deal", {"headers": {"If-Match": "soon"}}, 400),
        ("POST", "/v1/tables/{table}/players", {"body": {"player_id": "x y"}}, 422),
        ("GET", "/v1/tables/{table}/events", {"params": {"limit": 0}}, 422),
        (
            "POST",
            "/v1/tables/{table}/deal",
            {"headers": {"Content-Type": "text/plain"}, "data": b"hi"},
            415,
        ),
        ("POST", "/v1/tables", {"data": b"x" * 70_000}, 413),
    ],
)
def test_problems_are_problem_json_with_a_title_and_a_detail(
    api: Api, method, path, kwargs, status
):
    table = api.table()
    kwargs = dict(kwargs)
    body = kwargs.pop("body", None)
    response = api.call(method, path.format(table=table), body, **kwargs)
    assert response.status_code == status, response.text
    assert response.headers["Content-Type"] == "application/problem+json"
    problem = response.json()
    assert problem["status"] == status
    assert problem["title"].strip() and problem["detail"].strip()
    assert problem["type"].startswith("https://")
    if status == 401:
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
    if status == 422:
        assert problem["errors"], "a validation failure names its fields"
    documented = _spec()["paths"][
        path.replace("{table}", "{table_id}").replace("/nope", "/{table_id}")
    ]
    assert str(status) in documented[method.lower()]["responses"]


# --- every preset's responses -----------------------------------------------------------------


TABLES = [
    ("three-card", {}),
    ("two-card", {}),
    ("monte-carlo", {}),
    ("survivor", {}),
    ("kitty", {}),
    ("three-card", {"hi_lo": True, "ante": 2}),
    ("three-card", {"draw": 2}),
    ("kitty", {"draw": 1, "betting_round": True, "match_basis": "after_betting"}),
    ("three-card", {"community_cards": 1}),
    ("three-card", {"pass_the_trash": True}),
    ("three-card", {"no_peek": True, "wild": "deuces"}),
]


@pytest.mark.parametrize(
    ("preset", "rules"), TABLES, ids=[f"{p}{''.join(f'-{k}' for k in r)}" for p, r in TABLES]
)
def test_a_hand_of_every_kind_conforms_for_every_viewer(
    api: Api, redis_client: Any, preset: str, rules: dict[str, Any]
):
    """The response shapes that vary with the rules and the viewer (sequential turns, kitty,
    cover grace, two pots, passes, draws, community card, redaction) on a whole hand, a voided
    one, seat commands and an audit, checked against the spec."""
    check = SpecValidator(_spec())
    t = "/v1/tables/{table_id}"
    table = f"spec-{preset}-{secrets.token_hex(4)}"

    def call(method: str, template: str, body: Any = None, token: str | None = OPERATOR) -> Any:
        path = template.format(table_id=table, seat=0, hand=1)
        return check(method, template, api.call(method, path, body, token=token))

    call("POST", "/v1/tables", {"table_id": table, "preset": preset, "rules": rules})
    tokens = {}
    for i in range(3):
        seated = call("POST", t + "/players", {"player_id": f"p{i}", "buy_in": 100})
        tokens[seated["seat"]] = seated["token"]
    viewers = [OPERATOR, AUDITOR, *tokens.values()]
    call("POST", t + "/deal", {"client_seed": "spec"})
    decisions = iter(["high", "low", "both"] if rules.get("hi_lo") else ["in", "out", "in"])
    while (hand := call("GET", t)["hand"]) and hand["phase"] != "showdown":
        views = {viewer: call("GET", t, token=viewer) for viewer in viewers}
        call("GET", t + "/events", token=viewers[len(hand["declared"]) % len(viewers)])
        if hand["phase"] == "passing":
            seat = next(s for s in hand["order"] if s not in hand["passed"])
            card = views[tokens[seat]]["hand"]["cards"][0]
            call("POST", t + "/pass", {"card": card}, tokens[seat])
        elif hand["phase"] == "drawing":
            seat = hand["drawing_turn"]
            discard = views[tokens[seat]]["hand"]["cards"][:1]
            call("POST", t + "/draw", {"discard": discard}, tokens[seat])
        elif hand["phase"] == "betting":
            betting = hand["betting"]
            action = "call" if betting["to_call"] else ("bet", "raise")[betting["raises"] % 2]
            call("POST", t + "/bet", {"action": action}, tokens[betting["turn"]])
        else:
            seat = hand.get("on_turn")
            if seat is None:
                seat = next(s for s in hand["order"] if s not in hand["declared"])
            call("POST", t + "/declare", {"decision": next(decisions, "out")}, tokens[seat])
    if hand is not None:
        for viewer in viewers:
            call("GET", t, token=viewer)
        call("POST", t + "/resolve")
    for viewer in viewers:
        call("GET", t + "/hands/{hand}", token=viewer)
        call("GET", t + "/events", token=viewer)
    if rules.get("draw"):
        assert ("POST", t + "/draw", 200) in check.checked
    if rules.get("pass_the_trash"):
        assert ("POST", t + "/pass", 200) in check.checked
    if rules.get("betting_round"):
        assert ("POST", t + "/bet", 200) in check.checked
    path = f"/v1/tables/{table}/hands/1"
    phh = check("GET", t + "/hands/{hand}", api.get(path, params={"format": "phh"}), False)
    assert "variant" in phh
    # Hand 2 mixes in a player's seed (context v2); every viewer's events show its choice.
    call("PUT", t + "/players/{seat}/client-seed", {"client_seed": "spec|v2"}, tokens[0])
    for viewer in viewers:
        call("GET", t + "/events", token=viewer)
    if call("POST", t + "/deal", {})["hand"]:
        call("POST", t + "/void", {"reason": "spec check"})
    path = f"/v1/tables/{table}/hands/2"
    for viewer in viewers:
        history = check("GET", t + "/hands/{hand}", api.get(path, token=viewer))
        assert history["status"] == "cancelled"
    call("POST", t + "/players/{seat}/chips", {"amount": 5})
    call("POST", t + "/players/{seat}/sit-out")
    call("POST", t + "/players/{seat}/sit-in")
    call("DELETE", t + "/players/{seat}", token=tokens[0])
    audit = call("POST", t + "/audit", token=AUDITOR)["audit_id"]
    audit_runner(redis_client)()
    report = check("GET", "/v1/audits/{audit_id}", api.get(f"/v1/audits/{audit}", token=AUDITOR))
    assert report["status"] == "finished" and report["result"]["ok"], report


# --- the server against the spec --------------------------------------------------------------


schema = schemathesis.openapi.from_path(SPEC_FILE)
schema.config.generation.update(
    max_examples=MAX_EXAMPLES,
    deterministic=not os.environ.get("GUTS_FUZZ_RANDOM"),
    database="none",
    with_security_parameters=False,
)
# Any 4xx rejects a request the spec calls invalid: a stale If-Match (412) or an oversized body
# (413) may be what the server noticed first. (5xx are failures of their own, above.)
schema.config.checks = ChecksConfig.from_dict(
    {"negative_data_rejection": {"expected-statuses": ["4XX", "5XX"]}}
)


@pytest.fixture(scope="module")
def reproducing(sandbox_url: str) -> set[str]:
    """The known server bugs that still reproduce (probed once)."""
    api = Api(sandbox_url)
    return {name for name, bug in BUGS.items() if bug.reproduces(api)}


@pytest.mark.parametrize("name", sorted(BUGS))
def test_fixed_server_bugs_stay_fixed(api: Api, name: str):
    """Every bug the fuzzer once found has a probe; none may reproduce again."""
    bug = BUGS[name]
    assert not bug.reproduces(api), bug.summary


@pytest.fixture
def world(api: Api, redis_client: Any) -> World:
    return World(api, audit_runner(redis_client))


# The live stream stays open (tests/api/test_stream.py checks it over HTTP), so the fuzzer
# skips it; everything else is fuzzed.
@schema.exclude(operation_id="streamEvents").parametrize()
# The fixtures are session-wide servers and a `World` that rebuilds what a case may change.
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_the_server_conforms_to_the_spec(
    case: Any, api: Api, world: World, reproducing: set[str], redis_client: Any
) -> None:
    if case.path in ("/readyz", "/healthz"):  # ready: a dispatcher and an archiver are there
        vitals = Vitals(redis_client, prefix="guts")
        vitals.beat("a-dispatcher")
        vitals.report_archive_lag(0, 0)
    hits = [BUGS[name] for name in sorted(reproducing) if BUGS[name].hits(case)]
    if any(not bug.excuses for bug in hits):
        return
    excused = {name for bug in hits for name in bug.excuses}
    checks = [check for check in CHECKS if check.__name__ not in excused]
    state, who = PLAN.get((case.method, case.path), (None, OPERATOR))
    table = world.table(state) if state else None
    aim_path(case, table)
    credential, acting = world.credential(who, table, (case.path_parameters or {}).get("seat"))
    aim_body(case, table, acting)
    headers = {"Authorization": f"Bearer {credential}"}
    sent = {"base_url": api.base, "session": api.session, "headers": headers}
    response = case.call(**sent)
    if state is not None and case.method != "GET" and response.status_code < 400:
        world.changed(state)  # a refused command wrote nothing; this one may have
    case.validate_response(response, checks, headers=headers, transport_kwargs=sent)
