"""The table's state and `evolve`, the only function that changes it.

`evolve(state, event)` applies one event in place and returns the state; `replay(events)` folds
a log from the empty table. Commands (commands.py) only read a state and return events, so the
live state and a replay of the log are the same by construction; the tests check it anyway.
The state's data types and words (``TableState``, ``Hand``, ``Seat``, the statuses and phases)
live in table_state.py and are importable from here too.
"""

from __future__ import annotations

from collections.abc import Iterable

from . import events as ev
from .protection_state import PROTECTION_APPLY, count_missed
from .ruleset import Ruleset, ruleset_from_dict
from .table_state import (
    ACTIVE,
    AGGRESSIVE,
    BET_ACTIONS,
    BETTING,
    DECLARING,
    DRAWING,
    LEFT,
    PASSING,
    SHOWDOWN,
    SITTING_OUT,
    TIMED_PHASES,
    WAITING,
    Hand,
    Seat,
    TableState,
)

__all__ = [
    "ACTIVE",
    "AGGRESSIVE",
    "BETTING",
    "BET_ACTIONS",
    "DECLARING",
    "DRAWING",
    "LEFT",
    "PASSING",
    "SHOWDOWN",
    "SITTING_OUT",
    "TIMED_PHASES",
    "WAITING",
    "Hand",
    "Seat",
    "TableState",
    "evolve",
    "replay",
    "starts_betting",
]


def _table_created(state: TableState, e: ev.TableCreated) -> None:
    state.table_id = e.table_id
    state.tenant = e.tenant
    state.rules = ruleset_from_dict(e.rules)
    state.created_at = e.at
    state.next_seed, state.next_commitment = e.next_seed, e.next_commitment


def _player_seated(state: TableState, e: ev.PlayerSeated) -> None:
    status = WAITING if state.game_running else ACTIVE
    joined, wallet = state.version + 1, bool(e.transaction_id)
    seat = Seat(e.seat, e.player_id, e.buy_in, status, joined, wallet)
    seat.since, seat.put_in = e.at, e.buy_in
    state.seats[e.seat] = seat
    state.bought_in += e.buy_in
    state.game_paid.pop(e.seat, None)  # a new player: what the seat paid before is not theirs


def _chips_added(state: TableState, e: ev.ChipsAdded) -> None:
    state.seats[e.seat].stack += e.amount
    state.seats[e.seat].put_in += e.amount
    state.bought_in += e.amount


def _sat_out(state: TableState, e: ev.PlayerSatOut) -> None:
    state.seats[e.seat].status = SITTING_OUT


def _sat_in(state: TableState, e: ev.PlayerSatIn) -> None:
    state.seats[e.seat].status = WAITING if state.game_running else ACTIVE


def _left(state: TableState, e: ev.PlayerLeft) -> None:
    seat = state.seats[e.seat]
    seat.stack -= e.cash_out
    seat.status = LEFT
    state.cashed_out += e.cash_out
    state.client_seeds.pop(e.seat, None)  # the seat's next holder brings their own
    state.game_paid.pop(e.seat, None)  # who leaves gives up their share of the pots


def _client_seed_set(state: TableState, e: ev.ClientSeedSet) -> None:
    state.client_seeds[e.seat] = e.client_seed


def _dealt(state: TableState, e: ev.HandDealt) -> None:
    if e.new_game:
        state.game = e.game
        state.game_running = True
        state.game_paid = {}
    for s in e.removed:
        state.seats[s].status = WAITING
    for s in e.order:
        state.seats[s].status = ACTIVE
    hi_lo = state.rules.hi_lo
    for s, amount in e.antes.items():
        state.seats[s].stack -= amount
        _paid(state, s, amount)
        low = amount // 2 if hi_lo else 0  # hi-lo: the odd chip goes to the high pot
        state.low_pot += low
        state.pot += amount - low
    state.antes_in_pot = False
    state.next_seed, state.next_commitment = e.next_seed, e.next_commitment
    state.client_seeds = {}  # every seed chosen for this deal is spent, used or not
    state.button = e.button
    state.hands_dealt = e.hand
    state.deck = e.deck
    state.grace_until = None
    state.hand = Hand(
        number=e.hand,
        game=e.game,
        phase=PASSING if state.rules.pass_the_trash else DECLARING,
        button=e.button,
        order=list(e.order),
        cards=dict(e.cards),
        kitty=e.kitty,
        antes=dict(e.antes),
        decisions={},
        decided_by={},
        turn=0,
        deadline=e.deadline,
        seed=e.seed,
        commitment=e.commitment,
        client_seed=e.client_seed,
        stacked=e.stacked,
        dealt_at=e.at,
        client_seeds=dict(e.client_seeds),
    )


