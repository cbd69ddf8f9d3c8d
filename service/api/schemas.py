"""marshmallow schemas for every request body and query (unknown fields are refused).

Responses are built from the rules' views (already plain data) and documented in openapi.yaml;
a test checks every response against that spec.
"""

from __future__ import annotations

import re
from typing import Any

from marshmallow import RAISE, Schema, fields, validate

from service.rules.client_seeds import CLIENT_SEED, MAX_CLIENT_SEED
from service.rules.ruleset import MAX_CHIPS, MAX_TIMEOUT_S, PRESETS
from service.rules.state import BET_ACTIONS
from service.rules.views import TABLE_STATUSES

ID_PATTERN = re.compile(r"[A-Za-z0-9_.@-]{1,64}\Z")
ID = validate.Regexp(ID_PATTERN, error="1-64 letters, digits or _ . @ -")
CHIPS = validate.Range(min=1, max=MAX_CHIPS)


class Strict(Schema):
    """Refuse unknown fields; integers must be JSON numbers without a fraction, not strings."""

    class Meta:
        unknown = RAISE


class WholeNumber(fields.Integer):
    """A JSON number without a fractional part (``100`` or ``100.0``, as JSON Schema's
    ``integer``), as an int; strings and booleans are refused."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> int:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.make_error("invalid")
        result: int = super()._deserialize(value, attr, data, **kwargs)
        return result


def Int(**kwargs: Any) -> fields.Integer:  # noqa: N802 - a field factory, read like a type
    return WholeNumber(strict=True, **kwargs)


class CreateTable(Strict):
    table_id = fields.String(validate=ID)
    preset = fields.String(load_default="three-card", validate=validate.OneOf(sorted(PRESETS)))
    rules = fields.Dict(keys=fields.String(), load_default=dict)
    ante = Int(validate=CHIPS)
    seats = Int(validate=validate.Range(min=2, max=52))
    decision_timeout_s = Int(validate=validate.Range(min=1, max=MAX_TIMEOUT_S))


FUNDING = validate.OneOf(["chips", "wallet"])
"""Who pays for the chips: the casino, which funded them itself, or its wallet (a debit)."""


class SeatPlayer(Strict):
    player_id = fields.String(required=True, validate=ID)
    buy_in = Int(required=True, validate=CHIPS)
    seat = Int(validate=validate.Range(min=0, max=51))
    funding = fields.String(load_default="chips", validate=FUNDING)


class TopUp(Strict):
    amount = Int(required=True, validate=CHIPS)
    funding = fields.String(load_default="chips", validate=FUNDING)


class Deal(Strict):
    client_seed = fields.String(load_default="", validate=validate.Length(max=128))
    stacked_deck = fields.Dict(
        keys=fields.String(validate=validate.Length(max=8)),
        values=fields.List(
            fields.String(validate=validate.Length(max=3)), validate=validate.Length(max=52)
        ),
    )


class ClientSeed(Strict):
    """A player's seed for the next deal (the rules say which characters)."""

    client_seed = fields.String(
        required=True,
        validate=validate.Regexp(
            CLIENT_SEED, error=f"1-{MAX_CLIENT_SEED} visible ASCII characters, no spaces"
        ),
    )


class Declare(Strict):
    """`in` / `out`; at hi-lo tables `high` / `low` / `both` / `out` (the rules check which)."""

    decision = fields.String(
        required=True, validate=validate.OneOf(["in", "out", "high", "low", "both"])
    )


class PassCard(Strict):
    card = fields.String(required=True, validate=validate.Length(min=2, max=2))


class Draw(Strict):
    discard = fields.List(
        fields.String(validate=validate.Length(min=2, max=2)),
        required=True,
        validate=validate.Length(max=5),
    )


class Bet(Strict):
    """One action of the betting round (the rules check whether it is allowed now)."""

    action = fields.String(required=True, validate=validate.OneOf(BET_ACTIONS))


class Void(Strict):
    reason = fields.String(load_default="voided by the operator", validate=validate.Length(max=200))


class Empty(Strict):
    """Commands that take no fields (resolve, close, sit out, sit in)."""


class EventsQuery(Strict):
    """Query strings are text: these integers are parsed from it."""

    after = fields.Integer(load_default=0, validate=validate.Range(min=0, max=2**53))
    limit = fields.Integer(load_default=100, validate=validate.Range(min=1, max=1000))


class StreamQuery(Strict):
    """Where a stream resumes (or the Last-Event-ID header), and a browser's ticket."""

    after = fields.Integer(load_default=None, validate=validate.Range(min=0, max=2**53))
    ticket = fields.String(load_default=None, validate=validate.Length(min=1, max=512))


class TablesQuery(Strict):
    """A page of the table list: the cursor from the previous page, its size, and the status
    of the tables wanted (None: all)."""

    after = fields.String(load_default=None, validate=validate.Length(min=1, max=200))
    limit = fields.Integer(load_default=50, validate=validate.Range(min=1, max=200))
    status = fields.String(load_default=None, validate=validate.OneOf(TABLE_STATUSES))


TENANT = validate.Regexp(r"[a-z0-9-]{1,32}\Z", error="1-32 lowercase letters, digits or -")


