"""Clients generated from openapi.yaml work, errors included (issue 17).

Third-party developers start from the spec: they generate a client. Here the most used
generators read openapi.yaml as they would: openapi-python-client writes a Python client, which
plays a whole hand against a real server (the suite's, over HTTP, on the test Redis) and gets
a 409, a 422 with its per-field `errors` and a 404 as typed `Problem` objects; openapi-typescript
writes TypeScript types that `tsc --strict` compiles together with code using them. Either
generator saying a single warning fails the test (a warning means a part of the contract the
client silently lacks), and every operation in openapi.yaml must come out as a function of the
Python client and an operation of the TypeScript types, so endpoints added later are held to
the same. Nothing generated is kept: each run generates afresh into temporary directories.

Skipped, loudly, only where a generator cannot be installed: openapi-python-client missing from
the environment (it is a dev dependency), or npm missing or unable to reach its registry.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.apiclient import AUDITOR, OPERATOR, Api
from tests.spec import load_spec

SPEC = Path(__file__).resolve().parents[1] / "openapi.yaml"
METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}
PACKAGE = "guts_client"
"""The Python client's package (openapi-python-client names it after the spec's title)."""
NPM_PACKAGES = ("openapi-typescript@7.13.0", "typescript@5.9.3")
"""The TypeScript generator and compiler, pinned (openapi-typescript 7 wants TypeScript 5)."""
NPM_OFFLINE = re.compile(r"ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|network", re.I)
GENERATOR_TIMEOUT_S = 300


def _operations() -> dict[tuple[str, str], str]:
    """(METHOD, path) -> operationId of every operation in openapi.yaml."""
    spec = load_spec()
    return {
        (method.upper(), path): operation.get("operationId", "")
        for path, item in spec["paths"].items()
        for method, operation in item.items()
        if method in METHODS
    }


def _run(command: list[str], cwd: Path | None = None) -> tuple[int, str]:
    """Run `command` with this interpreter's scripts (ruff, which the Python generator runs on
    its output) first on PATH; its exit code and everything it said."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    done = subprocess.run(
        command,
        cwd=cwd,
        env={**os.environ, "PATH": path},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=GENERATOR_TIMEOUT_S,
    )
    return done.returncode, (done.stdout + done.stderr).strip()


# --- Python: openapi-python-client ------------------------------------------------------------


@pytest.fixture(scope="module")
def python_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The Python client generated from openapi.yaml (its package directory), importable."""
    if importlib.util.find_spec("openapi_python_client") is None:
        pytest.skip(
            "NOT CHECKED: a Python client generated from openapi.yaml; openapi-python-client "
            "is not installed (it is in the dev extra: pip install -r requirements.lock)"
        )
    out = tmp_path_factory.mktemp("python-client")
    package = out / PACKAGE
    command = [sys.executable, "-m", "openapi_python_client", "generate", "--path", str(SPEC)]
    code, said = _run([*command, "--output-path", str(package), "--meta", "none"])
    assert code == 0 and said == f"Generating {package}", (
        f"openapi-python-client must read openapi.yaml whole, without a word:\n{said}"
    )
    sys.path.insert(0, str(out))
    try:
        yield package
    finally:
        sys.path.remove(str(out))
        for name in [n for n in sys.modules if n == PACKAGE or n.startswith(f"{PACKAGE}.")]:
            del sys.modules[name]


def _functions(package: Path) -> dict[tuple[str, str], Path]:
    """(METHOD, path) -> the generated module that calls it, read from each module's request."""
    request = re.compile(r'"method": "(\w+)",\s*"url": "([^"]+)"')
    found: dict[tuple[str, str], Path] = {}
    for module in sorted((package / "api").glob("*/*.py")):
        if module.name != "__init__.py":
            sent = request.search(module.read_text())
            assert sent, f"{module} sends no request"
            found[(sent[1].upper(), sent[2])] = module
    return found


def _operation_modules(package: Path) -> dict[str, ModuleType]:
    """operationId -> the generated module of that operation, imported."""
    functions = _functions(package)
    return {
        operation_id: importlib.import_module(
            ".".join((PACKAGE, *functions[key].relative_to(package).with_suffix("").parts))
        )
        for key, operation_id in _operations().items()
    }


def test_every_operation_is_a_function_of_the_python_client(python_client: Path):
    operations = _operations()
    functions = _functions(python_client)
    assert set(functions) == set(operations), (
        f"in openapi.yaml, not in the client: {sorted(set(operations) - set(functions))}; "
        f"in the client, not in openapi.yaml: {sorted(set(functions) - set(operations))}"
    )
    for key, operation_id in operations.items():
        assert operation_id, f"{key} has no operationId (the generator would invent a name)"
        # the module is the operationId in snake case: get_hand_history for getHandHistory
        assert functions[key].stem.replace("_", "") == operation_id.lower(), (key, operation_id)


