"""The v1 routes: thin. Each loads its body with a schema, asks the rules through `Tables`, and
returns what the rules' views say the caller may see."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from datetime import datetime
from typing import Any

from flask import Blueprint, Response, request

from service.phh import to_phh
from service.rules import commands
from service.rules import events as ev
from service.rules.history import hand_history
from service.rules.ruleset import resolve_ruleset
from service.rules.state import TableState
from service.rules.views import AUDITOR, OPERATOR, Viewer, event_view, table_view
from workers import scheduling

from . import schemas
from .auth import Forbidden, may_view, require, require_player_of
from .errors import BadRequest, NotFound
from .http import (
    check_table_id,
    idempotency,
    json_response,
    load_body,
    principal,
    run,
    services,
    tables,
)

v1 = Blueprint("v1", __name__, url_prefix="/v1")


# --- tables -----------------------------------------------------------------------------------


@v1.post("/tables")
def create_table() -> Response:
    require(principal(), OPERATOR)
    body = load_body(schemas.CREATE_TABLE)
    overrides = dict(body["rules"])
    for name in ("ante", "seats", "decision_timeout_s"):
        if name in body:
            if name in overrides and overrides[name] != body[name]:
                raise BadRequest(f"{name} is given twice with different values", 422, name)
            overrides[name] = body[name]
    rules = resolve_ruleset(body["preset"], overrides)
    table_id = body.get("table_id") or _new_id(request.headers.get("Idempotency-Key"))

    first_seed = tables().new_seed()

    def decide(state: TableState, now: datetime) -> list[ev.Event]:
        return commands.create_table(table_id, rules, now, first_seed)

    def respond(state: TableState, events: list[ev.Event]) -> tuple[int, Any]:
        return 201, {"table_id": table_id, "rules": rules.to_dict(), "version": state.version}

    return run(table_id, decide, respond, create=True)


def _new_id(idempotency_key: str | None) -> str:
    """A fresh random id; with an Idempotency-Key, one derived from the caller and the key, so
    a retry lands on the same table (and replays) instead of creating another."""
    if idempotency_key is None:
        return secrets.token_urlsafe(12)
    caller = request.headers.get("Authorization", "")
    digest = hashlib.sha256(f"{caller}\0{idempotency_key}".encode()).hexdigest()
    return f"t{digest[:20]}"


@v1.get("/tables/<table_id>")
def get_table(table_id: str) -> Response:
    who = principal()
    state = tables().load(check_table_id(table_id))
    view = table_view(state, may_view(who, state))
    return json_response(view, version=state.version)


# --- players ----------------------------------------------------------------------------------


@v1.post("/tables/<table_id>/players")
def seat_player(table_id: str) -> Response:
    require(principal(), OPERATOR)
    body = load_body(schemas.SEAT_PLAYER)

    def decide(state: TableState, now: datetime) -> list[ev.Event]:
        return commands.seat_player(state, body["player_id"], body["buy_in"], now, body.get("seat"))

    def respond(state: TableState, events: list[ev.Event]) -> tuple[int, Any]:
        (seated,) = events
        assert isinstance(seated, ev.PlayerSeated)
        holder = state.seats[seated.seat]
        token = services().auth.issue(state.table_id, seated.seat, holder.joined)
        body_out = {
            "seat": seated.seat,
            "player_id": seated.player_id,
            "token": token,
            "stack": holder.stack,
            "status": holder.status,
            "version": state.version,
        }
        return 201, body_out

    return run(check_table_id(table_id), decide, respond)


def _seat_response(state: TableState, seat: int) -> dict[str, Any]:
    holder = state.seats[seat]
    return {
        "seat": seat,
        "player_id": holder.player_id,
        "stack": holder.stack,
        "status": holder.status,
        "version": state.version,
    }


@v1.post("/tables/<table_id>/players/<int:seat>/chips")
def top_up(table_id: str, seat: int) -> Response:
    require(principal(), OPERATOR)
    body = load_body(schemas.TOP_UP)

    def decide(state: TableState, now: datetime) -> list[ev.Event]:
        return commands.top_up(state, seat, body["amount"], now)

    return run(check_table_id(table_id), decide, lambda s, e: (200, _seat_response(s, seat)))


def _operator_or_player(state: TableState, seat: int) -> None:
    who = principal()
    if who.role == OPERATOR:
        return
    if who.role == AUDITOR:
        raise Forbidden("auditors are read-only")
    require_player_of(who, state, seat)


def _seat_command(table_id: str, seat: int, command: Callable[..., list[ev.Event]]) -> Response:
    principal()
    load_body(schemas.EMPTY)

    def decide(state: TableState, now: datetime) -> list[ev.Event]:
        _operator_or_player(state, seat)
        return command(state, seat, now)

    return run(check_table_id(table_id), decide, lambda s, e: (200, _seat_response(s, seat)))


@v1.post("/tables/<table_id>/players/<int:seat>/sit-out")
def sit_out(table_id: str, seat: int) -> Response:
    return _seat_command(table_id, seat, commands.sit_out)


@v1.post("/tables/<table_id>/players/<int:seat>/sit-in")
def sit_in(table_id: str, seat: int) -> Response:
    return _seat_command(table_id, seat, commands.sit_in)


@v1.delete("/tables/<table_id>/players/<int:seat>")
def leave(table_id: str, seat: int) -> Response:
    principal()

    def decide(state: TableState, now: datetime) -> list[ev.Event]:
        _operator_or_player(state, seat)
        return commands.leave(state, seat, now)

    def respond(state: TableState, events: list[ev.Event]) -> tuple[int, Any]:
        (left,) = events
        assert isinstance(left, ev.PlayerLeft)
        return 200, {"seat": seat, "cash_out": left.cash_out, "version": state.version}

    return run(check_table_id(table_id), decide, respond)


# --- hands ------------------------------------------------------------------------------------


@v1.post("/tables/<table_id>/deal")
def deal(table_id: str) -> Response:
    require(principal(), OPERATOR)
    body = load_body(schemas.DEAL)
    stacked = body.get("stacked_deck")
    if stacked is not None and not services().settings.sandbox:
        raise Forbidden("stacked_deck is accepted only when the server runs with GUTS_SANDBOX=1")
    seed, next_seed = tables().new_seed(), tables().new_seed()

    def decide(state: TableState, now: datetime) -> list[ev.Event]:
        return commands.deal(state, seed, now, body["client_seed"], stacked, next_seed)

    def respond(state: TableState, events: list[ev.Event]) -> tuple[int, Any]:
        (dealt,) = events
        assert isinstance(dealt, ev.HandDealt)
        return 201, {
            "hand": dealt.hand,
            "game": dealt.game,
            "deadline": dealt.deadline,
            "order": list(dealt.order),
            "commitment": dealt.commitment,
            "next_commitment": dealt.next_commitment,
            "version": state.version,
        }

    return run(check_table_id(table_id), decide, respond)


def _hand_response(state: TableState, events: list[ev.Event]) -> dict[str, Any]:
    hand = state.hand
    number = hand.number if hand else state.hands_dealt
    return {"hand": number, "phase": hand.phase if hand else None, "version": state.version}


@v1.post("/tables/<table_id>/declare")
def declare(table_id: str) -> Response:
    principal()
    body = load_body(schemas.DECLARE)

    def decide(state: TableState, now: datetime) -> list[ev.Event]:
        seat = require_player_of(principal(), state)
        return commands.declare(state, seat, body["decision"], now)

    def respond(state: TableState, events: list[ev.Event]) -> tuple[int, Any]:
        first = events[0]
        assert isinstance(first, ev.DecisionMade)
        return 200, {
            **_hand_response(state, events),
            "seat": first.seat,
            "decision": first.decision,
        }

    return run(check_table_id(table_id), decide, respond)


@v1.post("/tables/<table_id>/pass")
def pass_card(table_id: str) -> Response:
    principal()
    body = load_body(schemas.PASS_CARD)

    def decide(state: TableState, now: datetime) -> list[ev.Event]:
        seat = require_player_of(principal(), state)
        return commands.pass_card(state, seat, body["card"], now)

    def respond(state: TableState, events: list[ev.Event]) -> tuple[int, Any]:
        first = events[0]
        assert isinstance(first, ev.CardPassed)
        return 200, {**_hand_response(state, events), "seat": first.seat, "card": first.card}

    return run(check_table_id(table_id), decide, respond)


@v1.post("/tables/<table_id>/draw")
def draw(table_id: str) -> Response:
    principal()
    body = load_body(schemas.DRAW)

    def decide(state: TableState, now: datetime) -> list[ev.Event]:
        seat = require_player_of(principal(), state)
        return commands.draw(state, seat, body["discard"], now)

    def respond(state: TableState, events: list[ev.Event]) -> tuple[int, Any]:
        (drawn,) = events
        assert isinstance(drawn, ev.CardsDrawn)
        return 200, {
            **_hand_response(state, events),
            "seat": drawn.seat,
            "discarded": list(drawn.discarded),
            "drawn": list(drawn.drawn),
            "cards": list(state.hand.cards[drawn.seat]) if state.hand else [],
        }

    return run(check_table_id(table_id), decide, respond)


@v1.post("/tables/<table_id>/close")
def close(table_id: str) -> Response:
    require(principal(), OPERATOR)
    load_body(schemas.EMPTY)

    def decide(state: TableState, now: datetime) -> list[ev.Event]:
        return commands.close_at_deadline(state, now)

    return run(check_table_id(table_id), decide, lambda s, e: (200, _hand_response(s, e)))


@v1.post("/tables/<table_id>/resolve")
def resolve(table_id: str) -> Response:
    require(principal(), OPERATOR)
    load_body(schemas.EMPTY)

    def decide(state: TableState, now: datetime) -> list[ev.Event]:
        return commands.resolve(state, now)

    def respond(state: TableState, events: list[ev.Event]) -> tuple[int, Any]:
        (resolved,) = events
        outcome = event_view(resolved, state, Viewer(OPERATOR))["data"]
        return 200, {**outcome, "version": state.version}

    return run(check_table_id(table_id), decide, respond)


@v1.post("/tables/<table_id>/void")
def void(table_id: str) -> Response:
    require(principal(), OPERATOR)
    body = load_body(schemas.VOID)

    def decide(state: TableState, now: datetime) -> list[ev.Event]:
        return commands.void_hand(state, body["reason"], now)

    def respond(state: TableState, events: list[ev.Event]) -> tuple[int, Any]:
        (voided,) = events
        assert isinstance(voided, ev.HandVoided)
        return 200, {"hand": voided.hand, "phase": None, "version": state.version}

    return run(check_table_id(table_id), decide, respond)


# --- the log ----------------------------------------------------------------------------------


def _viewer_and_state(table_id: str) -> tuple[Viewer, TableState]:
    who = principal()
    state = tables().load(check_table_id(table_id))
    return may_view(who, state), state


@v1.get("/tables/<table_id>/events")
def events(table_id: str) -> Response:
    principal()
    query = schemas.EVENTS_QUERY.load(request.args.to_dict())
    viewer, state = _viewer_and_state(table_id)
    read = tables().events(table_id, query["after"], query["limit"])
    items = [{"version": v, **event_view(e, state, viewer, v)} for v, e in read]
    next_after = read[-1][0] if read else query["after"]
    return json_response(
        {"events": items, "version": state.version, "next_after": next_after}, version=state.version
    )


@v1.get("/tables/<table_id>/hands/<int:hand>")
def get_hand(table_id: str, hand: int) -> Response:
    viewer, state = _viewer_and_state(table_id)
    if hand < 1 or hand > state.hands_dealt:
        raise NotFound(f"table {table_id} has no hand {hand}")
    if state.hand is not None and state.hand.number == hand:
        raise NotFound(f"hand {hand} is still in play; its history is kept once it is over")
    record = hand_history(state, hand, _hand_events(table_id, hand), viewer)
    if request.args.get("format", "json") == "phh":
        text = to_phh(
            record,
            ante=state.rules.ante,
            cards=state.rules.cards,
            starting_stacks={int(s): n for s, n in record.get("stacks_before", {}).items()},
            players={int(s): p for s, p in record.get("players", {}).items()},
        )
        response = Response(text, mimetype="text/plain")
        response.headers["ETag"] = f'"{state.version}"'
        return response
    if request.args.get("format", "json") != "json":
        raise BadRequest("format must be json or phh", 400, "format")
    return json_response(record, version=state.version)


def _hand_events(table_id: str, hand: int) -> list[tuple[int, ev.Event]]:
    """The events of one finished hand: from its deal to its resolution or void.

    A linear scan of the log in pages; fine for the history endpoint, which is not on the hot
    path. (An index by hand would make it one read.)
    """
    found: list[tuple[int, ev.Event]] = []
    after = 0
    while True:
        page = tables().events(table_id, after, 1000)
        if not page:
            return found
        for version, event in page:
            number = getattr(event, "hand", None)
            if number == hand:
                found.append((version, event))
                if isinstance(event, ev.HandResolved | ev.HandVoided):
                    return found
        after = page[-1][0]


# --- audits -----------------------------------------------------------------------------------


@v1.post("/tables/<table_id>/audit")
def start_audit(table_id: str) -> Response:
    require(principal(), OPERATOR, AUDITOR)
    load_body(schemas.EMPTY)
    tables().check_exists(check_table_id(table_id))  # 404 for an unknown table
    key, request_hash = idempotency()
    if key is None:
        audit_id = secrets.token_hex(12)
    else:  # the same key for the same table and caller is the same audit: queued once
        audit_id = hashlib.sha256(f"{table_id}\0{request_hash}\0{key}".encode()).hexdigest()[:24]
    known = scheduling.load_audit(services().redis, audit_id)
    if known is None:
        scheduling.enqueue_audit(services().redis, audit_id, table_id)
    status = known["status"] if known else "queued"
    response = json_response({"audit_id": audit_id, "table_id": table_id, "status": status}, 202)
    response.headers["Location"] = f"/v1/audits/{audit_id}"
    return response


@v1.get("/audits/<audit_id>")
def get_audit(audit_id: str) -> Response:
    require(principal(), OPERATOR, AUDITOR)
    record = scheduling.load_audit(services().redis, audit_id) if audit_id.isalnum() else None
    if record is None:
        raise NotFound(f"no audit {audit_id!r}"[:80])
    if record["status"] in ("queued", "running") and scheduling.audit_failed(
        services().redis, audit_id
    ):
        record = {**record, "status": "failed"}
    return json_response({"audit_id": audit_id, "result": None, **record})
