"""Tables in known states for fuzzing the API against openapi.yaml.

Most operations need an existing table, and a meaningful one: a hand in play to declare in, a
finished hand to read, a showdown to resolve. `World` builds each state on demand over HTTP,
keeps it while requests leave it unchanged (reads, and refused commands, which write nothing)
and builds a fresh one after a command may have changed it.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import count
from typing import Any

from rq import SimpleWorker

from tests.apiclient import AUDITOR, OPERATOR, Api
from workers.queues import QUEUES, SERIALIZER

ID = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
CARD = re.compile(r"^[2-9TJQKA][shdc]$")

# Seats 0-2 play; seat 3 sits out; seats 4 and 5 are empty.
PLAYERS = 3
SITTING_OUT = 3

IDLE = "idle"  # players seated, nothing dealt yet
FINISHED = "finished"  # hand 1 resolved, no hand in play
AUDITED = "audited"  # FINISHED, with one finished audit and one queued
DECLARING = "declaring"  # hand 1 resolved, hand 2 waiting for declarations
SHOWDOWN = "showdown"  # hand 2 declared by everyone, waiting for resolve
PASSING = "passing"  # a pass-the-trash table, hand 1 waiting for the passes
DRAWING = "drawing"  # a draw table (draw 2), hand 1 declared by everyone, waiting for draws
BETTING = "betting"  # a draw table with a betting round, hand 1 drawn, waiting for bets

# The rules of each state's table (besides seats and a long deadline).
RULES: dict[str, dict[str, Any]] = {
    PASSING: {"pass_the_trash": True},
    DRAWING: {"draw": 2},
    BETTING: {"draw": 1, "betting_round": True},
}

# Which state each operation is fuzzed in, and who calls it ("rotate": operator, auditor and
# each player in turn; "staff": mostly operator and auditor, sometimes a player; "seat": the
# operator or the player of the seat in the path, in turn; "player": each player in turn;
# "turn": mostly the player whose turn it is).
PLAN: dict[tuple[str, str], tuple[str | None, str]] = {
    ("POST", "/v1/tables"): (None, OPERATOR),
    ("GET", "/v1/tables"): (IDLE, "staff"),
    ("GET", "/v1/tables/{table_id}"): (DECLARING, "rotate"),
    ("POST", "/v1/tables/{table_id}/players"): (IDLE, OPERATOR),
    ("DELETE", "/v1/tables/{table_id}/players/{seat}"): (FINISHED, "seat"),
    ("POST", "/v1/tables/{table_id}/players/{seat}/chips"): (FINISHED, OPERATOR),
    ("PUT", "/v1/tables/{table_id}/players/{seat}/client-seed"): (DECLARING, "seat"),
    ("POST", "/v1/tables/{table_id}/players/{seat}/sit-out"): (FINISHED, "seat"),
    ("POST", "/v1/tables/{table_id}/players/{seat}/sit-in"): (FINISHED, "seat"),
    ("POST", "/v1/tables/{table_id}/deal"): (FINISHED, OPERATOR),
    ("POST", "/v1/tables/{table_id}/declare"): (DECLARING, "player"),
    ("POST", "/v1/tables/{table_id}/pass"): (PASSING, "player"),
    ("POST", "/v1/tables/{table_id}/draw"): (DRAWING, "turn"),
    ("POST", "/v1/tables/{table_id}/bet"): (BETTING, "turn"),
    ("POST", "/v1/tables/{table_id}/close"): (DECLARING, OPERATOR),
    ("POST", "/v1/tables/{table_id}/resolve"): (SHOWDOWN, OPERATOR),
    ("POST", "/v1/tables/{table_id}/void"): (DECLARING, OPERATOR),
    ("GET", "/v1/tables/{table_id}/events"): (DRAWING, "rotate"),
    ("GET", "/v1/tables/{table_id}/hands/{hand}"): (DECLARING, "rotate"),
    ("POST", "/v1/tables/{table_id}/stream-tickets"): (DECLARING, "rotate"),
    ("POST", "/v1/tables/{table_id}/audit"): (FINISHED, "staff"),
    ("GET", "/v1/audits/{audit_id}"): (AUDITED, "staff"),
}


@dataclass
class Table:
    """A table in a known state: its players' tokens and cards by seat, whose turn it is."""

    table_id: str
    tokens: dict[int, str]
    cards: dict[int, list[str]] = field(default_factory=dict)
    turn: int | None = None
    audits: list[str] = field(default_factory=list)


