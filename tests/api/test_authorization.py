"""Every endpoint x every kind of caller -> the expected status: the roles (operator, auditor,
players of this table and of another), and the tenants (another casino's operator and auditor
do not find the table; a regulator reads every casino's).

Each cell asks one thing of a scene (a table in a stage, and what the request names). Most
cells change nothing (a refusal, a read), so a cell takes the scene the cell before it left as
it was made, while Redis has counted no write since (`Kept`); a cell whose request wrote
leaves the next its own new scene on an empty Redis, as every cell had before (about half the
matrix's CPU and, on the cluster, most of its time)."""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
import redis
import requests

from service.eventlog.vitals import Vitals
from tests.apiclient import (
    AUDITOR,
    AUDITOR_A,
    OPERATOR,
    REGULATOR,
    SERVED,
    TENANT_A,
    TENANT_B,
    Api,
    As,
    follow_webhooks,
)
from tests.spec import load_spec

Answered = TypeVar("Answered")
CALLERS = ["none", "bad", "operator", "auditor", "seat_player", "other_seat", "other_table"]


def _webhook_with_a_delivery(api: Api) -> tuple[str, str]:
    """A webhook (to a port where nobody listens) and a delivery of it (a seating at a table
    of its own)."""
    hook = api.post("/v1/webhooks", {"url": "http://127.0.0.1:9/h", "events": ["player_seated"]})
    assert hook.status_code == 201, hook.text
    webhook = hook.json()["webhook_id"]
    table = api.table("three-card")
    api.seat(table, "fan")
    follow_webhooks(api, table)
    deliveries = api.get(f"/v1/webhooks/{webhook}/deliveries").json()["deliveries"]
    return webhook, deliveries[0]["delivery_id"]


class Scene:
    """A table with players at seats 0 and 1 in the stage asked for; what a request may also
    name is made when first named (each takes several requests, and most cases need none):
    another table with its own player, an audit and a collusion report of the tenant, a webhook
    with a delivery."""

    def __init__(self, api: Api, stage: str) -> None:
        self.api = api
        self.table = api.table("three-card", decision_timeout_s=60)
        self.p0 = api.seat(self.table, "alice")["token"]
        self.p1 = api.seat(self.table, "bob")["token"]
        if stage in ("dealt", "showdown", "finished"):
            assert api.post(f"/v1/tables/{self.table}/deal").status_code == 201
        if stage in ("showdown", "finished"):
            for token in (self.p1, self.p0):
                r = api.post(f"/v1/tables/{self.table}/declare", {"decision": "in"}, token=token)
                assert r.status_code == 200, r.text
        if stage == "finished":
            assert api.post(f"/v1/tables/{self.table}/resolve").status_code == 200

    @functools.cached_property
    def stranger(self) -> str:
        other = self.api.table("three-card")
        return str(self.api.seat(other, "carol")["token"])

    @functools.cached_property
    def audit(self) -> str:
        audit = self.api.post(f"/v1/tables/{self.table}/audit")
        assert audit.status_code == 202, audit.text
        return str(audit.json()["audit_id"])

    @functools.cached_property
    def report(self) -> str:
        report = self.api.post("/v1/reports/collusion", {})
        assert report.status_code == 202, report.text
        return str(report.json()["report_id"])

    @functools.cached_property
    def _hook(self) -> tuple[str, str]:
        return _webhook_with_a_delivery(self.api)

    @functools.cached_property
    def webhook(self) -> str:
        return self._hook[0]

    @functools.cached_property
    def delivery(self) -> str:
        return self._hook[1]

    def token(self, caller: str) -> str | None:
        if caller == "other_table":
            return self.stranger
        return {
            "none": None,
            "bad": "not-a-valid-credential",
            "operator": OPERATOR,
            "auditor": AUDITOR,
            "seat_player": self.p0,
            "other_seat": self.p1,
        }[caller]


