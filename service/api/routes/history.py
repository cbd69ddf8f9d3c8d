"""The reads of a table's past and present: its events, hand histories (JSON or PHH), the
hands across tables, and the live feed (stream tickets and the SSE stream)."""

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
from service.rules.views import AUDITOR, OPERATOR

from .. import schemas
from ..errors import BadRequest
from ..http import caller, header, json_response, load_body, render, services

routes = Blueprint("history", __name__, url_prefix="/v1")

TICKET_TTL_S = 60
"""How long a stream ticket may be used to open a stream (the contract: at most 60 s)."""


def _tables() -> TableService:
    return services().usecases


# --- the log ----------------------------------------------------------------------------------


@routes.get("/tables/<table_id>/events")
def events(table_id: str) -> Response:
    who = caller()
    query = schemas.EVENTS_QUERY.load(request.args.to_dict())
    return render(_tables().events(who, table_id, query["after"], query["limit"]))


@routes.get("/tables/<table_id>/hands/<int:hand>")
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


@routes.get("/hands")
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


@routes.post("/tables/<table_id>/stream-tickets")
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


@routes.get("/tables/<table_id>/stream")
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
