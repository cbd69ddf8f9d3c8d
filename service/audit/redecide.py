"""The events the audit decides again with the rules, from the state before them: a deal (its
commitment, client seeds, cards, who is dealt in, antes and stacks), a player's or the
platform's decision, a resolution, a bet. Each raises `Discrepancy` where the event is not
what the rules make."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from datetime import datetime

from service.rules import events as ev
from service.rules import protection_events as pe
from service.rules.cards import hand_context, shuffled_deck
from service.rules.client_seeds import seeds_for_deal
from service.rules.commands import (
    bet,
    close_at_deadline,
    deal,
    deal_from,
    verify_declare,
)
from service.rules.guards import seat_holder
from service.rules.limits import Allowance
from service.rules.play import draw_from
from service.rules.protection import (
    MISSED_DEADLINES,
    REALITY_CHECK,
    SESSION_LIMIT,
    Duty,
    cool_down_end,
    forfeit,
    protection_dues,
    reality_check,
    verify_answer,
    verify_come_back,
    verify_go_away,
)
from service.rules.settlement import settle
from service.rules.state import TableState
from service.rules.times import later, parse_iso


def check_deal(state: TableState, event: ev.HandDealt) -> None:
    seed = bytes.fromhex(event.seed)
    if hashlib.sha256(seed).hexdigest() != event.commitment:
        raise ValueError("the commitment is not the SHA-256 of the revealed seed")
    if state.next_commitment and event.commitment != state.next_commitment:
        raise ValueError("the hand's seed is not the one committed before the deal")
    if event.next_seed and hashlib.sha256(bytes.fromhex(event.next_seed)).hexdigest() != (
        event.next_commitment
    ):
        raise ValueError("the next hand's commitment is not the SHA-256 of its seed")
    chosen = seeds_for_deal(state, event.order)
    if event.client_seeds != chosen:
        raise ValueError("the players' client seeds are not the ones the dealt-in seats chose")
    if event.client_seed and chosen:
        raise ValueError("an operator's client seed was mixed in after the players' seeds")
    if event.stacked:
        return  # a sandbox deal: the caller fixed the cards, there is no deck to derive
    context = hand_context(state.table_id, event.hand, event.client_seed, chosen)
    if event.deck_context and event.deck_context.encode() != context:
        raise ValueError("the recorded deck context is not this hand's")
    if event.reshuffled:
        deck: tuple[str, ...] | list[str] = shuffled_deck(seed, context)
    else:
        deck = state.deck
    dealt, rest = deal_from(deck, event.order, state.rules.cards, state.rules.kitty)
    expected = {int(p): c for p, c in dealt.items() if p != "kitty"}
    if expected != event.cards or dealt.get("kitty", ()) != event.kitty or rest != event.deck:
        raise ValueError("the dealt cards are not the deck derived from the seed")


def check_dealt(state: TableState, event: ev.HandDealt) -> None:
    """The deal is the one the rules make at that moment from the committed seed: its cards,
    who is dealt in and in which order, the antes they pay, their stacks, the seeds mixed in.
    When it is not, `check_deal` names a seed, commitment or card problem first (the deck is
    derived once on an honest log)."""
    try:
        expected = redeal(state, event)
    except Exception:
        check_deal(state, event)
        raise
    if expected != event:
        check_deal(state, event)
        require_same(expected, event, "deal")


def redeal(state: TableState, event: ev.HandDealt) -> ev.HandDealt:
    """The rules' deal with `event`'s seed, time and next seed (and for a sandbox deal, its
    stacked cards). Players whose loss limit kept them out are kept out again (the limits are
    not in the log)."""
    dealt_in = set(event.order)
    kept_out = {
        seat.player_id: Allowance(limit=-1, net_loss=0)
        for seat in state.seated()
        if seat.seat not in dealt_in and event.removed.get(seat.seat, "loss_limit") == "loss_limit"
    }
    stacked: dict[str, tuple[str, ...]] = {}
    if event.stacked:
        stacked = {str(seat): cards for seat, cards in event.cards.items()}
        if event.kitty:
            stacked["kitty"] = event.kitty
    (expected,) = deal(
        state,
        bytes.fromhex(event.seed),
        parse_iso(event.at),
        event.client_seed,
        stacked,
        bytes.fromhex(event.next_seed),
        kept_out,
    )
    assert isinstance(expected, ev.HandDealt)
    if event.stacked:  # (the stacked "next" cards are not recorded as such)
        expected = replace(expected, deck=event.deck)
    return expected


def check_decision(state: TableState, event: ev.DecisionMade) -> None:
    """A player's decision is one the rules accept then (a hand in play, its seat dealt in,
    not declared yet, on turn, in time); the platform's is what they decide once the deadline
    has passed; a dealer's automatic "in" follows everyone before them going out."""
    hand = state.hand
    if hand is None or hand.number != event.hand:
        raise ValueError(f"there is no hand {event.hand} in play to declare in")
    now = parse_iso(event.at)
    if event.by == "player":
        verify_declare(state, event.seat, event.decision, now)
        sequential = state.rules.declare == "sequential"  # (`declare`'s first event, unbuilt)
        deadline = later(now, state.rules.decision_timeout_s) if sequential else None
        if event.deadline != deadline:
            raise ValueError(f"the decision's next deadline is not the rules' {deadline}")
        return
    if event.by == "forfeit":
        check_forfeit(state, event)
        return
    if event.by == "platform":
        expected = close_at_deadline(state, now)[0]
    else:
        dealer = hand.order[-1]
        if not (
            state.rules.dealer_auto_in
            and event.seat == dealer not in hand.decisions
            and all(hand.decisions.get(s) == "out" for s in hand.order[:-1])
        ):
            raise ValueError("an automatic decision the rules would not make")
        return
    require_same(expected, event, "decision")