# endpoint -> (stage, method, path, body, {caller: status}); "none" and "bad" are 401 but on
# the public paths. `{t}` is the scene's table, `{a}` an audit of it.
T = "{t}"
A = "{a}"
W = "{w}"  # a webhook of the scene's tenant, with a delivery
D = "{d}"
R = "{r}"  # a collusion report of the scene's tenant
PUBLIC = (
    "/healthz",
    "/livez",
    "/readyz",
    "/metrics",
    "/openapi.yaml",
    "/docs",
    "/docs/docs.js",
    "/play",
    "/play/play.js",
    "/play/strings/en.json",
    "/admin",
)


def _row(
    stage: str,
    method: str,
    path: str,
    body: Any,
    operator: int,
    auditor: int,
    seat_player: int,
    other_seat: int,
    other_table: int,
) -> tuple[str, str, str, Any, dict[str, int]]:
    statuses = {
        "operator": operator,
        "auditor": auditor,
        "seat_player": seat_player,
        "other_seat": other_seat,
        "other_table": other_table,
    }
    return stage, method, path, body, statuses


MATRIX: dict[str, tuple[str, str, str, Any, dict[str, int]]] = {
    "create_table": (
        "new",
        "POST",
        "/v1/tables",
        {"preset": "three-card"},
        {
            "operator": 201,
            "auditor": 403,
            "seat_player": 403,
            "other_seat": 403,
            "other_table": 403,
        },
    ),
    "get_table": (
        "new",
        "GET",
        f"/v1/tables/{T}",
        None,
        {
            "operator": 200,
            "auditor": 200,
            "seat_player": 200,
            "other_seat": 200,
            "other_table": 403,
        },
    ),
    "seat_player": (
        "new",
        "POST",
        f"/v1/tables/{T}/players",
        {"player_id": "dan", "buy_in": 5},
        {
            "operator": 201,
            "auditor": 403,
            "seat_player": 403,
            "other_seat": 403,
            "other_table": 403,
        },
    ),
    "top_up": (
        "new",
        "POST",
        f"/v1/tables/{T}/players/0/chips",
        {"amount": 5},
        {
            "operator": 200,
            "auditor": 403,
            "seat_player": 403,
            "other_seat": 403,
            "other_table": 403,
        },
    ),
    "sit_out": (
        "new",
        "POST",
        f"/v1/tables/{T}/players/0/sit-out",
        None,
        {
            "operator": 200,
            "auditor": 403,
            "seat_player": 200,
            "other_seat": 403,
            "other_table": 403,
        },
    ),
    "leave": (
        "new",
        "DELETE",
        f"/v1/tables/{T}/players/0",
        None,
        {
            "operator": 200,
            "auditor": 403,
            "seat_player": 200,
            "other_seat": 403,
            "other_table": 403,
        },
    ),
    "deal": (
        "new",
        "POST",
        f"/v1/tables/{T}/deal",
        None,
        {
            "operator": 201,
            "auditor": 403,
            "seat_player": 403,
            "other_seat": 403,
            "other_table": 403,
        },
    ),
    "declare": (
        "dealt",
        "POST",
        f"/v1/tables/{T}/declare",
        {"decision": "in"},
        {
            "operator": 403,
            "auditor": 403,
            "seat_player": 200,
            "other_seat": 200,
            "other_table": 403,
        },
    ),
    "client_seed": (
        "dealt",
        "PUT",
        f"/v1/tables/{T}/players/0/client-seed",
        {"client_seed": "mine"},
        {
            "operator": 403,
            "auditor": 403,
            "seat_player": 200,
            "other_seat": 403,
            "other_table": 403,
        },
    ),
    "close": (
        "dealt",
        "POST",
        f"/v1/tables/{T}/close",
        None,
        {
            "operator": 409,
            "auditor": 403,
            "seat_player": 403,
            "other_seat": 403,
            "other_table": 403,
        },
    ),
    "resolve": (
        "showdown",
        "POST",
        f"/v1/tables/{T}/resolve",
        None,
        {
            "operator": 200,
            "auditor": 403,
            "seat_player": 403,
            "other_seat": 403,
            "other_table": 403,
        },
    ),
    "void": (
        "dealt",
        "POST",
        f"/v1/tables/{T}/void",
        None,
        {
            "operator": 200,
            "auditor": 403,
            "seat_player": 403,
            "other_seat": 403,
            "other_table": 403,
        },
    ),
    "events": (
        "dealt",
        "GET",
        f"/v1/tables/{T}/events",
        None,
        {
            "operator": 200,
            "auditor": 200,
            "seat_player": 200,
            "other_seat": 200,
            "other_table": 403,
        },
    ),
    "hand_history": (
        "finished",
        "GET",
        f"/v1/tables/{T}/hands/1",
        None,
        {
            "operator": 200,
            "auditor": 200,
            "seat_player": 200,
            "other_seat": 200,
            "other_table": 403,
        },
    ),
    "ledger": (
        "finished",
        "GET",
        f"/v1/ledger?table_id={T}",
        None,
        {
            "operator": 200,
            "auditor": 200,
            "seat_player": 403,
            "other_seat": 403,
            "other_table": 403,
        },
    ),
    "get_limits": (
        "new",
        "GET",
        "/v1/players/alice/limits",
        None,
        {
            "operator": 200,
            "auditor": 200,
            "seat_player": 403,
            "other_seat": 403,
            "other_table": 403,
        },
    ),
    "set_limits": (
        "new",
        "PUT",
        "/v1/players/alice/limits",
        {"loss_limit_24h": 10, "excluded_until": None},
        {
            "operator": 200,
            "auditor": 403,
            "seat_player": 403,
            "other_seat": 403,
            "other_table": 403,
        },
    ),
    "healthz": (
        "new",
        "GET",
        "/healthz",
        None,
        {
            "operator": 200,
            "auditor": 200,
            "seat_player": 200,
            "other_seat": 200,
            "other_table": 200,
        },
    ),
    # (the phase is wrong for a pass, a draw or a bet at this table: 409 means let through)
    "list_tables": _row("new", "GET", "/v1/tables", None, 200, 200, 403, 403, 403),
    "collusion_report": _row("new", "POST", "/v1/reports/collusion", {}, 202, 202, 403, 403, 403),
    "get_report": _row("new", "GET", f"/v1/reports/{R}", None, 200, 200, 403, 403, 403),
    "list_hands": _row("finished", "GET", f"/v1/hands?table_id={T}", None, 200, 200, 403, 403, 403),
    "sit_in": _row(
        "new", "POST", f"/v1/tables/{T}/players/0/sit-in", None, 409, 403, 409, 403, 403
    ),
    "pass_card": _row(
        "dealt", "POST", f"/v1/tables/{T}/pass", {"card": "As"}, 403, 403, 409, 409, 403
    ),
    "draw": _row("dealt", "POST", f"/v1/tables/{T}/draw", {"discard": []}, 403, 403, 409, 409, 403),
    "bet": _row(
        "dealt", "POST", f"/v1/tables/{T}/bet", {"action": "check"}, 403, 403, 409, 409, 403
    ),
    "stream": _row("new", "GET", f"/v1/tables/{T}/stream", None, 200, 200, 200, 200, 403),
    "stream_ticket": _row(
        "new", "POST", f"/v1/tables/{T}/stream-tickets", None, 201, 201, 201, 201, 403
    ),
    "start_audit": _row("new", "POST", f"/v1/tables/{T}/audit", None, 202, 202, 403, 403, 403),
    "get_audit": _row("new", "GET", f"/v1/audits/{A}", None, 200, 200, 403, 403, 403),
    "end_table": _row("new", "POST", f"/v1/tables/{T}/end", None, 200, 403, 403, 403, 403),
    "register_webhook": _row(
        "new",
        "POST",
        "/v1/webhooks",
        {"url": "http://127.0.0.1:9/h", "events": ["hand_finished"]},
        201,
        403,
        403,
        403,
        403,
    ),
    "list_webhooks": _row("new", "GET", "/v1/webhooks", None, 200, 403, 403, 403, 403),
    "delete_webhook": _row("new", "DELETE", f"/v1/webhooks/{W}", None, 204, 403, 403, 403, 403),
    "webhook_deliveries": _row(
        "new", "GET", f"/v1/webhooks/{W}/deliveries", None, 200, 403, 403, 403, 403
    ),
    "redeliver": _row(
        "new", "POST", f"/v1/webhooks/{W}/deliveries/{D}/redeliver", None, 202, 403, 403, 403, 403
    ),
    "set_wallet": _row(
        "new",
        "PUT",
        "/v1/wallet",
        {"url": "http://127.0.0.1:9/w", "currency": "EUR", "chip_value_minor": 100},
        200,
        403,
        403,
        403,
        403,
    ),
    "get_wallet": _row("new", "GET", "/v1/wallet", None, 409, 403, 403, 403, 403),
    "delete_wallet": _row("new", "DELETE", "/v1/wallet", None, 409, 403, 403, 403, 403),
    "rotate_wallet_secret": _row("new", "POST", "/v1/wallet/secret", None, 409, 403, 403, 403, 403),
    "wallet_transactions": _row(
        "new", "GET", "/v1/wallet/transactions", None, 200, 200, 403, 403, 403
    ),
    # (player protection: "back" and a reality check's answer are 409 when let through, the
    # seat being neither away nor asked)
    "go_away": _row("new", "POST", f"/v1/tables/{T}/players/0/away", None, 200, 403, 200, 403, 403),
    "come_back": _row(
        "new", "POST", f"/v1/tables/{T}/players/0/back", None, 409, 403, 409, 403, 403
    ),
    "answer_reality_check": _row(
        "new",
        "POST",
        f"/v1/tables/{T}/players/0/reality-check",
        {"continue": True},
        409,
        403,
        409,
        403,
        403,
    ),
    "get_protection_profile": _row(
        "new", "GET", "/v1/protection/profile", None, 200, 200, 403, 403, 403
    ),
    "set_protection_profile": _row(
        "new", "PUT", "/v1/protection/profile", {"profile": "ukgc"}, 200, 403, 403, 403, 403
    ),
    "livez": _row("new", "GET", "/livez", None, 200, 200, 200, 200, 200),
    "readyz": _row("new", "GET", "/readyz", None, 200, 200, 200, 200, 200),
    "metrics": _row("new", "GET", "/metrics", None, 200, 200, 200, 200, 200),
    "openapi": _row("new", "GET", "/openapi.yaml", None, 200, 200, 200, 200, 200),
    "docs": _row("new", "GET", "/docs", None, 200, 200, 200, 200, 200),
    "docs_asset": _row("new", "GET", "/docs/docs.js", None, 200, 200, 200, 200, 200),
    "play": _row("new", "GET", "/play", None, 200, 200, 200, 200, 200),
    "play_asset": _row("new", "GET", "/play/play.js", None, 200, 200, 200, 200, 200),
    "page_strings": _row("new", "GET", "/play/strings/en.json", None, 200, 200, 200, 200, 200),
    "admin": _row("new", "GET", "/admin", None, 200, 200, 200, 200, 200),
}


