"""Players' entropy: each seated player may choose a client seed of their own for the next deal.

Why a player can trust a deck without trusting the operator: the server's seed for a hand is
committed (its SHA-256 published) when the hand before it is dealt, so a seed a player chooses
after that cannot have been foreseen when the server's seed was drawn. A seed therefore counts
for the next deal only: that deal mixes in the seeds of the seats it deals in (in seat order,
into the v2 deck context, `cards.hand_context`) and drops every other seed chosen for it. A
seed kept for a later hand would have been chosen before that hand's server seed was drawn.

Nothing the operator chooses may come after the players' seeds either: the operator knows the
server seed, so an operator's `client_seed` chosen at the deal, with the players' seeds in
view, could be tried value after value until the deck suits the house. A deal that mixes in
players' seeds therefore takes no operator `client_seed` (`verify_operator_seed`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Final

from . import events as ev
from .errors import InvalidCommand, RuleViolation
from .guards import require_table, seat_holder
from .state import TableState
from .times import iso

MAX_CLIENT_SEED: Final = 128
"""The longest seed a player may choose, in characters."""

CLIENT_SEED: Final = re.compile(rf"[\x21-\x7e]{{1,{MAX_CLIENT_SEED}}}\Z")
"""A player's seed: 1-128 visible ASCII characters (no spaces or control characters, so what
a player copies is what was mixed in; hex, base64 and words all fit)."""


def verify_set_client_seed(state: TableState, seat: int, client_seed: str) -> None:
    """A seated player may choose (or change) their seed at any time; it counts for the next
    deal. The seed must be 1-128 visible ASCII characters."""
    require_table(state)
    if not isinstance(client_seed, str) or not CLIENT_SEED.fullmatch(client_seed):
        raise InvalidCommand(
            f"client_seed must be 1-{MAX_CLIENT_SEED} visible ASCII characters "
            "(letters, digits, punctuation; no spaces)",
            "client_seed",
        )
    seat_holder(state, seat)


def set_client_seed(
    state: TableState, seat: int, client_seed: str, now: datetime
) -> list[ev.Event]:
    """The player at `seat` chooses `client_seed` for the next deal."""
    verify_set_client_seed(state, seat, client_seed)
    hand = state.hands_dealt + 1
    return [ev.ClientSeedSet(seat=seat, client_seed=client_seed, hand=hand, at=iso(now))]


def seeds_for_deal(state: TableState, players: Sequence[int]) -> dict[int, str]:
    """The seeds the next deal mixes in: those of the seats it deals in, by seat."""
    return {s: state.client_seeds[s] for s in sorted(players) if s in state.client_seeds}


def verify_operator_seed(client_seed: str, player_seeds: dict[int, str]) -> None:
    """The operator's `client_seed` is refused in a deal that mixes in players' seeds: it
    would be chosen after them, by the one party that knows the server seed."""
    if client_seed and player_seeds:
        seats = ", ".join(str(s) for s in player_seeds)
        raise RuleViolation(
            f"seat(s) {seats} chose client seeds for this hand: the operator's client_seed, "
            "chosen after theirs by the party that knows the server seed, could steer the "
            "deck; deal without one"
        )
