"""Commands: each reads a state and returns the events it decides; none changes the state.

Every command `x` has `verify_x(...)`, which raises a `RuleViolation` saying why not (or an
`InvalidCommand` for malformed arguments), and where useful `can_x(...)`, its yes/no form, so
the API and clients ask the rules instead of repeating them. Randomness (the deck seed) and
time (`now`) are arguments. This module is the rules' command surface; the commands live in
`seating`, `client_seeds`, `dealing` and `play`.
"""

from __future__ import annotations

from datetime import datetime

from . import events as ev
from .betting import bet, can_bet, verify_bet
from .client_seeds import set_client_seed, verify_set_client_seed
from .dealing import (
    deal,
    deal_from,
    enforce_cover,
    match_owed,
    short_of_cover,
    verify_deal,
    verify_enforce_cover,
    verify_void,
    void_hand,
)
from .ending import can_end, end_table, verify_end
from .errors import InvalidCommand, RuleViolation
from .guards import can, require_table
from .play import (
    can_declare,
    close_at_deadline,
    declare,
    draw,
    pass_card,
    verify_close_at_deadline,
    verify_declare,
    verify_draw,
    verify_pass_card,
)
from .seating import (
    create_table,
    free_seat,
    leave,
    seat_player,
    sit_in,
    sit_out,
    top_up,
    verify_leave,
    verify_seat_player,
    verify_sit_in,
    verify_sit_out,
    verify_top_up,
)
from .settlement import settle
from .state import DECLARING, SHOWDOWN, TableState


def verify_resolve(state: TableState) -> None:
    """A hand can be resolved once its declarations are complete."""
    require_table(state)
    if state.hand is None:
        if state.rules.auto_resolve and state.hands_dealt:
            raise RuleViolation(
                f"no hand is in play: hand {state.hands_dealt} is over, and this table resolves "
                "its hands by itself once the declarations are complete (auto_resolve)"
            )
        raise RuleViolation("no hand is in play")
    hand = state.hand
    if hand.phase == DECLARING:
        waiting = ", ".join(str(s) for s in hand.undecided())
        raise RuleViolation(
            f"declarations for hand {hand.number} are not complete (waiting for seat(s) {waiting})"
        )
    if hand.phase != SHOWDOWN:
        raise RuleViolation(f"hand {hand.number} is still {hand.phase}")


def can_resolve(state: TableState) -> bool:
    """Whether the hand in play can be resolved now."""
    return can(verify_resolve, state)


def resolve(state: TableState, now: datetime) -> list[ev.Event]:
    """Showdown and settlement of the hand in play."""
    verify_resolve(state)
    return [settle(state, now)]


__all__ = [
    "InvalidCommand",
    "bet",
    "can_bet",
    "verify_bet",
    "can_declare",
    "can_resolve",
    "close_at_deadline",
    "create_table",
    "can_end",
    "end_table",
    "verify_end",
    "deal",
    "deal_from",
    "enforce_cover",
    "short_of_cover",
    "verify_enforce_cover",
    "declare",
    "draw",
    "pass_card",
    "free_seat",
    "leave",
    "match_owed",
    "resolve",
    "seat_player",
    "set_client_seed",
    "sit_in",
    "sit_out",
    "top_up",
    "verify_close_at_deadline",
    "verify_deal",
    "verify_declare",
    "verify_draw",
    "verify_pass_card",
    "verify_leave",
    "verify_resolve",
    "verify_seat_player",
    "verify_set_client_seed",
    "verify_sit_in",
    "verify_sit_out",
    "verify_top_up",
    "verify_void",
    "void_hand",
]