def _cases() -> list[tuple[str, str, int]]:
    cases = []
    for name, (_, _, path, _, expected) in MATRIX.items():
        for caller in CALLERS:
            if caller in ("none", "bad"):
                status = 200 if path in PUBLIC else 401
            else:
                status = expected[caller]
            cases.append((name, caller, status))
    return cases


PROBES = ("/healthz", "/readyz")
"""Ready (200) only while a dispatcher beats and the archive's lag is known: `_aimed` has the
scene's Redis say both, as a dispatcher and an archiver would (``service.eventlog.vitals``)."""


def _aimed(api: Api, scene: Scene, path: str) -> str:
    """`path` with the scene's table, audit, report, webhook or delivery in it (each made when
    first named); for a probe, the scene's Redis says first that a dispatcher beats and the
    archive's lag is known."""
    if path in PROBES:
        vitals = Vitals(SERVED[api.base].extensions["guts"].redis, prefix="guts")
        vitals.beat("a-dispatcher")
        vitals.report_archive_lag(0, 0)
    for mark, name in ((T, "table"), (A, "audit"), (R, "report"), (W, "webhook"), (D, "delivery")):
        if mark in path:  # (what the path does not name is not made)
            path = path.replace(mark, getattr(scene, name))
    return path


def _sent(api: Api, method: str, path: str, body: Any, token: str | None) -> Any:
    """The answer (a stream's is only opened and closed)."""
    if path.endswith("/stream"):
        headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        with requests.get(api.base + path, headers=headers, stream=True, timeout=10) as answer:
            answer.json = lambda: {"status": answer.status_code}  # type: ignore[method-assign]
            if answer.status_code >= 400:
                problem = answer.raw.read(10_000)
                answer.json = lambda: __import__("json").loads(problem)  # type: ignore[method-assign]
            return answer
    return api.call(method, path, body, token=token)