class World:
    """Tables in the states of `PLAN`, built over HTTP and rebuilt after they may change."""

    def __init__(self, api: Api, run_audits: Callable[[], None]) -> None:
        self.api = api
        self.run_audits = run_audits
        self._tables: dict[str, Table] = {}
        self._names: Iterator[int] = count()
        self._turn: Iterator[int] = count()

    def table(self, state: str) -> Table:
        """A table in `state` (the same one until `changed` says it may have moved on)."""
        if state not in self._tables:
            self._tables[state] = self._build(state)
        return self._tables[state]

    def changed(self, state: str) -> None:
        """The table of `state` may have changed: build a new one next time."""
        self._tables.pop(state, None)

    def _ok(self, response: Any, status: int) -> Any:
        assert response.status_code == status, response.text
        return response.json()

    def _build(self, state: str) -> Table:
        api = self.api
        # Unique across tests: the server's snapshot cache outlives the Redis flush between them.
        table_id = f"fuzz-{state}-{next(self._names)}-{secrets.token_hex(4)}"
        rules = {"seats": 6, "decision_timeout_s": 3600, **RULES.get(state, {})}
        self._ok(api.post("/v1/tables", {"table_id": table_id, "rules": rules}), 201)
        tokens = {}
        for seat in range(PLAYERS + 1):
            body = {"player_id": f"p{seat}", "buy_in": 100, "seat": seat}
            tokens[seat] = self._ok(api.post(f"/v1/tables/{table_id}/players", body), 201)["token"]
        self._ok(api.post(f"/v1/tables/{table_id}/players/{SITTING_OUT}/sit-out"), 200)
        table = Table(table_id, tokens)
        if state in (PASSING, DRAWING, BETTING):
            self._ok(api.post(f"/v1/tables/{table_id}/deal", {}), 201)
            if state in (DRAWING, BETTING):
                self._declare_all(table)
            if state == BETTING:
                for seat in (1, 2, 0):  # the button is seat 0: the draws start at seat 1
                    path = f"/v1/tables/{table_id}/draw"
                    self._ok(api.post(path, {"discard": []}, token=tokens[seat]), 200)
            return self._look(table)
        if state == IDLE:
            return table
        self._ok(api.post(f"/v1/tables/{table_id}/deal", {}), 201)
        self._declare_all(table)
        self._ok(api.post(f"/v1/tables/{table_id}/resolve"), 200)
        if state == FINISHED:
            return table
        if state == AUDITED:
            audit = self._ok(api.post(f"/v1/tables/{table_id}/audit"), 202)["audit_id"]
            self.run_audits()  # one finished audit with its report ...
            queued = self._ok(api.post(f"/v1/tables/{table_id}/audit"), 202)["audit_id"]
            table.audits = [audit, queued]  # ... and one still queued
            return table
        self._ok(api.post(f"/v1/tables/{table_id}/deal", {}), 201)
        if state == SHOWDOWN:
            self._declare_all(table)
        return table

    def _declare_all(self, table: Table) -> None:
        for seat in range(PLAYERS):
            body = {"decision": "in"}
            path = f"/v1/tables/{table.table_id}/declare"
            self._ok(self.api.post(path, body, token=table.tokens[seat]), 200)

    def _look(self, table: Table) -> Table:
        """Note each player's cards and whose turn it is to draw."""
        for seat in range(PLAYERS):
            path = f"/v1/tables/{table.table_id}"
            hand = self._ok(self.api.get(path, token=table.tokens[seat]), 200)["hand"]
            table.cards[seat] = hand["cards"]
            table.turn = hand.get("drawing_turn")
            if hand["phase"] == BETTING:
                table.turn = hand["betting"]["turn"]
        return table

    def credential(self, who: str, table: Table | None, seat: Any) -> tuple[str, int | None]:
        """The bearer credential for `who` (see `PLAN`), and the seat it acts for, if any."""
        turn = next(self._turn)
        if who in (OPERATOR, AUDITOR):
            return who, None
        assert table is not None
        if who == "turn" and table.turn is not None and turn % 4:
            return table.tokens[table.turn], table.turn
        if who in ("player", "turn"):
            return table.tokens[turn % PLAYERS], turn % PLAYERS
        if who == "seat":
            holder = table.tokens.get(seat) if isinstance(seat, int) else None
            return (holder, seat) if holder is not None and turn % 2 else (OPERATOR, None)
        if who == "staff":
            choices = [OPERATOR, AUDITOR, OPERATOR, AUDITOR, table.tokens[0]]
        else:
            choices = [OPERATOR, AUDITOR, *table.tokens.values()]
        chosen = choices[turn % len(choices)]
        return chosen, next((s for s, t in table.tokens.items() if t == chosen), None)


