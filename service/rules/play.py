"""Playing a hand: passing the trash, declaring, drawing, and closing what is open when its
deadline passes.

A hand goes through its phases in order: passing (pass the trash), declaring, drawing (draw
games), betting (draw games with a betting round: `betting.py`), showdown. Each waiting phase
has a deadline; `close_at_deadline` finishes it for the players who did not act: the platform
passes their lowest card, makes them out, has them stand pat, or checks or folds for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from . import events as ev
from .betting import bet_at_deadline
from .cards import RANKS, SUITS, draw_context, parse_cards, shuffled_deck
from .errors import InvalidCard, InvalidCommand, NotYourTurn, RuleViolation
from .guards import can, require_in_time, require_phase, require_table
from .limits import Allowance, verify_within_limit
from .state import (
    BETTING,
    DECLARING,
    DRAWING,
    PASSING,
    TIMED_PHASES,
    Hand,
    TableState,
    starts_betting,
)
from .times import iso, later, parse_iso


def _require_dealt(hand: Hand, seat: int) -> None:
    if seat not in hand.order:
        raise RuleViolation(f"seat {seat} is not dealt into hand {hand.number}")


# --- pass the trash ---------------------------------------------------------------------------


def lowest_card(cards: Sequence[str]) -> str:
    """The card passed for a player who did not choose: lowest rank, then lowest suit."""
    return min(cards, key=lambda c: (RANKS.index(c[0]), -SUITS.index(c[1])))


def verify_pass_card(state: TableState, seat: int, card: str, now: datetime) -> None:
    """Why `seat` may not pass `card` now, if it may not."""
    (card,) = parse_cards([card], "card")
    hand = require_phase(state, PASSING)
    _require_dealt(hand, seat)
    if seat in hand.passes:
        raise RuleViolation(f"seat {seat} has already passed a card in hand {hand.number}")
    if card not in hand.cards[seat]:
        raise InvalidCard(f"{card} is not one of your cards", "card")
    require_in_time(hand, now)


def _after_passes(state: TableState, passes: dict[int, str], now: datetime) -> list[ev.Event]:
    hand = state.hand
    assert hand is not None
    if len(passes) < len(hand.order):
        return []
    deadline = later(now, state.rules.decision_timeout_s)
    return [ev.CardsPassed(hand=hand.number, deadline=deadline, at=iso(now))]


def _left_of(hand: Hand, seat: int) -> int:
    return hand.order[(hand.order.index(seat) + 1) % len(hand.order)]


def pass_card(state: TableState, seat: int, card: str, now: datetime) -> list[ev.Event]:
    """Choose the card `seat` passes left; once everyone has chosen, all pass at once."""
    verify_pass_card(state, seat, card, now)
    hand = state.hand
    assert hand is not None
    chosen = ev.CardPassed(
        hand=hand.number,
        seat=seat,
        card=card,
        by="player",
        at=iso(now),
        to_seat=_left_of(hand, seat),
    )
    return [chosen, *_after_passes(state, {**hand.passes, seat: card}, now)]


# --- declaring --------------------------------------------------------------------------------


def verify_declare(
    state: TableState,
    seat: int,
    decision: str,
    now: datetime,
    allowance: Allowance | None = None,
) -> None:
    """Why `seat` may not declare `decision` now, if it may not (with the player's loss-limit
    `allowance`, also when declaring in could take them past it)."""
    allowed = state.rules.decisions
    if decision not in allowed:
        raise InvalidCommand(f"decision must be one of: {', '.join(allowed)}", "decision")
    hand = require_phase(state, DECLARING)
    _require_dealt(hand, seat)
    if seat in hand.decisions:
        raise RuleViolation(f"seat {seat} has already declared in hand {hand.number}")
    if state.rules.declare == "sequential" and hand.on_turn() != seat:
        raise NotYourTurn(f"it is seat {hand.on_turn()}'s turn to declare")
    require_in_time(hand, now)
    verify_within_limit(state, seat, decision, allowance)


def can_declare(
    state: TableState,
    seat: int,
    decision: str,
    now: datetime,
    allowance: Allowance | None = None,
) -> bool:
    """Whether `seat` may declare `decision` now."""
    return can(verify_declare, state, seat, decision, now, allowance)


def _draws(state: TableState, in_seats: list[int]) -> bool:
    """Whether the hand has a drawing phase: a draw game with a contest to draw for."""
    return state.rules.draw > 0 and (len(in_seats) >= 2 or (state.rules.kitty and in_seats != []))


def after_decision(state: TableState, decided: dict[int, str], now: datetime) -> list[ev.Event]:
    """The events that follow once `decided` are recorded: auto-in, reveal, community card."""
    hand = state.hand
    assert hand is not None
    out: list[ev.Event] = []
    if state.rules.declare == "sequential" and state.rules.dealer_auto_in:
        dealer = hand.order[-1]
        before = hand.order[:-1]
        if dealer not in decided and all(decided.get(s) == "out" for s in before):
            out.append(
                ev.DecisionMade(
                    hand=hand.number,
                    seat=dealer,
                    decision="in",
                    by="auto_in",
                    deadline=None,
                    at=iso(now),
                )
            )
            decided = {**decided, dealer: "in"}
    if len(decided) == len(hand.order):
        revealed = {s: decided[s] for s in hand.order}
        in_seats = [s for s in hand.order if revealed[s] != "out"]
        deadline = later(now, state.rules.decision_timeout_s) if _draws(state, in_seats) else None
        out.append(
            ev.DeclarationsRevealed(
                hand=hand.number, decisions=revealed, at=iso(now), deadline=deadline
            )
        )
        if state.rules.community_cards and in_seats:
            out.append(ev.CommunityCardDealt(hand=hand.number, card=state.deck[0], at=iso(now)))
    return out


def declare(
    state: TableState,
    seat: int,
    decision: str,
    now: datetime,
    allowance: Allowance | None = None,
) -> list[ev.Event]:
    """Record `seat`'s decision; reveal all decisions when it was the last one. With the
    player's loss-limit `allowance`, declaring in must stay within it."""
    verify_declare(state, seat, decision, now, allowance)
    hand = state.hand
    assert hand is not None
    sequential = state.rules.declare == "sequential"
    deadline = later(now, state.rules.decision_timeout_s) if sequential else None
    first = ev.DecisionMade(
        hand=hand.number,
        seat=seat,
        decision=decision,
        by="player",
        deadline=deadline,
        at=iso(now),
    )
    return [first, *after_decision(state, {**hand.decisions, seat: decision}, now)]


