"""Audits and reports: start one (a queued job) and read its result."""

from __future__ import annotations

from flask import Blueprint, Response

from service.application import TableService
from service.application.access import require
from service.rules.views import AUDITOR, OPERATOR

from .. import schemas
from ..errors import BadRequest
from ..http import caller, conditions, load_body, render, services

routes = Blueprint("reports", __name__, url_prefix="/v1")


def _tables() -> TableService:
    return services().usecases


# --- audits -----------------------------------------------------------------------------------


@routes.post("/tables/<table_id>/audit")
def start_audit(table_id: str) -> Response:
    who = caller()
    require(who, OPERATOR, AUDITOR)
    load_body(schemas.EMPTY)
    asked = conditions(command=False, versioned=False)
    return render(_tables().start_audit(who, table_id, conditions=asked))


@routes.get("/audits/<audit_id>")
def get_audit(audit_id: str) -> Response:
    return render(_tables().audit(caller(), audit_id))


@routes.post("/reports/collusion")
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


@routes.get("/reports/<report_id>")
def get_report(report_id: str) -> Response:
    return render(_tables().report(caller(), report_id))