def check_cards(
    state: TableState, event: ev.CommunityCardDealt | ev.CardsDrawn | ev.CardPassed
) -> None:
    hand = state.hand
    if hand is None or hand.number != event.hand:
        raise ValueError("no such hand in play")
    if isinstance(event, ev.CommunityCardDealt):
        if not state.deck or event.card != state.deck[0]:
            raise ValueError("the community card is not the top of the deck")
    elif isinstance(event, ev.CardPassed):
        if event.card not in hand.cards[event.seat]:
            raise ValueError("the passed card is not in the passer's hand")
    else:
        if any(card not in hand.cards[event.seat] for card in event.discarded):
            raise ValueError("a discarded card is not in the drawer's hand")
        expected = draw_from(state, len(event.discarded))
        if expected != (event.drawn, event.deck, event.reshuffled):
            raise ValueError("the drawn cards are not the top of the deck")


def require_same(expected: ev.Event, event: ev.Event, what: str) -> None:
    """`event` must be exactly what the rules decided (`expected`); name the fields if not."""
    if expected != event:
        differs = [
            name
            for name in event.__dataclass_fields__
            if getattr(expected, name) != getattr(event, name)
        ]
        raise ValueError(f"the {what} differs from the rules' in: {', '.join(differs)}")


def check_resolution(state: TableState, event: ev.HandResolved) -> None:
    require_same(settle(state, parse_iso(event.at)), event, "settlement")


def check_bet(state: TableState, event: ev.BetMade) -> None:
    """A betting action is what the rules decide for that seat and action at that moment (the
    platform's, what they decide once the deadline has passed)."""
    now = parse_iso(event.at)
    if event.by == "platform":
        (expected,) = close_at_deadline(state, now)
    else:
        (expected,) = bet(state, event.seat, event.action, now)
    require_same(expected, event, "bet")


def check_protection(state: TableState, event: ev.Event) -> None:
    """A protection event is what the rules make then: a reality check or a session limit
    only once due (the check's minutes and net result the rules'), away and back and an
    answer only where the rules take them, a session ended only once. (A time-out's or an
    exclusion's start is the limits', not in the log: its `until` must be given.)"""
    now = parse_iso(event.at)  # type: ignore[attr-defined]
    seat: int = event.seat  # type: ignore[attr-defined]
    holder = seat_holder(state, seat)
    if isinstance(event, pe.ProtectionSet):
        if event.player_id != holder.player_id:
            raise ValueError("the limits set are not for the player at the seat")
        if holder.joined == state.version:
            return  # the session's first limits, with its seating
        for was, now_set in (
            (holder.reality_check_minutes, event.reality_check_minutes),
            (holder.session_limit_minutes, event.session_limit_minutes),
        ):
            if was is not None and (now_set is None or now_set > was):
                raise ValueError("a session's limits loosened while it runs")
    elif isinstance(event, pe.RealityCheck):
        _require_due(state, REALITY_CHECK, seat, now)
        require_same(reality_check(state, seat, now), event, "reality check")
    elif isinstance(event, pe.RealityCheckAnswered):
        verify_answer(state, seat, event.answer)
    elif isinstance(event, pe.PlayerAway):
        if event.reason != MISSED_DEADLINES:
            verify_go_away(state, seat)
        elif holder.away or not 0 < state.rules.away_after_missed <= holder.missed:
            raise ValueError("away for missed deadlines the player did not miss")
    elif isinstance(event, pe.PlayerBack):
        verify_come_back(state, seat)
    elif isinstance(event, pe.SessionEnded):
        if holder.leaving:
            raise ValueError("the session had ended already")
        if event.reason == SESSION_LIMIT:
            due = _require_due(state, SESSION_LIMIT, seat, now)
            # (None: a log written before a session limit's end said until when)
            if event.until is not None and event.until != cool_down_end(due):
                raise ValueError("a session limit's cool-down that does not end 24 h after it")
        elif event.reason in ("timeout", "excluded") and event.until is None:
            raise ValueError("a time-out or exclusion without its end")


def _require_due(state: TableState, action: str, seat: int, now: datetime) -> Duty:
    due = [d for d in protection_dues(state) if d.action == action and d.seat == seat]
    if not due or now < parse_iso(due[0].at):
        raise ValueError(f"a {action} for seat {seat} that was not due")
    return due[0]


def check_forfeit(state: TableState, event: ev.DecisionMade) -> None:
    """A forfeit is the rules' for a player away or whose session ended."""
    holder = seat_holder(state, event.seat)
    if not (holder.away or holder.leaving):
        raise ValueError("a forfeit for a player who is neither away nor leaving")
    expected = forfeit(state, event.seat, parse_iso(event.at))
    if not expected:
        raise ValueError("a forfeit the rules would not make then")
    require_same(expected[0], event, "forfeit")