# --- drawing ----------------------------------------------------------------------------------


def verify_draw(state: TableState, seat: int, discard: Sequence[str], now: datetime) -> None:
    """Why `seat` may not discard `discard` and draw now, if it may not."""
    cards = parse_cards(discard, "discard")
    hand = require_phase(state, DRAWING)
    if seat not in hand.drawers:
        raise RuleViolation(f"seat {seat} is not drawing in hand {hand.number}")
    if hand.drawing_turn() != seat:
        raise NotYourTurn(f"it is seat {hand.drawing_turn()}'s turn to draw")
    if len(cards) > state.rules.draw:
        raise InvalidCommand(f"at most {state.rules.draw} cards may be discarded", "discard")
    for card in cards:
        if card not in hand.cards[seat]:
            raise InvalidCard(f"{card} is not one of your cards", "discard")
    require_in_time(hand, now)


def draw_from(state: TableState, count: int) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
    """Draw `count` cards: from the deck, and when it runs short from the earlier discards,
    shuffled by a stream derived from the hand's seed. Returns (drawn, deck after, reshuffled)."""
    hand = state.hand
    assert hand is not None
    deck = list(state.deck)
    reshuffled = False
    if len(deck) < count:
        pile = list(hand.discards)
        context = draw_context(
            state.table_id, hand.number, len(hand.drawn), hand.client_seed, hand.client_seeds
        )
        order = shuffled_deck(bytes.fromhex(hand.seed), context)
        rank = {card: i for i, card in enumerate(order)}
        deck += sorted(pile, key=rank.__getitem__)
        reshuffled = True
    return tuple(deck[:count]), tuple(deck[count:]), reshuffled