def test_a_hand_through_the_generated_python_client_with_typed_problems(
    python_client: Path, api: Api
):
    client = importlib.import_module(PACKAGE)
    models = importlib.import_module(f"{PACKAGE}.models")
    op = _operation_modules(python_client)

    def as_(token: str) -> Any:
        # an answer with a status openapi.yaml does not name raises UnexpectedStatus
        return client.AuthenticatedClient(
            base_url=api.base, token=token, raise_on_unexpected_status=True
        )

    def call(operation: str, status: int, who: Any, *args: Any, **kwargs: Any) -> Any:
        answer = op[operation].sync_detailed(*args, client=who, **kwargs)
        assert answer.status_code == status, (operation, answer.content)
        return answer.parsed

    operator = as_(OPERATOR)
    body = models.CreateTableRequest(preset=models.Preset.THREE_CARD, decision_timeout_s=300)
    created = call("createTable", 201, operator, body=body)
    assert isinstance(created, models.TableCreated)
    table = created.table_id
    tokens = []
    for name in ("alice", "bob"):
        body = models.SeatPlayerRequest(player_id=name, buy_in=100)
        seated = call("seatPlayer", 201, operator, table, body=body)
        assert isinstance(seated, models.PlayerSeated) and seated.player_id == name
        tokens.append(seated.token)
    alice, bob = as_(tokens[0]), as_(tokens[1])

    deck = models.StackedDeck()
    deck.additional_properties = {"0": ["As", "Ks", "Qs"], "1": ["2c", "3d", "5h"]}
    dealt = call("deal", 201, operator, table, body=models.DealRequest(stacked_deck=deck))
    assert isinstance(dealt, models.HandDealtResult) and dealt.hand == 1
    view = call("getTable", 200, alice, table)
    assert isinstance(view, models.TableView) and isinstance(view.hand, models.HandView)
    assert view.hand.phase == models.Phase.DECLARING and view.hand.cards == ["As", "Ks", "Qs"]
    for player in (alice, bob):
        body = models.DeclareRequest(decision=models.Decision.IN)
        assert isinstance(call("declare", 200, player, table, body=body), models.DeclareResult)

    twice = call(
        "declare", 409, bob, table, body=models.DeclareRequest(decision=models.Decision.IN)
    )
    assert isinstance(twice, models.Problem)
    assert (twice.status, twice.title) == (409, "Not Allowed Now") and twice.detail

    resolved = call("resolveHand", 200, operator, table)
    assert isinstance(resolved, models.ResolveResult)
    assert resolved.outcome == models.Outcome.SHOWDOWN and resolved.winners == [0]
    assert isinstance(resolved.won, models.ChipsBySeat) and resolved.low is None
    assert (resolved.won.additional_properties, resolved.matched.additional_properties) == (
        {"0": 2},
        {"1": 2},
    )
    history = call("getHandHistory", 200, bob, table, 1)
    assert isinstance(history, models.HandHistory)
    assert history.status == models.HandHistoryStatus.COMPLETE
    assert isinstance(history.cards, models.CardsBySeat)
    assert history.cards.additional_properties == {"1": ["2c", "3d", "5h"]}  # bob's own only
    page = call("listEvents", 200, operator, table)
    assert isinstance(page, models.EventPage) and page.version == len(page.events)
    assert page.events[-1].type_ == models.EventType.HAND_RESOLVED
    after = call("getTable", 200, operator, table)
    stacks = {seat.player_id: seat.stack for seat in after.seats}
    assert stacks["alice"] > 100 > stacks["bob"] and after.hand is None

    body = models.SeatPlayerRequest(player_id="no spaces allowed", buy_in=0)
    refused = call("seatPlayer", 422, operator, table, body=body)
    assert isinstance(refused, models.Problem) and refused.status == 422
    assert isinstance(refused.errors, models.FieldErrors)
    assert set(refused.errors.additional_properties) == {"player_id", "buy_in"}
    assert all(
        messages and all(isinstance(message, str) for message in messages)
        for messages in refused.errors.additional_properties.values()
    )
    deck.additional_properties = {"0": ["As", "As", "Kd"]}
    bad_cards = call("deal", 422, operator, table, body=models.DealRequest(stacked_deck=deck))
    assert isinstance(bad_cards, models.Problem) and isinstance(
        bad_cards.errors, models.FieldErrors
    )
    assert list(bad_cards.errors.additional_properties) == ["stacked_deck.0"]

    ledger = call("getLedger", 200, operator, table_id=table, limit=100)
    assert isinstance(ledger, models.LedgerPage)
    mine = [e for e in ledger.entries if e.player_id == "alice"]
    assert [str(e.kind) for e in mine] == ["buy_in", "ante", "win"]
    assert mine[-1].balance_after == stacks["alice"]
    body = models.PlayerLimitsRequest(loss_limit_24h=500, excluded_until=None)
    limits = call("setPlayerLimits", 200, operator, "alice", body=body)
    assert isinstance(limits, models.PlayerLimits) and limits.loss_limit_24h == 500
    read = call("getPlayerLimits", 200, as_(AUDITOR), "alice")
    assert isinstance(read, models.PlayerLimits) and read.net_loss_24h == 100 - stacks["alice"]

    missing = call("getTable", 404, operator, "no-such-table")
    assert isinstance(missing, models.Problem) and (missing.status, missing.title) == (
        404,
        "Not Found",
    )


