"""The betting round of draw guts (option `betting_round`; docs/rules.md), after the draw.

The in-players act in turn from the button's left, fixed limit: `check` (nothing owed),
`bet` (`bet_size`, when nobody has bet), `call` (put in what is owed), `raise` (by `bet_size`,
at most `max_raises` raises in the round) or `fold`. The round ends when one player is left or
everyone still in has acted since the last bet or raise. Every chip bet goes into the pot at
once; a folder has lost the hand and matches like any losing in-player (settlement.py).

A player who cannot put in what an action costs is refused (409 naming the shortfall): there
are no all-in bets and no side pots, so every player still in has put in the same; the short
player may still check when nothing is owed, or fold. At the deadline the platform checks for
the silent player on turn when they owe nothing, else folds for them.
"""

from __future__ import annotations

from datetime import datetime

from . import events as ev
from .errors import InvalidCommand, NotYourTurn, RuleViolation
from .guards import can, require_in_time, require_phase
from .state import BET_ACTIONS, BETTING, Hand, TableState
from .times import iso, later


def _price(state: TableState, hand: Hand, seat: int, action: str) -> tuple[int, int, int]:
    """(chips `seat` puts in, the bet after it, the raises after it) for `action`."""
    size = state.rules.bet_amount
    if action == "bet":
        return size, size, hand.raises
    if action == "call":
        return hand.to_call(seat), hand.bet_to, hand.raises
    if action == "raise":
        return hand.to_call(seat) + size, hand.bet_to + size, hand.raises + 1
    return 0, hand.bet_to, hand.raises  # check, fold


def verify_bet(state: TableState, seat: int, action: str, now: datetime) -> None:
    """Why `seat` may not `action` in the betting round now, if it may not."""
    if action not in BET_ACTIONS:
        raise InvalidCommand(f"action must be one of: {', '.join(BET_ACTIONS)}", "action")
    hand = require_phase(state, BETTING)
    if seat not in hand.bettors:
        raise RuleViolation(f"seat {seat} is not in the betting round of hand {hand.number}")
    if seat in hand.folded:
        raise RuleViolation(f"seat {seat} has folded in hand {hand.number}")
    if hand.bet_turn != seat:
        raise NotYourTurn(f"it is seat {hand.bet_turn}'s turn to bet")
    owed = hand.to_call(seat)
    if action == "check" and owed:
        raise RuleViolation(f"there is a bet of {owed} to call: call, raise or fold")
    if action == "bet" and hand.bet_to:
        raise RuleViolation(f"there is already a bet of {hand.bet_to}: call, raise or fold")
    if action == "call" and not owed:
        raise RuleViolation("there is no bet to call: check or bet")
    if action == "raise":
        if not hand.bet_to:
            raise RuleViolation("there is no bet to raise: bet instead")
        if hand.raises >= state.rules.max_raises:
            raise RuleViolation(
                f"the raise cap is reached ({state.rules.max_raises} raises): call or fold"
            )
    cost = _price(state, hand, seat, action)[0]
    stack = state.seats[seat].stack
    if cost > stack:
        instead = "fold" if owed else "check or fold"
        raise RuleViolation(
            f"seat {seat} has {stack} chips and a {action} costs {cost}: {instead} "
            "(there are no all-in bets)"
        )
    require_in_time(hand, now)


def can_bet(state: TableState, seat: int, action: str, now: datetime) -> bool:
    """Whether `seat` may `action` in the betting round now."""
    return can(verify_bet, state, seat, action, now)


def _bet_event(state: TableState, seat: int, action: str, by: str, now: datetime) -> ev.BetMade:
    hand = state.hand
    assert hand is not None
    amount, bet_to, raises = _price(state, hand, seat, action)
    going_on = hand.turn_after(seat, action) is not None
    return ev.BetMade(
        hand=hand.number,
        seat=seat,
        action=action,
        amount=amount,
        bet_to=bet_to,
        raises=raises,
        by=by,
        deadline=later(now, state.rules.decision_timeout_s) if going_on else None,
        at=iso(now),
    )


def bet(state: TableState, seat: int, action: str, now: datetime) -> list[ev.Event]:
    """`seat` acts in the betting round; the round ends with the last action it needs."""
    verify_bet(state, seat, action, now)
    return [_bet_event(state, seat, action, "player", now)]


def bet_at_deadline(state: TableState, now: datetime) -> ev.BetMade:
    """The platform acts for the silent player on turn (the deadline has passed, which the
    caller checked): a check when they owe nothing, else a fold."""
    hand = state.hand
    assert hand is not None and hand.bet_turn is not None
    seat = hand.bet_turn
    return _bet_event(state, seat, "fold" if hand.to_call(seat) else "check", "platform", now)