def audit_runner(redis_client: Any) -> Callable[[], None]:
    """Run the queued audits now, in this process, with a real (burst) RQ worker."""

    def run() -> None:
        worker = SimpleWorker(list(QUEUES), connection=redis_client, serializer=SERIALIZER)
        worker.work(burst=True, logging_level="WARNING")

    return run


def aim_path(case: Any, table: Table | None) -> None:
    """Point a generated case at `table`: its id, a seat that holds a player (mostly), a hand
    that exists (mostly), an audit that exists (mostly). Values the spec calls invalid are left
    alone, so that negative cases stay negative."""
    params = case.path_parameters
    if params is None or table is None:
        return
    if isinstance(params.get("table_id"), str) and ID.match(params["table_id"]):
        params["table_id"] = table.table_id
    if isinstance(params.get("seat"), int) and 0 <= params["seat"] <= 51:
        params["seat"] = params["seat"] % (PLAYERS + 2)  # 0-2 playing, 3 sitting out, 4 empty
    if isinstance(params.get("hand"), int) and params["hand"] >= 1:
        params["hand"] = params["hand"] % 3 + 1  # 1 finished, 2 in play, 3 never dealt
    audit = params.get("audit_id")
    if isinstance(audit, str) and audit.isascii() and audit.isalnum() and table.audits:
        choices = [*table.audits, audit]
        params["audit_id"] = choices[len(audit) % len(choices)]


def aim_body(case: Any, table: Table | None, seat: int | None) -> None:
    """For passes and draws, half of the time, cards the acting `seat` holds (only where the
    generated cards were valid ones: a negative case stays negative)."""
    if table is None:
        return
    body = case.body
    mine = table.cards.get(seat, []) if seat is not None else []
    if not isinstance(body, dict) or not mine:
        return
    card = body.get("card")
    if isinstance(card, str) and CARD.match(card) and ord(card[1]) % 2:
        body["card"] = mine[ord(card[0]) % len(mine)]
    discard = body.get("discard")
    if (
        isinstance(discard, list)
        and len(set(map(str, discard))) == len(discard) <= 2  # keep invalid ones invalid
        and all(isinstance(c, str) and CARD.match(c) for c in discard)
    ):
        if not discard or ord(discard[0][1]) % 2:
            body["discard"] = mine[: len(discard)]


# --- server bugs the fuzzer found -------------------------------------------------------------
#
# Each is reported with its fix. While a bug reproduces, the fuzz test steps around it (so that
# it keeps finding new ones) and `test_known_server_bugs` shows it as an xfail; once the server
# is fixed, the probe says so, the fuzzer covers those cases again and the test passes.


@dataclass(frozen=True)
class Bug:
    """A known server bug: how to tell it still reproduces, and which fuzz cases hit it."""

    summary: str
    reproduces: Callable[[Api], bool]
    hits: Callable[[Any], bool] = lambda case: False
    # The checks not to run on a case that hits it; empty: do not send the case at all (a 500
    # would stop the operation's fuzzing).
    excuses: tuple[str, ...] = ()


def _list_item_500(api: Api) -> bool:
    response = api.post("/v1/tables/probe/deal", {"stacked_deck": {"0": ["As", 7]}})
    return response.status_code == 500


def _bad_list_item(case: Any) -> bool:
    """A body with a list whose item marshmallow refuses (its error is keyed by index)."""
    body = case.body if isinstance(case.body, dict) else {}
    stacked = body.get("stacked_deck")
    lists = list(stacked.values()) if isinstance(stacked, dict) else []
    lists.append(body.get("discard"))
    length = 2 if case.path.endswith("/draw") else 3
    return any(
        isinstance(cards, list)
        and any(not isinstance(c, str) or not 0 < len(c) <= length for c in cards)
        for cards in lists
    )


def _if_match_500(api: Api) -> bool:
    response = api.post("/v1/tables/probe/deal", {}, headers={"If-Match": "\u00b2"})
    return response.status_code == 500


def _unicode_digit_if_match(case: Any) -> bool:
    raw = (case.headers or {}).get("If-Match")
    if not isinstance(raw, str):
        return False
    text = raw.strip().removeprefix("W/").strip('"')
    return text.isdigit() and not text.isascii()


def _newline_ids_accepted(api: Api) -> bool:
    return api.post("/v1/tables", {"table_id": "probe-newline\n"}).status_code == 201