def _check(answer: Any, status: int) -> None:
    assert answer.status_code == status, answer.text if status != 200 else status
    if status >= 400:
        assert answer.headers["Content-Type"].startswith("application/problem+json")
        assert answer.json()["status"] == status


class Kept:
    """The Redis the server keeps its tables in, for the matrix's cells to share a scene: a
    cell's request that wrote nothing leaves the scene as it was made, and the next cell of the
    same stage takes it while nobody has written since (Redis counts every write, FLUSHALL
    included: ``rdb_changes_since_last_save``, reset only by a save these servers never make;
    on a cluster, every master's and the queues' Redis). Else the cell flushes Redis and makes
    its scene, as every cell did."""

    def __init__(self, nodes: list[redis.Redis]) -> None:
        self.nodes = nodes

    def writes(self) -> int:
        return sum(int(n.info("persistence")["rdb_changes_since_last_save"]) for n in self.nodes)

    def flush(self) -> None:
        for node in self.nodes:
            node.flushall()


SCENES: dict[tuple[str, str], tuple[Scene, int]] = {}
"""(server, stage) -> the scene a cell left as it was made, and Redis's count of writes then."""


@pytest.fixture
def kept(redis_url: str) -> Iterator[Kept]:
    client = redis.Redis.from_url(redis_url)
    try:
        yield Kept([client])
    finally:
        client.close()


