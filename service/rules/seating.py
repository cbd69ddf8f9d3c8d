"""Table and seat commands: open a table, seat a player, top up, sit out and in, leave."""

from __future__ import annotations

from datetime import datetime

from . import events as ev
from .cards import seed_commitment
from .errors import InvalidCommand, RuleViolation
from .guards import in_live_hand, require_amount, require_table, seat_holder
from .limits import verify_not_excluded
from .protection import SessionLimits, protection_set
from .ruleset import Ruleset
from .state import LEFT, SITTING_OUT, TableState
from .times import iso


def create_table(
    table_id: str,
    rules: Ruleset,
    now: datetime,
    first_seed: bytes = b"",
    tenant: str = "default",
) -> list[ev.Event]:
    """Open `tenant`'s table with a resolved ruleset, committing to `first_seed` for its first
    hand."""
    return [
        ev.TableCreated(
            table_id=table_id,
            rules=rules.to_dict(),
            at=iso(now),
            next_seed=first_seed.hex(),
            next_commitment=seed_commitment(first_seed) if first_seed else "",
            tenant=tenant,
        )
    ]


def free_seat(state: TableState) -> int | None:
    """The lowest empty seat, or None when the table is full."""
    for seat in range(state.rules.seats):
        holder = state.seats.get(seat)
        if holder is None or holder.status == LEFT:
            return seat
    return None


def verify_seat_player(
    state: TableState,
    player_id: str,
    buy_in: int,
    seat: int | None,
    *,
    excluded_until: str | None = None,
    now: datetime | None = None,
) -> int:
    """Check a player may sit down; returns the seat they would take. A player excluded
    until `excluded_until` (responsible gaming) may not before then."""
    require_table(state)
    require_amount(buy_in, "buy_in")
    if now is not None:
        verify_not_excluded(player_id, excluded_until, now)
    for holder in state.seated():
        if holder.player_id == player_id:
            raise RuleViolation(f"player {player_id!r} is already seated at seat {holder.seat}")
    if seat is None:
        found = free_seat(state)
        if found is None:
            raise RuleViolation(f"the table is full ({state.rules.seats} seats)")
        return found
    if not 0 <= seat < state.rules.seats:
        raise InvalidCommand(f"seat must be from 0 to {state.rules.seats - 1}", "seat")
    taken = state.seats.get(seat)
    if taken is not None and taken.status != LEFT:
        raise RuleViolation(f"seat {seat} is taken")
    return seat


def seat_player(
    state: TableState,
    player_id: str,
    buy_in: int,
    now: datetime,
    seat: int | None = None,
    excluded_until: str | None = None,
    limits: SessionLimits | None = None,
    transaction_id: str = "",
) -> list[ev.Event]:
    """Seat a player with `buy_in` chips; mid-game they wait for the next game. A player
    excluded (or on a time-out) until `excluded_until` cannot be seated before then. Their
    session runs under `limits` (reality checks, a session limit: protection.py). With
    `transaction_id` (a wallet's confirmed debit), the seat is wallet-funded."""
    chosen = verify_seat_player(
        state, player_id, buy_in, seat, excluded_until=excluded_until, now=now
    )
    seated = ev.PlayerSeated(chosen, player_id, buy_in, iso(now), transaction_id)
    return [seated, *protection_set(chosen, player_id, limits, now)]


def verify_top_up(state: TableState, seat: int, amount: int, transaction_id: str = "") -> None:
    """A player may add chips, but not while dealt into a live hand; a wallet-funded seat
    only from the wallet (`transaction_id`), and only such a seat from the wallet (its
    cash-outs are credited to the wallet; the others' are the casino's to pay)."""
    require_table(state)
    require_amount(amount, "amount")
    holder = seat_holder(state, seat)
    if in_live_hand(state, seat):
        raise RuleViolation(f"seat {seat} is in hand {state.hands_dealt}; top up after it")
    if holder.wallet != bool(transaction_id):
        funded = "from the wallet" if holder.wallet else "with chips, not from the wallet"
        raise RuleViolation(f"seat {seat} was funded {funded}; its top-ups must be too")


def top_up(
    state: TableState, seat: int, amount: int, now: datetime, transaction_id: str = ""
) -> list[ev.Event]:
    """Add `amount` chips to a seated player's stack."""
    verify_top_up(state, seat, amount, transaction_id)
    return [ev.ChipsAdded(seat, amount, iso(now), transaction_id)]


def verify_sit_out(state: TableState, seat: int) -> None:
    """A player may sit out unless already out or dealt into a live hand."""
    require_table(state)
    if seat_holder(state, seat).status == SITTING_OUT:
        raise RuleViolation(f"seat {seat} is already sitting out")
    if in_live_hand(state, seat):
        raise RuleViolation(f"seat {seat} is in hand {state.hands_dealt}; sit out after it")


def sit_out(state: TableState, seat: int, now: datetime) -> list[ev.Event]:
    """Sit a player out: no antes and no cards until they sit in."""
    verify_sit_out(state, seat)
    return [ev.PlayerSatOut(seat=seat, at=iso(now))]


def verify_sit_in(state: TableState, seat: int) -> None:
    """Only a sitting-out player can sit in."""
    require_table(state)
    if seat_holder(state, seat).status != SITTING_OUT:
        raise RuleViolation(f"seat {seat} is not sitting out")


def sit_in(state: TableState, seat: int, now: datetime) -> list[ev.Event]:
    """Bring a player back; mid-game they wait for the next game."""
    verify_sit_in(state, seat)
    return [ev.PlayerSatIn(seat=seat, at=iso(now))]


def verify_leave(state: TableState, seat: int) -> None:
    """A player may leave and cash out, but not in the middle of a hand they are dealt into."""
    require_table(state)
    seat_holder(state, seat)
    if in_live_hand(state, seat):
        raise RuleViolation(f"seat {seat} is in hand {state.hands_dealt}; leave after it")


def leave(state: TableState, seat: int, now: datetime) -> list[ev.Event]:
    """The player leaves with their whole stack."""
    verify_leave(state, seat)
    return [ev.PlayerLeft(seat=seat, cash_out=state.seats[seat].stack, at=iso(now))]