def _newline_id(case: Any) -> bool:
    body = case.body if isinstance(case.body, dict) else {}
    return any(
        isinstance(body.get(name), str) and body[name].endswith("\n")
        for name in ("table_id", "player_id")
    )


def _hi_lo_pot_before_negative(api: Api) -> bool:
    table = api.table(hi_lo=True, ante=2)
    tokens = [api.seat(table, f"p{i}")["token"] for i in range(2)]
    api.post(f"/v1/tables/{table}/deal", {})
    for token in tokens:
        api.post(f"/v1/tables/{table}/declare", {"decision": "out"}, token=token)
    api.post(f"/v1/tables/{table}/resolve")
    history = api.get(f"/v1/tables/{table}/hands/1").json()
    return bool(history["pot_before"] < 0)


def _phh_without_etag(api: Api) -> bool:
    table = api.table()
    tokens = [api.seat(table, f"p{i}")["token"] for i in range(2)]
    api.post(f"/v1/tables/{table}/deal", {})
    for token in tokens:
        api.post(f"/v1/tables/{table}/declare", {"decision": "out"}, token=token)
    api.post(f"/v1/tables/{table}/resolve")
    response = api.get(f"/v1/tables/{table}/hands/1", params={"format": "phh"})
    return response.status_code == 200 and "ETag" not in response.headers


def _phh(case: Any) -> bool:
    return (case.query or {}).get("format") == "phh"


def _no_allow_on_405(api: Api) -> bool:
    response = api.call("PUT", "/v1/tables")
    return response.status_code == 405 and "Allow" not in response.headers


def _metrics_charset_twice(api: Api) -> bool:
    return api.get("/metrics", token=None).headers["Content-Type"].count("charset") > 1


def _audit_not_idempotent(api: Api) -> bool:
    table = api.table()
    headers = {"Idempotency-Key": "audit-once"}
    first = api.post(f"/v1/tables/{table}/audit", headers=headers).json()
    again = api.post(f"/v1/tables/{table}/audit", headers=headers).json()
    return bool(first["audit_id"] != again["audit_id"])


def _create_not_idempotent(api: Api) -> bool:
    headers = {"Idempotency-Key": "create-once"}
    first = api.post("/v1/tables", {"preset": "three-card"}, headers=headers).json()
    again = api.post("/v1/tables", {"preset": "three-card"}, headers=headers).json()
    return bool(first["table_id"] != again["table_id"])


def _bearer_case_sensitive(api: Api) -> bool:
    table = api.table()
    lower = {"Authorization": f"bearer {OPERATOR}"}
    return api.call("GET", f"/v1/tables/{table}", token=None, headers=lower).status_code == 401


def _unnamed_option_without_errors(api: Api) -> bool:
    response = api.post("/v1/tables", {"rules": {"": 1}})
    return response.status_code == 422 and "errors" not in response.json()


def _blank_body_accepted(api: Api) -> bool:
    headers = {"Content-Type": "application/json"}
    return api.call("POST", "/v1/tables", headers=headers, data=b"\n").status_code == 201


def _blank_body(case: Any) -> bool:
    return isinstance(case.body, bytes | str) and not case.body.strip()


def _repeated_member_taken(api: Api) -> bool:
    headers = {"Content-Type": "application/json"}
    body = b'{"preset": "three-card", "preset": "three-card"}'
    return api.call("POST", "/v1/tables", headers=headers, data=body).status_code == 201


def _options_without_allow(api: Api) -> bool:
    return "Allow" not in api.call("OPTIONS", "/no/such/path", token=None).headers