def _decided(state: TableState, e: ev.DecisionMade) -> None:
    hand = state.hand
    assert hand is not None
    hand.decisions[e.seat] = e.decision
    hand.decided_by[e.seat] = e.by
    count_missed(state, e.seat, e.by)
    if state.rules.declare == "sequential":
        hand.turn += 1
    if e.deadline is not None:
        hand.deadline = e.deadline


def _revealed(state: TableState, e: ev.DeclarationsRevealed) -> None:
    hand = state.hand
    assert hand is not None
    if e.deadline is None:
        hand.phase = SHOWDOWN
    else:
        hand.phase = DRAWING
        hand.drawers = hand.in_seats()
        hand.deadline = e.deadline


def _card_passed(state: TableState, e: ev.CardPassed) -> None:
    assert state.hand is not None
    state.hand.passes[e.seat] = e.card
    count_missed(state, e.seat, e.by)


def _cards_passed(state: TableState, e: ev.CardsPassed) -> None:
    hand = state.hand
    assert hand is not None
    order = hand.order
    kept = {s: [c for c in hand.cards[s] if c != hand.passes[s]] for s in order}
    for i, seat in enumerate(order):
        left = order[(i + 1) % len(order)]
        kept[left].append(hand.passes[seat])
    hand.cards = {s: tuple(kept[s]) for s in order}
    hand.phase = DECLARING
    hand.deadline = e.deadline


def _community(state: TableState, e: ev.CommunityCardDealt) -> None:
    assert state.hand is not None
    state.hand.community = (*state.hand.community, e.card)
    state.deck = state.deck[1:]


def _drawn(state: TableState, e: ev.CardsDrawn) -> None:
    hand = state.hand
    assert hand is not None
    held = list(hand.cards[e.seat])
    for card in e.discarded:
        held.remove(card)
    hand.cards[e.seat] = (*held, *e.drawn)
    hand.discards = list(e.discarded) if e.reshuffled else [*hand.discards, *e.discarded]
    hand.drawn[e.seat] = len(e.drawn)
    count_missed(state, e.seat, e.by)
    state.deck = e.deck
    if hand.drawing_turn() is None:
        hand.phase = SHOWDOWN
        if starts_betting(state.rules, hand):
            assert e.deadline is not None
            hand.phase, hand.deadline = BETTING, e.deadline
            hand.bettors = hand.in_seats()
            hand.bet_turn = hand.bettors[0]
    elif e.deadline is not None:
        hand.deadline = e.deadline


def starts_betting(rules: Ruleset, hand: Hand) -> bool:
    """Whether a betting round follows the draw: the rules have one and two or more are in
    (a lone in-player against the kitty has nobody to bet against)."""
    return rules.betting_round and len(hand.in_seats()) >= 2


def _bet(state: TableState, e: ev.BetMade) -> None:
    hand = state.hand
    assert hand is not None
    following = hand.turn_after(e.seat, e.action)
    count_missed(state, e.seat, e.by)
    state.seats[e.seat].stack -= e.amount
    state.pot += e.amount
    _paid(state, e.seat, e.amount)
    if e.amount:
        hand.bets[e.seat] = hand.bets.get(e.seat, 0) + e.amount
    hand.bet_to, hand.raises = e.bet_to, e.raises
    if e.action == "fold":
        hand.folded.append(e.seat)
    hand.acted = [e.seat] if e.action in AGGRESSIVE else [*hand.acted, e.seat]
    hand.bet_turn = following
    if following is None:
        hand.phase = SHOWDOWN
    else:
        assert e.deadline is not None
        hand.deadline = e.deadline


