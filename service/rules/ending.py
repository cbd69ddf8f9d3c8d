"""Ending a table (docs/rules.md, "Ending a table"): never during a hand. The chips left in the pot,
low pot, reserve and side pot go back to the players of the current game in proportion to what
each paid into them during that game (antes, matches, wimp penalties, bets), rounded down, the
chips left over one each in seat order from the button's left; then every seated player is
cashed out, and the table takes no more commands. This is also how a pot stranded by players
who can no longer pay the ante is settled.

Where the rulebook is silent:
- "The players of the current game" are those still seated who paid into it: a player who left
  during the game was cashed out then and gave up their share (as leaving mid-game does in
  play); a new player in their seat paid nothing yet.
- If no seated player paid into the current game (every payer left), the seated players share
  the chips equally, the odd ones from the button's left as above.
- With chips left and nobody seated, the table cannot be ended (409): nobody could be paid.
"""

from __future__ import annotations

from datetime import datetime

from . import events as ev
from .errors import RuleViolation
from .guards import require_table
from .state import LEFT, TableState
from .times import iso


def left_over(state: TableState) -> int:
    """The chips in the pot, low pot, reserve and side pot."""
    return state.pot + state.low_pot + state.reserve + state.side_pot


def verify_end(state: TableState) -> None:
    """A table can be ended between hands, once (and with someone to return the pots to)."""
    require_table(state)
    if state.hand is not None:
        raise RuleViolation(
            f"hand {state.hand.number} is in play (phase {state.hand.phase}): end the table "
            "after it is resolved or voided"
        )
    if left_over(state) and not _seated(state):
        raise RuleViolation(f"{left_over(state)} chips are in the pots and nobody is seated")


def can_end(state: TableState) -> bool:
    """Whether `end_table` would be accepted."""
    try:
        verify_end(state)
    except RuleViolation:
        return False
    return True


def refunds(state: TableState) -> dict[int, int]:
    """What each seated player gets back of the chips left in the pots (see the module doc)."""
    chips = left_over(state)
    seated = _seated(state)
    if not chips or not seated:
        return {}
    paid = {s: state.game_paid.get(s, 0) for s in seated if state.game_paid.get(s, 0) > 0}
    if not paid:
        paid = dict.fromkeys(seated, 1)  # nobody seated paid in: equal shares
    total = sum(paid.values())
    shares = {s: chips * amount // total for s, amount in paid.items()}
    order = _from_buttons_left(state, list(paid))
    for i in range(chips - sum(shares.values())):  # fewer than len(order): each gave < 1
        shares[order[i]] += 1
    return {s: a for s, a in shares.items() if a}


def end_table(state: TableState, now: datetime) -> list[ev.Event]:
    """Return the pots and cash everyone out (see the module doc)."""
    verify_end(state)
    back = refunds(state)
    seated = _seated(state)
    return [
        ev.TableEnded(
            refunds=back,
            cash_outs={s: state.seats[s].stack + back.get(s, 0) for s in seated},
            players={s: state.seats[s].player_id for s in seated},
            at=iso(now),
        )
    ]


def _seated(state: TableState) -> list[int]:
    return sorted(s for s, holder in state.seats.items() if holder.status != LEFT)


def _from_buttons_left(state: TableState, seats: list[int]) -> list[int]:
    """`seats` in seat order starting from the button's left (seat 0's side without a
    button yet)."""
    start = 0 if state.button is None else state.button + 1
    size = state.rules.seats
    return sorted(seats, key=lambda s: (s - start) % size)
