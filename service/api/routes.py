"""The v1 routes. Each authenticates the caller, loads its body with a schema, calls one use
case of the application service (`service.application.TableService`) and renders what it
returns; the game's flow and who may do what at a table are the use cases' business.

(The role checks here only keep the contract's order of refusals: a caller who may not use
a route at all hears 403 before anything is said about their body. The use cases check the
same again, and everything that depends on the table's state.)
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from flask import Blueprint, Response, request

from service.application import TableService
from service.application.access import require
from service.application.values import checked_table_id
from service.phh import to_phh
from service.rules.times import iso
from service.rules.views import AUDITOR, OPERATOR, PLAYER

from . import schemas
from .errors import BadRequest
from .http import caller, conditions, header, json_response, load_body, render, services

v1 = Blueprint("v1", __name__, url_prefix="/v1")

TICKET_TTL_S = 60
"""How long a stream ticket may be used to open a stream (the contract: at most 60 s)."""


def _tables() -> TableService:
    return services().usecases


# --- tables -----------------------------------------------------------------------------------


@v1.post("/tables")
def create_table() -> Response:
    who = caller()
    require(who, OPERATOR)
    body = load_body(schemas.CREATE_TABLE)
    overrides = dict(body["rules"])
    for name in ("ante", "seats", "decision_timeout_s"):
        if name in body:
            if name in overrides and overrides[name] != body[name]:
                raise BadRequest(f"{name} is given twice with different values", 422, name)
            overrides[name] = body[name]
    return render(
        _tables().create_table(
            who,
            body["preset"],
            overrides,
            table_id=body.get("table_id"),
            conditions=conditions(versioned=False),
        )
    )


@v1.get("/tables")
def list_tables() -> Response:
    who = caller()
    query = schemas.TABLES_QUERY.load(request.args.to_dict())
    return render(_tables().table_list(who, query["after"], query["limit"]))


@v1.get("/tables/<table_id>")
def get_table(table_id: str) -> Response:
    who = caller()
    schemas.NO_QUERY.load(request.args.to_dict())  # unknown parameters: 422
    return render(_tables().table(who, table_id))


# --- players ----------------------------------------------------------------------------------


@v1.post("/tables/<table_id>/players")
def seat_player(table_id: str) -> Response:
    who = caller()
    require(who, OPERATOR)
    body = load_body(schemas.SEAT_PLAYER)
    return render(
        _tables().seat(
            who,
            table_id,
            body["player_id"],
            body["buy_in"],
            body.get("seat"),
            conditions=conditions(),
        )
    )


@v1.post("/tables/<table_id>/players/<int:seat>/chips")
def top_up(table_id: str, seat: int) -> Response:
    who = caller()
    require(who, OPERATOR)
    body = load_body(schemas.TOP_UP)
    return render(_tables().top_up(who, table_id, seat, body["amount"], conditions=conditions()))


@v1.post("/tables/<table_id>/players/<int:seat>/sit-out")
def sit_out(table_id: str, seat: int) -> Response:
    who = caller()
    load_body(schemas.EMPTY)
    return render(_tables().sit_out(who, table_id, seat, conditions=conditions()))


@v1.post("/tables/<table_id>/players/<int:seat>/sit-in")
def sit_in(table_id: str, seat: int) -> Response:
    who = caller()
    load_body(schemas.EMPTY)
    return render(_tables().sit_in(who, table_id, seat, conditions=conditions()))


@v1.put("/tables/<table_id>/players/<int:seat>/client-seed")
def set_client_seed(table_id: str, seat: int) -> Response:
    who = caller()
    require(who, PLAYER)
    body = load_body(schemas.CLIENT_SEED_BODY)
    return render(
        _tables().set_client_seed(who, table_id, seat, body["client_seed"], conditions=conditions())
    )


@v1.delete("/tables/<table_id>/players/<int:seat>")
def leave(table_id: str, seat: int) -> Response:
    return render(_tables().leave(caller(), table_id, seat, conditions=conditions()))


# --- hands ------------------------------------------------------------------------------------


@v1.post("/tables/<table_id>/deal")
def deal(table_id: str) -> Response:
    who = caller()
    require(who, OPERATOR)
    body = load_body(schemas.DEAL)
    return render(
        _tables().deal(
            who,
            table_id,
            client_seed=body["client_seed"],
            stacked_deck=body.get("stacked_deck"),
            conditions=conditions(),
        )
    )


@v1.post("/tables/<table_id>/declare")
def declare(table_id: str) -> Response:
    who = caller()
    body = load_body(schemas.DECLARE)
    return render(_tables().declare(who, table_id, body["decision"], conditions=conditions()))


@v1.post("/tables/<table_id>/pass")
def pass_card(table_id: str) -> Response:
    who = caller()
    body = load_body(schemas.PASS_CARD)
    return render(_tables().pass_card(who, table_id, body["card"], conditions=conditions()))


@v1.post("/tables/<table_id>/draw")
def draw(table_id: str) -> Response:
    who = caller()
    body = load_body(schemas.DRAW)
    return render(_tables().draw(who, table_id, body["discard"], conditions=conditions()))


@v1.post("/tables/<table_id>/bet")
def bet(table_id: str) -> Response:
    who = caller()
    body = load_body(schemas.BET)
    return render(_tables().bet(who, table_id, body["action"], conditions=conditions()))


@v1.post("/tables/<table_id>/close")
def close(table_id: str) -> Response:
    who = caller()
    require(who, OPERATOR)
    load_body(schemas.EMPTY)
    return render(_tables().close(who, table_id, conditions=conditions()))


@v1.post("/tables/<table_id>/resolve")
def resolve(table_id: str) -> Response:
    who = caller()
    require(who, OPERATOR)
    load_body(schemas.EMPTY)
    return render(_tables().resolve(who, table_id, conditions=conditions()))


@v1.post("/tables/<table_id>/end")
def end_table(table_id: str) -> Response:
    who = caller()
    require(who, OPERATOR)
    load_body(schemas.EMPTY)
    return render(_tables().end_table(who, table_id, conditions=conditions()))


@v1.post("/tables/<table_id>/void")
def void(table_id: str) -> Response:
    who = caller()
    require(who, OPERATOR)
    body = load_body(schemas.VOID)
    return render(_tables().void(who, table_id, body["reason"], conditions=conditions()))


# --- the log ----------------------------------------------------------------------------------


@v1.get("/tables/<table_id>/events")
def events(table_id: str) -> Response:
    who = caller()
    query = schemas.EVENTS_QUERY.load(request.args.to_dict())
    return render(_tables().events(who, table_id, query["after"], query["limit"]))


@v1.get("/tables/<table_id>/hands/<int:hand>")
def get_hand(table_id: str, hand: int) -> Response:
    who = caller()
    form = schemas.HAND_QUERY.load(request.args.to_dict())["format"]
    found = _tables().hand_history(who, table_id, hand)
    record: dict[str, Any] = found.record
    if form == "phh":
        text = to_phh(
            record,
            ante=found.rules.ante,
            cards=found.rules.cards,
            starting_stacks={int(s): n for s, n in record.get("stacks_before", {}).items()},
            players={int(s): p for s, p in record.get("players", {}).items()},
        )
        response = Response(text, mimetype="text/plain")
        response.headers["ETag"] = f'"{found.version}"'
        return response
    if form != "json":
        raise BadRequest("format must be json or phh", 400, "format")
    return json_response(record, version=found.version)


@v1.get("/hands")
def list_hands() -> Response:
    who = caller()
    require(who, OPERATOR, AUDITOR)
    query = schemas.HANDS_QUERY.load(request.args.to_dict())
    if query["from_"] and query["to"] and query["from_"] >= query["to"]:
        raise BadRequest("from must be before to", 422, "from")
    page = _tables().hands(
        who,
        player_id=query["player_id"],
        table_id=query["table_id"],
        start=query["from_"],
        end=query["to"],
        after=query["after"],
        limit=query["limit"],
    )
    return render(page)


# --- the live feed ----------------------------------------------------------------------------


@v1.post("/tables/<table_id>/stream-tickets")
def stream_ticket(table_id: str) -> Response:
    who = caller()
    load_body(schemas.EMPTY)
    _tables().check_viewer(who, table_id)
    expires = int(time.time()) + TICKET_TTL_S
    ticket = services().auth.issue_ticket(who, table_id, expires)
    body = {"ticket": ticket, "expires_at": iso(datetime.fromtimestamp(expires, UTC))}
    response = json_response(body, 201)
    response.headers["Location"] = f"/v1/tables/{table_id}/stream"
    response.headers["Cache-Control"] = "no-store"
    return response


@v1.get("/tables/<table_id>/stream")
def stream(table_id: str) -> Response:
    query = schemas.STREAM_QUERY.load(request.args.to_dict())
    if query["ticket"] is not None:
        if header("Authorization") is not None:
            raise BadRequest("send a ticket or an Authorization header, not both", 400, "ticket")
        who = services().auth.ticket_caller(query["ticket"], table_id, time.time())
    else:
        who = caller()
    after = _resume_point(query["after"], header("Last-Event-ID"))
    feed = services().feed
    subscription = feed.subscribe(who, checked_table_id(table_id), after)  # None: from now on
    response = Response(feed.messages(subscription), mimetype="text/event-stream")
    response.call_on_close(lambda: feed.unsubscribe(subscription))  # (even if never iterated)
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Accel-Buffering"] = "no"  # a proxy in front must not buffer it
    return response


def _resume_point(after: int | None, last_event_id: str | None) -> int | None:
    """Where a stream resumes: `?after=`, else `Last-Event-ID` (what EventSource sends when it
    reconnects), else None: from now on."""
    if after is not None:
        return after
    if last_event_id is None or not last_event_id.strip():
        return None
    text = last_event_id.strip()
    if not (text.isascii() and text.isdigit()) or len(text) > 15:
        raise BadRequest("Last-Event-ID must be an event's version", 400, "Last-Event-ID")
    return int(text)


# --- money: the ledger and limits ---------------------------------------------------------------


@v1.get("/ledger")
def ledger() -> Response:
    who = caller()
    require(who, OPERATOR, AUDITOR)
    query = schemas.LEDGER_QUERY.load(request.args.to_dict())
    page = _tables().ledger_page(
        who,
        query["after"],
        query["limit"],
        table_id=query["table_id"],
        player_id=query["player_id"],
        tenant=query["tenant"],
    )
    return render(page)


@v1.get("/players/<player_id>/limits")
def get_limits(player_id: str) -> Response:
    who = caller()
    require(who, OPERATOR, AUDITOR)
    query = schemas.TENANT_QUERY.load(request.args.to_dict())
    return render(_tables().player_limits(who, _player_id(player_id), query["tenant"]))


@v1.put("/players/<player_id>/limits")
def set_limits(player_id: str) -> Response:
    who = caller()
    require(who, OPERATOR)
    body = load_body(schemas.PLAYER_LIMITS)
    until = body["excluded_until"]
    return render(
        _tables().set_player_limits(
            who,
            _player_id(player_id),
            body["loss_limit_24h"],
            None if until is None else iso(until),
        )
    )


# --- webhooks ---------------------------------------------------------------------------------


@v1.post("/webhooks")
def register_webhook() -> Response:
    who = caller()
    require(who, OPERATOR)
    body = load_body(schemas.WEBHOOK)
    return render(_tables().register_webhook(who, body["url"], body["events"]))


@v1.get("/webhooks")
def list_webhooks() -> Response:
    who = caller()
    require(who, OPERATOR)
    schemas.NO_QUERY.load(request.args.to_dict())
    return render(_tables().list_webhooks(who))


@v1.delete("/webhooks/<webhook_id>")
def delete_webhook(webhook_id: str) -> Response:
    who = caller()
    require(who, OPERATOR)
    return render(_tables().delete_webhook(who, webhook_id))


@v1.get("/webhooks/<webhook_id>/deliveries")
def webhook_deliveries(webhook_id: str) -> Response:
    who = caller()
    require(who, OPERATOR)
    query = schemas.DELIVERIES_QUERY.load(request.args.to_dict())
    return render(_tables().webhook_deliveries(who, webhook_id, query["after"], query["limit"]))


@v1.post("/webhooks/<webhook_id>/deliveries/<delivery_id>/redeliver")
def redeliver(webhook_id: str, delivery_id: str) -> Response:
    who = caller()
    require(who, OPERATOR)
    load_body(schemas.EMPTY)
    return render(_tables().redeliver(who, webhook_id, delivery_id))


def _player_id(player_id: str) -> str:
    if schemas.ID_PATTERN.fullmatch(player_id) is None:
        raise BadRequest("player_id must be 1-64 letters, digits or _ . @ -", 422, "player_id")
    return player_id


# --- audits -----------------------------------------------------------------------------------


@v1.post("/tables/<table_id>/audit")
def start_audit(table_id: str) -> Response:
    who = caller()
    require(who, OPERATOR, AUDITOR)
    load_body(schemas.EMPTY)
    asked = conditions(command=False, versioned=False)
    return render(_tables().start_audit(who, table_id, conditions=asked))


@v1.get("/audits/<audit_id>")
def get_audit(audit_id: str) -> Response:
    return render(_tables().audit(caller(), audit_id))


@v1.post("/reports/collusion")
def start_collusion_report() -> Response:
    who = caller()
    require(who, OPERATOR, AUDITOR)
    asked = load_body(schemas.COLLUSION_REQUEST)
    if asked["from_"] and asked["to"] and asked["from_"] >= asked["to"]:
        raise BadRequest("from must be before to", 422, "from")
    return render(
        _tables().start_collusion_report(
            who, start=asked["from_"], end=asked["to"], min_hands=asked["min_hands"]
        )
    )


@v1.get("/reports/<report_id>")
def get_report(report_id: str) -> Response:
    return render(_tables().report(caller(), report_id))