def _draw_event(
    state: TableState, seat: int, discard: Sequence[str], by: str, now: datetime
) -> ev.CardsDrawn:
    hand = state.hand
    assert hand is not None
    drawn, deck, reshuffled = draw_from(state, len(discard))
    remaining = [s for s in hand.drawers if s not in hand.drawn and s != seat]
    waits = remaining or starts_betting(state.rules, hand)  # the betting round starts next
    deadline = later(now, state.rules.decision_timeout_s) if waits else None
    return ev.CardsDrawn(
        hand=hand.number,
        seat=seat,
        discarded=tuple(discard),
        drawn=drawn,
        deck=deck,
        reshuffled=reshuffled,
        by=by,
        deadline=deadline,
        at=iso(now),
    )


def draw(state: TableState, seat: int, discard: Sequence[str], now: datetime) -> list[ev.Event]:
    """`seat` discards `discard` (possibly nothing: standing pat) and draws as many."""
    verify_draw(state, seat, discard, now)
    return [_draw_event(state, seat, tuple(discard), "player", now)]


# --- deadlines --------------------------------------------------------------------------------


def verify_close_at_deadline(state: TableState, now: datetime) -> None:
    """The platform may act for players only in a waiting phase, once its deadline passed."""
    require_table(state)
    hand = state.hand
    if hand is None:
        raise RuleViolation("no hand is in play")
    if hand.phase not in TIMED_PHASES:
        raise RuleViolation(f"hand {hand.number} is not waiting for anyone (it is {hand.phase})")
    if now < parse_iso(hand.deadline):
        raise RuleViolation(f"the deadline {hand.deadline} has not passed yet")


def close_at_deadline(state: TableState, now: datetime) -> list[ev.Event]:
    """Act for the players who let the deadline pass.

    Passing: each passes their lowest card. Declaring, simultaneous: every undecided seat is
    out (cards mucked); sequential: the seat on turn is out and the next turn starts with a
    fresh deadline. Drawing: the seat on turn stands pat. Betting: the seat on turn checks
    when it owes nothing, else folds.
    """
    verify_close_at_deadline(state, now)
    hand = state.hand
    assert hand is not None
    at = iso(now)
    if hand.phase == PASSING:
        late = [s for s in hand.order if s not in hand.passes]
        chosen = {s: lowest_card(hand.cards[s]) for s in late}
        passes: list[ev.Event] = [
            ev.CardPassed(
                hand=hand.number, seat=s, card=c, by="platform", at=at, to_seat=_left_of(hand, s)
            )
            for s, c in chosen.items()
        ]
        return [*passes, *_after_passes(state, {**hand.passes, **chosen}, now)]
    if hand.phase == DRAWING:
        seat = hand.drawing_turn()
        assert seat is not None
        return [_draw_event(state, seat, (), "platform", now)]
    if hand.phase == BETTING:
        return [bet_at_deadline(state, now)]
    sequential = state.rules.declare == "sequential"
    late = [hand.order[hand.turn]] if sequential else hand.undecided()
    deadline = later(now, state.rules.decision_timeout_s) if sequential else None
    outs: list[ev.Event] = [
        ev.DecisionMade(
            hand=hand.number, seat=s, decision="out", by="platform", deadline=deadline, at=at
        )
        for s in late
    ]
    decided = {**hand.decisions, **{s: "out" for s in late}}
    return [*outs, *after_decision(state, decided, now)]
