"""Showdown and settlement: who wins what, who matches what, where the pot goes next.

Let P be the pot in play. Nobody in: P carries over (with the wimp rule the best hand pays a
penalty). One in: they take P unseen (with a kitty they must beat it). Two or more: the best
hand wins P (ties split, odd chips from the button's left), and losers match P (all of them, or
only the lowest). Caps, reserve and short stacks then bound what moves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from . import events as ev
from .ranking import make_evaluator
from .ruleset import Ruleset
from .state import LEFT, SITTING_OUT, TableState
from .times import iso, later

NOBODY_IN = "nobody_in"
UNCONTESTED = "uncontested"
SHOWDOWN = "showdown"
KITTY_WINS = "kitty_wins"
ALL_TIED = "all_tied"


def evaluator_for(rules: Ruleset) -> Callable[[Sequence[str]], int]:
    """The hand-strength function the ruleset plays with (higher is better)."""
    return make_evaluator(
        rules.cards,
        straights_and_flushes=rules.straights_and_flushes,
        ace_low_straight=rules.ace_low_straight,
        suit_tiebreak=rules.suit_tiebreak,
    )


def split(amount: int, winners: Sequence[int]) -> dict[int, int]:
    """`amount` shared equally; indivisible chips go one each in `winners`' order."""
    share, odd = divmod(amount, len(winners))
    return {seat: share + (1 if i < odd else 0) for i, seat in enumerate(winners)}


def _next_button(state: TableState, game_over: bool) -> int:
    hand = state.hand
    assert hand is not None
    if state.rules.button_moves == "game" and not game_over:
        return hand.button
    size = state.rules.seats
    for step in range(1, size + 1):
        seat = state.seats.get((hand.button + step) % size)
        if seat is not None and seat.status not in (SITTING_OUT, LEFT):
            return seat.seat
    return hand.button


def settle(state: TableState, now: datetime) -> ev.HandResolved:
    """The `HandResolved` event for the hand in play (its declarations are complete)."""
    hand = state.hand
    assert hand is not None
    rules = state.rules
    strength = evaluator_for(rules)
    pot_in_play = state.pot
    stacks = {s: state.seats[s].stack for s in hand.order}
    in_seats = tuple(s for s in hand.order if hand.decisions.get(s) == "in")
    owed = (
        pot_in_play if rules.cap_mode in ("none", "reserve") else min(pot_in_play, rules.cap_amount)
    )
    take_limit = min(pot_in_play, rules.cap_amount) if rules.cap_mode == "cap" else pot_in_play

    won: dict[int, int] = {}
    matched: dict[int, int] = {}
    wimp: dict[int, int] = {}
    shown: dict[int, tuple[str, ...]] = {}
    kitty_shown: tuple[str, ...] = ()
    winners: tuple[int, ...] = ()
    taken = 0
    side_taken = 0

    def pay(seat: int, amount: int) -> int:
        # A player pays at most what they have on the table (cover makes sure they can).
        paid = min(amount, stacks[seat])
        stacks[seat] -= paid
        return paid

    if not in_seats:
        outcome = NOBODY_IN
        if rules.wimp_penalty:
            shown = {s: hand.cards[s] for s in hand.order}
            scores = {s: strength(hand.cards[s]) for s in hand.order}
            best = max(scores.values())
            for s in hand.order:
                if scores[s] == best:
                    wimp[s] = pay(s, rules.wimp_penalty * rules.ante)
    elif len(in_seats) == 1 and not rules.kitty:
        outcome = UNCONTESTED
        winners = in_seats
    else:
        scores = {s: strength(hand.cards[s]) for s in in_seats}
        shown = {s: hand.cards[s] for s in in_seats}
        best = max(scores.values())
        kitty_wins = False
        if rules.kitty:
            kitty_shown = hand.kitty
            kitty_wins = strength(hand.kitty) >= best  # a tie with the kitty is a loss
        if kitty_wins:
            outcome = KITTY_WINS
            losers = list(in_seats)
        else:
            winners = tuple(s for s in in_seats if scores[s] == best)
            losers = [s for s in in_seats if scores[s] != best]
            outcome = ALL_TIED if not losers else SHOWDOWN
        if losers and rules.match == "lowest_loser":
            lowest = min(scores[s] for s in losers)
            losers = [s for s in losers if scores[s] == lowest]
        for s in losers:
            matched[s] = pay(s, owed)

    if winners:
        taken = take_limit
        side_taken = state.side_pot
        for s, amount in split(taken + side_taken, winners).items():
            won[s] = amount

    pot = pot_in_play - taken + sum(matched.values())
    side_pot = state.side_pot - side_taken
    if rules.wimp_into == "side_pot":
        side_pot += sum(wimp.values())
    else:
        pot += sum(wimp.values())
    reserve = state.reserve
    if rules.cap_mode == "reserve":
        total = pot + reserve
        pot = min(total, rules.cap_amount)
        reserve = total - pot
    game_over = pot + reserve + side_pot == 0
    for s in won:
        stacks[s] += won[s]
    removed = {s: "no_chips" for s in hand.order if stacks[s] == 0 and not game_over}
    grace = (
        later(now, rules.cover_grace_s) if rules.short_stack == "cover" and not game_over else None
    )
    return ev.HandResolved(
        hand=hand.number,
        outcome=outcome,
        pot_in_play=pot_in_play,
        reserve_before=state.reserve,
        side_pot_before=state.side_pot,
        in_seats=in_seats,
        winners=winners,
        won=won,
        matched=matched,
        wimp=wimp,
        shown=shown,
        kitty_shown=kitty_shown,
        pot=pot,
        reserve=reserve,
        side_pot=side_pot,
        game_over=game_over,
        button=_next_button(state, game_over),
        removed=removed,
        grace_until=grace,
        at=iso(now),
    )