def _paid(state: TableState, seat: int, amount: int) -> None:
    """`seat` paid `amount` into the pots (antes, matches, wimp penalties, bets): the share of
    the pots it gets back if the table ends in this game."""
    if amount:
        state.game_paid[seat] = state.game_paid.get(seat, 0) + amount


def _resolved(state: TableState, e: ev.HandResolved) -> None:
    for s, amount in e.won.items():
        state.seats[s].stack += amount
    for s, amount in e.matched.items():
        state.seats[s].stack -= amount
        _paid(state, s, amount)
    for s, amount in e.wimp.items():
        state.seats[s].stack -= amount
        _paid(state, s, amount)
    if e.low is not None:
        for s, amount in e.low.won.items():
            state.seats[s].stack += amount
        for s, amount in e.low.matched.items():
            state.seats[s].stack -= amount
            _paid(state, s, amount)
        state.low_pot = e.low.pot
        state.raked += e.low.rake
    state.raked += e.rake
    for s in e.removed:
        state.seats[s].status = WAITING
    state.pot, state.reserve, state.side_pot = e.pot, e.reserve, e.side_pot
    state.button = e.button
    low_winners = e.low.winners if e.low else ()
    low_matched = e.low.matched if e.low else {}
    state.last_winners = tuple(dict.fromkeys((*e.winners, *low_winners)))
    paid = [s for s, a in (*e.matched.items(), *low_matched.items()) if a > 0]
    state.last_matched = tuple(dict.fromkeys(paid))
    state.last_all_out = not e.in_seats
    state.grace_until = e.grace_until
    if e.game_over:
        state.game_running = False
        for seat in state.seats.values():
            if seat.status == WAITING:
                seat.status = ACTIVE
    state.hand = None


def _out_of_game(state: TableState, e: ev.PlayersOutOfGame) -> None:
    for s in e.seats:
        state.seats[s].status = WAITING
    state.grace_until = None


def _voided(state: TableState, e: ev.HandVoided) -> None:
    hand = state.hand
    assert hand is not None
    if hand.phase in (PASSING, DECLARING):
        state.sealed_hands.append(hand.number)
    for s, amount in hand.bets.items():  # bets go back to who made them; antes stay
        state.seats[s].stack += amount
        state.pot -= amount
        _paid(state, s, -amount)
    state.hand = None
    state.deck = ()  # the cards go back: the next deal shuffles a whole deck
    state.antes_in_pot = True


def _ended(state: TableState, e: ev.TableEnded) -> None:
    for s, amount in e.refunds.items():
        state.seats[s].stack += amount
    state.pot = state.low_pot = state.reserve = state.side_pot = 0
    for s, amount in e.cash_outs.items():
        seat = state.seats[s]
        seat.stack -= amount
        seat.status = LEFT
        state.cashed_out += amount
    state.game_paid, state.client_seeds = {}, {}
    state.game_running, state.grace_until = False, None
    state.ended = True


_APPLY = {
    ev.TableCreated: _table_created,
    ev.PlayerSeated: _player_seated,
    ev.ChipsAdded: _chips_added,
    ev.PlayerSatOut: _sat_out,
    ev.PlayerSatIn: _sat_in,
    ev.PlayerLeft: _left,
    ev.ClientSeedSet: _client_seed_set,
    ev.HandDealt: _dealt,
    ev.DecisionMade: _decided,
    ev.DeclarationsRevealed: _revealed,
    ev.CardPassed: _card_passed,
    ev.CardsPassed: _cards_passed,
    ev.CommunityCardDealt: _community,
    ev.CardsDrawn: _drawn,
    ev.BetMade: _bet,
    ev.HandResolved: _resolved,
    ev.PlayersOutOfGame: _out_of_game,
    ev.HandVoided: _voided,
    ev.TableEnded: _ended,
    **PROTECTION_APPLY,
}


def evolve(state: TableState, event: ev.Event) -> TableState:
    """Apply one event to `state` (in place) and return it; the version counts events."""
    _APPLY[type(event)](state, event)  # type: ignore[operator]
    state.version += 1
    return state


def replay(events: Iterable[ev.Event], state: TableState | None = None) -> TableState:
    """Fold `events` over `state` (default: the empty table)."""
    state = state if state is not None else TableState()
    for event in events:
        evolve(state, event)
    return state