def _scene(api: Api, kept: Kept, archive: Any, stage: str) -> Scene:
    """A scene of `stage`: the one a cell left untouched, while nothing has been written since;
    else a new one on an empty Redis (and archive)."""
    found = SCENES.pop((api.base, stage), None)
    if found is not None and found[1] == kept.writes():
        return found[0]
    kept.flush()
    archive.empty(only_if_used=True)
    return Scene(api, stage)


def _cell(
    api: Api, kept: Kept, archive: Any, stage: str, aim: Callable[[Scene], Callable[[], Answered]]
) -> Answered:
    """What a cell's requests answered, in a scene of `stage` (`_scene`): `aim` makes what
    the requests name (writing what it must) and returns how to send them; the scene is left
    for the next cell when they wrote nothing."""
    scene = _scene(api, kept, archive, stage)
    send = aim(scene)
    before = kept.writes()
    answered = send()
    if kept.writes() == before:
        SCENES[(api.base, stage)] = (scene, before)
    return answered


@pytest.mark.parametrize(("endpoint", "caller", "status"), _cases())
def test_authorization_matrix(
    sandbox_url: str, kept: Kept, archive_admin: Any, endpoint: str, caller: str, status: int
):
    stage, method, path, body, _ = MATRIX[endpoint]
    api = Api(sandbox_url)

    def aim(scene: Scene) -> Callable[[], Any]:
        aimed, token = _aimed(api, scene, path), scene.token(caller)
        return lambda: _sent(api, method, aimed, body, token)

    _check(_cell(api, kept, archive_admin, stage, aim), status)


# --- tenants ---------------------------------------------------------------------------------

TENANT_CALLERS = {  # the scene is casino-b's
    "own_operator": TENANT_B,
    "other_operator": TENANT_A,
    "other_auditor": AUDITOR_A,
    "regulator": REGULATOR,
    "other_casinos_player": None,  # a player at casino-a's table
}
REGULATOR_NAMES_THE_TENANT = (
    "ledger",
    "wallet_transactions",
    "get_limits",
    "get_protection_profile",
)  # else 422: the regulator must say whose


