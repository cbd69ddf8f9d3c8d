"""Money: the ledger, players' limits and the tenant's protection profile, webhooks (register,
list, deliveries, redeliver) and the casino wallet (settings, secret, transactions)."""

from __future__ import annotations

from datetime import datetime

from flask import Blueprint, Response, request

from service.application import TableService
from service.application.access import require
from service.rules.times import iso
from service.rules.views import AUDITOR, OPERATOR

from .. import schemas
from ..errors import BadRequest
from ..http import caller, load_body, render, services

routes = Blueprint("money", __name__, url_prefix="/v1")


def _tables() -> TableService:
    return services().usecases


# --- money: the ledger and limits ---------------------------------------------------------------


@routes.get("/ledger")
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


@routes.get("/players/<player_id>/limits")
def get_limits(player_id: str) -> Response:
    who = caller()
    require(who, OPERATOR, AUDITOR)
    query = schemas.TENANT_QUERY.load(request.args.to_dict())
    return render(_tables().player_limits(who, _player_id(player_id), query["tenant"]))


@routes.put("/players/<player_id>/limits")
def set_limits(player_id: str) -> Response:
    who = caller()
    require(who, OPERATOR)
    body = load_body(schemas.PLAYER_LIMITS)
    asked = {k: iso(v) if isinstance(v, datetime) else v for k, v in body.items()}
    return render(_tables().set_player_limits(who, _player_id(player_id), asked))


@routes.get("/protection/profile")
def get_protection_profile() -> Response:
    who = caller()
    require(who, OPERATOR, AUDITOR)
    query = schemas.TENANT_QUERY.load(request.args.to_dict())
    return render(_tables().protection_profile(who, query["tenant"]))


@routes.put("/protection/profile")
def set_protection_profile() -> Response:
    who = caller()
    require(who, OPERATOR)
    body = load_body(schemas.PROTECTION_PROFILE)
    return render(_tables().set_protection_profile(who, body["profile"]))


# --- webhooks ---------------------------------------------------------------------------------


@routes.post("/webhooks")
def register_webhook() -> Response:
    who = caller()
    require(who, OPERATOR)
    body = load_body(schemas.WEBHOOK)
    return render(_tables().register_webhook(who, body["url"], body["events"]))


@routes.get("/webhooks")
def list_webhooks() -> Response:
    who = caller()
    require(who, OPERATOR)
    schemas.NO_QUERY.load(request.args.to_dict())
    return render(_tables().list_webhooks(who))


@routes.delete("/webhooks/<webhook_id>")
def delete_webhook(webhook_id: str) -> Response:
    who = caller()
    require(who, OPERATOR)
    return render(_tables().delete_webhook(who, webhook_id))


@routes.get("/webhooks/<webhook_id>/deliveries")
def webhook_deliveries(webhook_id: str) -> Response:
    who = caller()
    require(who, OPERATOR)
    query = schemas.DELIVERIES_QUERY.load(request.args.to_dict())
    return render(_tables().webhook_deliveries(who, webhook_id, query["after"], query["limit"]))


@routes.post("/webhooks/<webhook_id>/deliveries/<delivery_id>/redeliver")
def redeliver(webhook_id: str, delivery_id: str) -> Response:
    who = caller()
    require(who, OPERATOR)
    load_body(schemas.EMPTY)
    return render(_tables().redeliver(who, webhook_id, delivery_id))


# --- the casino wallet ------------------------------------------------------------------------


@routes.put("/wallet")
def set_wallet() -> Response:
    who = caller()
    require(who, OPERATOR)
    body = load_body(schemas.WALLET)
    return render(
        _tables().set_wallet(who, body["url"], body["currency"], body["chip_value_minor"])
    )


@routes.get("/wallet")
def get_wallet() -> Response:
    who = caller()
    require(who, OPERATOR)
    schemas.NO_QUERY.load(request.args.to_dict())
    return render(_tables().get_wallet(who))


@routes.delete("/wallet")
def delete_wallet() -> Response:
    who = caller()
    require(who, OPERATOR)
    return render(_tables().delete_wallet(who))


@routes.post("/wallet/secret")
def rotate_wallet_secret() -> Response:
    who = caller()
    require(who, OPERATOR)
    load_body(schemas.EMPTY)
    return render(_tables().rotate_wallet_secret(who))


@routes.get("/wallet/transactions")
def wallet_transactions() -> Response:
    who = caller()
    require(who, OPERATOR, AUDITOR)
    query = schemas.WALLET_TRANSACTIONS_QUERY.load(request.args.to_dict())
    match = {k: query[k] for k in ("status", "player_id", "table_id") if query[k] is not None}
    page = _tables().wallet_transactions(
        who, query["after"], query["limit"], match, query["tenant"]
    )
    return render(page)


def _player_id(player_id: str) -> str:
    if schemas.ID_PATTERN.fullmatch(player_id) is None:
        raise BadRequest("player_id must be 1-64 letters, digits or _ . @ -", 422, "player_id")
    return player_id