BUGS: dict[str, Bug] = {
    "list_item_error_500": Bug(
        "A refused list item in a body (POST /deal stacked_deck card that is not a string of "
        "at most 3 characters, POST /draw discard card that is not a 2-character string) is a "
        "500: marshmallow keys the error by list index (an int) and orjson refuses non-str "
        "keys",
        _list_item_500,
        _bad_list_item,
    ),
    "if_match_unicode_digit_500": Bug(
        "If-Match with a non-ASCII digit (latin-1 '\\u00b2') is a 500: str.isdigit() accepts "
        "it and int() does not",
        _if_match_500,
        _unicode_digit_if_match,
    ),
    "ids_with_trailing_newline": Bug(
        "table_id and player_id ending in a newline are accepted: the patterns end in $, "
        "which matches before a final newline",
        _newline_ids_accepted,
        _newline_id,
        ("negative_data_rejection",),
    ),
    "phh_history_without_etag": Bug(
        "GET /hands/{hand}?format=phh has no ETag (the JSON form has one; API.md: every GET "
        "returns the version as an ETag)",
        _phh_without_etag,
        _phh,
        ("response_headers_conformance",),
    ),
    "hi_lo_pot_before_negative": Bug(
        "The history of a hi-lo hand has a negative pot_before: it subtracts all the antes from "
        "the high pot's pot_in_play, but half of each ante went to the low pot",
        _hi_lo_pot_before_negative,
    ),
    "blank_json_body_is_empty": Bug(
        "A body of only whitespace with Content-Type: application/json is taken as {} (it is "
        "not JSON; only an empty body should count as none)",
        _blank_body_accepted,
        _blank_body,
        ("negative_data_rejection",),
    ),
    "405_without_allow": Bug(
        "405 responses have no Allow header (the problem+json handler drops it)",
        _no_allow_on_405,
    ),
    "metrics_charset_twice": Bug(
        "GET /metrics says charset twice in its Content-Type", _metrics_charset_twice
    ),
    "audit_ignores_idempotency_key": Bug(
        "POST /audit ignores Idempotency-Key: a retry queues a second audit", _audit_not_idempotent
    ),
    "create_table_idempotency_without_table_id": Bug(
        "POST /v1/tables without table_id ignores Idempotency-Key: a retry creates a second "
        "table (the key is looked up under the new random table id)",
        _create_not_idempotent,
    ),
    "bearer_scheme_case_sensitive": Bug(
        "Authorization: bearer <key> is 401: the auth scheme is case-insensitive (RFC 9110)",
        _bearer_case_sensitive,
    ),
    "repeated_member_last_wins": Bug(
        'A body that repeats a member ({"buy_in": 1, "buy_in": 100000000}) is taken, the last '
        "copy winning (orjson keeps it)",
        _repeated_member_taken,
    ),
    "options_without_allow": Bug(
        "OPTIONS on a path the API does not serve answers without Allow",
        _options_without_allow,
    ),
    "unnamed_option_without_errors": Bug(
        'A 422 for rules {"": 1} has no `errors` (the field name is empty, so falsy)',
        _unnamed_option_without_errors,
    ),
}


# --- checking one response against the spec ---------------------------------------------------


class SpecValidator:
    """Checks a response against what openapi.yaml documents for its operation and status."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.checked: set[tuple[str, str, int]] = set()
        self._validators: dict[int, tuple[Any, Any]] = {}  # id(schema) -> (schema, validator)

    def __call__(self, method: str, path: str, response: Any, headers: bool = True) -> Any:
        """Raise AssertionError naming what does not conform; return the parsed body.
        `headers=False` leaves the response headers unchecked."""
        operation = self.spec["paths"][path][method.lower()]
        status = response.status_code
        documented = operation["responses"].get(str(status))
        assert documented is not None, f"{method} {path}: {status} is not documented"
        if "$ref" in documented:
            documented = self._resolve(documented["$ref"])
        media = response.headers["Content-Type"].split(";")[0].strip()
        assert media in documented.get("content", {}), f"{method} {path}: {media} undocumented"
        for name, header in documented.get("headers", {}).items():
            header = self._resolve(header["$ref"]) if "$ref" in header else header
            if headers and header.get("required"):
                assert name in response.headers, f"{method} {path}: no {name} header"
        body = response.json() if media.endswith("json") else response.text
        errors = sorted(
            self._validator(documented["content"][media]["schema"]).iter_errors(body),
            key=lambda e: [str(part) for part in e.instance_path],
        )
        assert not errors, f"{method} {path} {status}: " + "; ".join(
            f"{'/'.join(map(str, e.instance_path))}: {e.message[:300]}" for e in errors[:5]
        )
        self.checked.add((method, path, status))
        return body

    def _validator(self, schema: dict[str, Any]) -> Any:
        """A Draft 2020-12 validator of `schema` (its references into the spec's components),
        made once per schema: jsonschema-rs's, which checks formats as annotations only, as
        the Python jsonschema does without a format checker."""
        import jsonschema_rs

        kept = self._validators.get(id(schema))
        if kept is None:
            root = {"components": self.spec["components"], **schema}
            kept = schema, jsonschema_rs.Draft202012Validator(root, validate_formats=False)
            self._validators[id(schema)] = kept
        return kept[1]

    def _resolve(self, ref: str) -> Any:
        node: Any = self.spec
        for part in ref.removeprefix("#/").split("/"):
            node = node[part]
        return node