def _tenant_status(name: str, caller: str) -> int | None:
    """The status expected, or None where another casino's table must answer as a table that
    does not exist would."""
    _, _, path, _, expected = MATRIX[name]
    if path in PUBLIC:
        return 200
    if caller == "own_operator":
        return expected["operator"]
    if caller == "other_casinos_player":
        return expected["other_table"]
    if caller == "regulator":
        return 422 if name in REGULATOR_NAMES_THE_TENANT else expected["auditor"]
    if T in path or A in path or W in path or R in path:
        return None
    return expected["operator" if caller == "other_operator" else "auditor"]


@pytest.mark.parametrize(
    ("endpoint", "caller"), [(name, caller) for name in MATRIX for caller in TENANT_CALLERS]
)
def test_authorization_across_tenants(
    tenants_url: str, kept: Kept, archive_admin: Any, endpoint: str, caller: str
):
    """Another casino's operator or auditor gets, for a table (or an audit of it), exactly the
    answer they get for a table that does not exist: existence is not revealed."""
    stage, method, path, body, _ = MATRIX[endpoint]
    casino_b = As(tenants_url, TENANT_B)  # the scene is casino-b's
    expected = _tenant_status(endpoint, caller)

    def aim(scene: Scene) -> Callable[[], tuple[Any, Any]]:
        token = TENANT_CALLERS[caller]
        if caller == "other_casinos_player":
            foreign = As(casino_b.base, TENANT_A)
            token = foreign.seat(foreign.table("three-card"), "erin")["token"]
        aimed, nowhere = _aimed(casino_b, scene, path), None
        if expected is None:  # (and the same request about nothing that exists)
            absent = copy.copy(scene)
            absent.table, absent.audit, absent.report = "no-such-table", "0" * 24, "0" * 24
            absent.webhook, absent.delivery = "wh_nowhere", "msg_nowhere"
            nowhere = _aimed(casino_b, absent, path)
        return lambda: (
            _sent(casino_b, method, aimed, body, token),
            None if nowhere is None else _sent(casino_b, method, nowhere, body, token),
        )

    answer, nowhere = _cell(casino_b, kept, archive_admin, stage, aim)
    if expected is not None:
        _check(answer, expected)
        return
    assert answer.status_code == nowhere.status_code and answer.status_code >= 400, answer.text
    assert answer.status_code in (403, 404), answer.text
    for field in ("type", "title", "status"):
        assert answer.json()[field] == nowhere.json()[field]


def test_every_operation_of_the_spec_has_a_row():
    spec = load_spec()
    rows = [(method, path.split("?")[0]) for _, method, path, _, _ in MATRIX.values()]
    missing = []
    for template, operations in spec["paths"].items():
        pattern = re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", template) + "$")
        for method, operation in operations.items():
            if method in ("get", "post", "put", "delete", "patch") and not any(
                m == method.upper() and pattern.match(p) for m, p in rows
            ):
                missing.append(operation.get("operationId", f"{method} {template}"))
    assert not missing, f"operations with no row in the authorization matrix: {missing}"


def test_a_player_token_dies_when_the_player_leaves(api: Api):
    scene = Scene(api, "new")
    assert api.delete(f"/v1/tables/{scene.table}/players/0", token=scene.p0).status_code == 200
    again = api.post(f"/v1/tables/{scene.table}/players/0/sit-out", token=scene.p0)
    assert again.status_code == 403
    for read in ("", "/events", "/hands/1"):  # nor does it read the table any more
        assert api.get(f"/v1/tables/{scene.table}{read}", token=scene.p0).status_code == 403
    # A new player in the same seat gets a different token; the old one stays dead.
    new = api.seat(scene.table, "erin", seat=0)
    assert new["token"] != scene.p0
    assert (
        api.post(f"/v1/tables/{scene.table}/players/0/sit-out", token=scene.p0).status_code == 403
    )


def test_a_forged_token_is_refused(api: Api):
    scene = Scene(api, "new")
    claim, mac = scene.p0.split(".")
    forged = f"{claim}.{mac[:-2]}AA"
    assert api.get(f"/v1/tables/{scene.table}", token=forged).status_code == 401
