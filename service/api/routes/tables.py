"""The game's routes: tables, seats and hands (create, seat, top up, deal, declare, ...,
resolve, end). Each calls one use case and renders its outcome."""

from __future__ import annotations

from flask import Blueprint, Response, request

from service.application import TableService
from service.application.access import require
from service.rules.views import OPERATOR, PLAYER

from .. import schemas
from ..errors import BadRequest
from ..http import caller, conditions, load_body, render, services

routes = Blueprint("tables", __name__, url_prefix="/v1")


def _tables() -> TableService:
    return services().usecases


# --- tables -----------------------------------------------------------------------------------


@routes.post("/tables")
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


@routes.get("/tables")
def list_tables() -> Response:
    who = caller()
    query = schemas.TABLES_QUERY.load(request.args.to_dict())
    return render(_tables().table_list(who, query["after"], query["limit"], query["status"]))


@routes.get("/tables/<table_id>")
def get_table(table_id: str) -> Response:
    who = caller()
    schemas.NO_QUERY.load(request.args.to_dict())  # unknown parameters: 422
    return render(_tables().table(who, table_id))


# --- players ----------------------------------------------------------------------------------


@routes.post("/tables/<table_id>/players")
def seat_player(table_id: str) -> Response:
    who = caller()
    require(who, OPERATOR)
    body = load_body(schemas.SEAT_PLAYER)
    seat = _tables().wallet_seat if body["funding"] == "wallet" else _tables().seat
    return render(
        seat(
            who,
            table_id,
            body["player_id"],
            body["buy_in"],
            body.get("seat"),
            conditions=conditions(),
        )
    )


@routes.post("/tables/<table_id>/players/<int:seat>/chips")
def top_up(table_id: str, seat: int) -> Response:
    who = caller()
    require(who, OPERATOR)
    body = load_body(schemas.TOP_UP)
    top_up = _tables().wallet_top_up if body["funding"] == "wallet" else _tables().top_up
    return render(top_up(who, table_id, seat, body["amount"], conditions=conditions()))


@routes.post("/tables/<table_id>/players/<int:seat>/sit-out")
def sit_out(table_id: str, seat: int) -> Response:
    who = caller()
    load_body(schemas.EMPTY)
    return render(_tables().sit_out(who, table_id, seat, conditions=conditions()))


@routes.post("/tables/<table_id>/players/<int:seat>/sit-in")
def sit_in(table_id: str, seat: int) -> Response:
    who = caller()
    load_body(schemas.EMPTY)
    return render(_tables().sit_in(who, table_id, seat, conditions=conditions()))


@routes.post("/tables/<table_id>/players/<int:seat>/away")
def go_away(table_id: str, seat: int) -> Response:
    who = caller()
    load_body(schemas.EMPTY)
    return render(_tables().go_away(who, table_id, seat, conditions=conditions()))


@routes.post("/tables/<table_id>/players/<int:seat>/back")
def come_back(table_id: str, seat: int) -> Response:
    who = caller()
    load_body(schemas.EMPTY)
    return render(_tables().come_back(who, table_id, seat, conditions=conditions()))


@routes.post("/tables/<table_id>/players/<int:seat>/reality-check")
def reality_check(table_id: str, seat: int) -> Response:
    who = caller()
    body = load_body(schemas.REALITY_CHECK_ANSWER)
    answer = _tables().answer_reality_check(
        who, table_id, seat, body["carry_on"], conditions=conditions()
    )
    return render(answer)


@routes.put("/tables/<table_id>/players/<int:seat>/client-seed")
def set_client_seed(table_id: str, seat: int) -> Response:
    who = caller()
    require(who, PLAYER)
    body = load_body(schemas.CLIENT_SEED_BODY)
    return render(
        _tables().set_client_seed(who, table_id, seat, body["client_seed"], conditions=conditions())
    )


@routes.delete("/tables/<table_id>/players/<int:seat>")
def leave(table_id: str, seat: int) -> Response:
    return render(_tables().leave(caller(), table_id, seat, conditions=conditions()))


# --- hands ------------------------------------------------------------------------------------


@routes.post("/tables/<table_id>/deal")
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


@routes.post("/tables/<table_id>/declare")
def declare(table_id: str) -> Response:
    who = caller()
    body = load_body(schemas.DECLARE)
    return render(_tables().declare(who, table_id, body["decision"], conditions=conditions()))


@routes.post("/tables/<table_id>/pass")
def pass_card(table_id: str) -> Response:
    who = caller()
    body = load_body(schemas.PASS_CARD)
    return render(_tables().pass_card(who, table_id, body["card"], conditions=conditions()))


@routes.post("/tables/<table_id>/draw")
def draw(table_id: str) -> Response:
    who = caller()
    body = load_body(schemas.DRAW)
    return render(_tables().draw(who, table_id, body["discard"], conditions=conditions()))


@routes.post("/tables/<table_id>/bet")
def bet(table_id: str) -> Response:
    who = caller()
    body = load_body(schemas.BET)
    return render(_tables().bet(who, table_id, body["action"], conditions=conditions()))


@routes.post("/tables/<table_id>/close")
def close(table_id: str) -> Response:
    who = caller()
    require(who, OPERATOR)
    load_body(schemas.EMPTY)
    return render(_tables().close(who, table_id, conditions=conditions()))


@routes.post("/tables/<table_id>/resolve")
def resolve(table_id: str) -> Response:
    who = caller()
    require(who, OPERATOR)
    load_body(schemas.EMPTY)
    return render(_tables().resolve(who, table_id, conditions=conditions()))


@routes.post("/tables/<table_id>/end")
def end_table(table_id: str) -> Response:
    who = caller()
    require(who, OPERATOR)
    load_body(schemas.EMPTY)
    return render(_tables().end_table(who, table_id, conditions=conditions()))


@routes.post("/tables/<table_id>/void")
def void(table_id: str) -> Response:
    who = caller()
    require(who, OPERATOR)
    body = load_body(schemas.VOID)
    return render(_tables().void(who, table_id, body["reason"], conditions=conditions()))