# --- TypeScript: openapi-typescript and tsc --strict ------------------------------------------


@pytest.fixture(scope="module")
def typescript_tools(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory whose node_modules/.bin has openapi-typescript and tsc (installed by npm
    into a temporary directory, through npm's own cache)."""
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("NOT CHECKED: TypeScript types generated from openapi.yaml; npm is missing")
    where = tmp_path_factory.mktemp("typescript")
    (where / "package.json").write_text('{"private": true}\n')
    code, said = _run([npm, "install", "--no-audit", "--no-fund", *NPM_PACKAGES], cwd=where)
    if code != 0 and NPM_OFFLINE.search(said):
        pytest.skip(
            f"NOT CHECKED: TypeScript types generated from openapi.yaml; npm cannot install "
            f"{' '.join(NPM_PACKAGES)}:\n{said}"
        )
    assert code == 0, said
    return where


TYPESCRIPT_USE = """\
import type { components, operations, paths } from "./guts";

type Problem = components["schemas"]["Problem"];
type TableView = components["schemas"]["TableView"];

/** A refusal as a client shows it: status, title, detail, each bad field's messages. */
export function explain(problem: Problem): string {
  const fields = Object.entries(problem.errors ?? {}).map(
    ([field, messages]) => `${field}: ${messages.join("; ")}`,
  );
  return [`${problem.status} ${problem.title}`, problem.detail, ...fields].join("\\n");
}

/** The chips on a table: every stack, both pots, the reserve and the side pot. */
export function chipsOnTable(view: TableView): number {
  const stacks = view.seats.reduce((sum, seat) => sum + seat.stack, 0);
  return stacks + view.pot + view.low_pot + view.reserve + view.side_pot;
}

/** The caller's own cards in the hand in play (none between hands). */
export function ownCards(view: TableView): readonly string[] {
  return view.hand?.cards ?? [];
}

type Read = operations["getTable"]["responses"][200]["content"]["application/json"];
export const asView = (read: Read): TableView => read;
type Refused = operations["declare"]["responses"][409]["content"]["application/problem+json"];
export const asProblem = (refused: Refused): Problem => refused;

// @ts-expect-error: a Problem's status is a number (strict types, not `any`)
export const wrong: Problem = { type: "t", title: "t", status: "409", detail: "d" };

// Every operation and path of openapi.yaml: a missing one does not compile.
export type EveryOperation = [
OPERATIONS];
export type EveryPath = [
PATHS];
"""
"""TypeScript that uses the generated types as a client would."""


def _typescript_use(operations: dict[tuple[str, str], str]) -> str:
    """TYPESCRIPT_USE naming every operation and path of `operations`."""
    named = "".join(f'  operations["{operation_id}"],\n' for operation_id in operations.values())
    paths = "".join(f'  paths["{path}"],\n' for path in sorted({p for _, p in operations}))
    return TYPESCRIPT_USE.replace("OPERATIONS", named).replace("PATHS", paths)


def test_typescript_types_from_the_spec_compile_with_tsc_strict(
    typescript_tools: Path, tmp_path: Path
):
    tools = typescript_tools / "node_modules" / ".bin"
    code, said = _run(
        [str(tools / "openapi-typescript"), str(SPEC), "-o", str(tmp_path / "guts.d.ts")]
    )
    assert code == 0 and not re.search(r"warn|error|⚠", said, re.I), (
        f"openapi-typescript must read openapi.yaml whole, without a warning:\n{said}"
    )
    (tmp_path / "use.ts").write_text(_typescript_use(_operations()))
    command = [str(tools / "tsc"), "--strict", "--noEmit", "--target", "es2022"]
    code, said = _run([*command, str(tmp_path / "use.ts")], cwd=tmp_path)
    assert code == 0, f"tsc --strict:\n{said}"