class LedgerQuery(Strict):
    """A page of the ledger: the cursor from the previous page, its size, the filters, and
    (a regulator's) the tenant."""

    after = fields.String(load_default=None, validate=validate.Length(min=1, max=20))
    limit = fields.Integer(load_default=100, validate=validate.Range(min=1, max=1000))
    table_id = fields.String(load_default=None, validate=ID)
    player_id = fields.String(load_default=None, validate=ID)
    tenant = fields.String(load_default=None, validate=TENANT)


class HandsQuery(Strict):
    """A page of finished hands: filters, the cursor from the previous page, its size."""

    player_id = fields.String(load_default=None, validate=ID)
    table_id = fields.String(load_default=None, validate=ID)
    from_ = fields.AwareDateTime(load_default=None, format="iso", data_key="from")
    to = fields.AwareDateTime(load_default=None, format="iso")
    after = fields.String(
        load_default=None,
        validate=validate.Regexp(r"[0-9]{1,20}\.[0-9]{1,18}\Z", error="not a cursor of this list"),
    )
    limit = fields.Integer(load_default=20, validate=validate.Range(min=1, max=100))


class CollusionRequest(Strict):
    """What a collusion report covers: when the hands ended (both optional) and how many
    hands a pair must have shared to be scored."""

    from_ = fields.AwareDateTime(load_default=None, format="iso", data_key="from")
    to = fields.AwareDateTime(load_default=None, format="iso")
    min_hands = fields.Integer(load_default=20, validate=validate.Range(min=1, max=100_000))


class TenantQuery(Strict):
    """A regulator's choice of tenant."""

    tenant = fields.String(load_default=None, validate=TENANT)


class PlayerLimits(Strict):
    """A player's responsible-gaming limits (null: none)."""

    loss_limit_24h = Int(
        required=True, allow_none=True, validate=validate.Range(min=0, max=MAX_CHIPS)
    )
    excluded_until = fields.AwareDateTime(required=True, allow_none=True, format="iso")
    # Player protection: absent leaves the value as it is.
    reality_check_minutes = Int(allow_none=True, validate=validate.Range(min=1, max=24 * 60))
    session_limit_minutes = Int(allow_none=True, validate=validate.Range(min=1, max=7 * 24 * 60))
    timeout_until = fields.AwareDateTime(allow_none=True, format="iso")


class ProtectionProfile(Strict):
    """A tenant's player-protection profile."""

    profile = fields.String(required=True, validate=validate.Length(min=1, max=40))


class RealityCheckAnswer(Strict):
    """The answer to a reality check: go on playing, or stop."""

    carry_on = fields.Boolean(required=True, data_key="continue", truthy={True}, falsy={False})


class Webhook(Strict):
    """A webhook to register: where to post, and which events."""

    url = fields.String(required=True, validate=validate.Length(min=1, max=2000))
    events = fields.List(
        fields.String(validate=validate.Length(min=1, max=40)),
        required=True,
        validate=validate.Length(min=1, max=20),
    )


class WalletSettings(Strict):
    """A tenant's casino wallet: where to call, its currency, a chip's value in minor units."""

    url = fields.String(required=True, validate=validate.Length(min=1, max=2000))
    currency = fields.String(required=True, validate=validate.Length(equal=3))
    chip_value_minor = Int(required=True, validate=validate.Range(min=1, max=10**9))


class WalletTransactionsQuery(Strict):
    """A page of the tenant's wallet transactions: filters, the cursor, its size, and (a
    regulator's) the tenant."""

    status = fields.String(
        load_default=None,
        validate=validate.OneOf(["pending", "confirmed", "rolled_back", "refused", "failed"]),
    )
    player_id = fields.String(load_default=None, validate=ID)
    table_id = fields.String(load_default=None, validate=ID)
    after = fields.Integer(load_default=0, validate=validate.Range(min=0))
    limit = fields.Integer(load_default=100, validate=validate.Range(min=1, max=1000))
    tenant = fields.String(load_default=None, validate=TENANT)


class DeliveriesQuery(Strict):
    """A page of a webhook's deliveries."""

    after = fields.Integer(load_default=0, validate=validate.Range(min=0))
    limit = fields.Integer(load_default=100, validate=validate.Range(min=1, max=1000))


class HandQuery(Strict):
    """The history's one option (the route checks its value: json or phh)."""

    format = fields.String(load_default="json")


# One instance of each, built once: building a schema costs more than loading a body with it.
CREATE_TABLE = CreateTable()
SEAT_PLAYER = SeatPlayer()
TOP_UP = TopUp()
DEAL = Deal()
CLIENT_SEED_BODY = ClientSeed()
DECLARE = Declare()
PASS_CARD = PassCard()
DRAW = Draw()
BET = Bet()
VOID = Void()
EMPTY = Empty()
EVENTS_QUERY = EventsQuery()
NO_QUERY = Empty()
HAND_QUERY = HandQuery()
STREAM_QUERY = StreamQuery()
TABLES_QUERY = TablesQuery()
LEDGER_QUERY = LedgerQuery()
HANDS_QUERY = HandsQuery()
COLLUSION_REQUEST = CollusionRequest()
TENANT_QUERY = TenantQuery()
PLAYER_LIMITS = PlayerLimits()
PROTECTION_PROFILE = ProtectionProfile()
REALITY_CHECK_ANSWER = RealityCheckAnswer()
WEBHOOK = Webhook()
WALLET = WalletSettings()
WALLET_TRANSACTIONS_QUERY = WalletTransactionsQuery()
DELIVERIES_QUERY = DeliveriesQuery()
