"""What the caller of each game command is told (`service.tables.Tell`): the command's effect
(it made something, or changed the table) and the facts, in the game's words, as plain data
read from the table after the command and the events it appended. The same facts are kept in
the command's idempotency record and told again to a retry."""

from __future__ import annotations

from typing import Any

from service.rules import events as ev
from service.rules.state import TableState
from service.rules.views import OPERATOR, Viewer, event_view
from service.tables import Answer, Tell

from .values import IssueToken


def _seat(state: TableState, seat: int) -> dict[str, Any]:
    holder = state.seats[seat]
    return {
        "seat": seat,
        "player_id": holder.player_id,
        "stack": holder.stack,
        "status": holder.status,
        "version": state.version,
    }


def _hand(state: TableState) -> dict[str, Any]:
    hand = state.hand
    number = hand.number if hand else state.hands_dealt
    return {"hand": number, "phase": hand.phase if hand else None, "version": state.version}


def table_made(state: TableState, events: list[ev.Event]) -> Answer:
    """A table was made: its id and rules."""
    (created,) = events
    assert isinstance(created, ev.TableCreated)
    facts = {"table_id": created.table_id, "rules": created.rules, "version": state.version}
    return Answer("made", facts)


def seated(issue_token: IssueToken) -> Tell:
    """A player was seated: where, their stack, and the token `issue_token` makes them."""

    def tell(state: TableState, events: list[ev.Event]) -> Answer:
        sat = events[0]  # (then the limits its session runs under, if any)
        assert isinstance(sat, ev.PlayerSeated)
        holder = state.seats[sat.seat]
        facts = {
            "seat": sat.seat,
            "player_id": sat.player_id,
            "token": issue_token(state.table_id, sat.seat, holder.joined),
            "stack": holder.stack,
            "status": holder.status,
            "version": state.version,
        }
        return Answer("made", facts)

    return tell


def seat_changed(state: TableState, events: list[ev.Event]) -> Answer:
    """A seat's stack or status changed (a top-up, sitting out or in): the seat as it is."""
    changed = events[0]
    assert isinstance(changed, ev.ChipsAdded | ev.PlayerSatOut | ev.PlayerSatIn)
    return Answer("changed", _seat(state, changed.seat))


def left(state: TableState, events: list[ev.Event]) -> Answer:
    """A player left: their seat and cash-out."""
    (gone,) = events
    assert isinstance(gone, ev.PlayerLeft)
    return Answer(
        "changed", {"seat": gone.seat, "cash_out": gone.cash_out, "version": state.version}
    )


def client_seed_set(state: TableState, events: list[ev.Event]) -> Answer:
    """A player chose their client seed: for which hand."""
    (chosen,) = events
    assert isinstance(chosen, ev.ClientSeedSet)
    facts = {
        "seat": chosen.seat,
        "client_seed": chosen.client_seed,
        "hand": chosen.hand,
        "version": state.version,
    }
    return Answer("changed", facts)


def dealt(state: TableState, events: list[ev.Event]) -> Answer:
    """A hand in play was made: its number, game, deadline, order and commitments."""
    (hand,) = events
    assert isinstance(hand, ev.HandDealt)
    facts = {
        "hand": hand.hand,
        "game": hand.game,
        "deadline": hand.deadline,
        "order": list(hand.order),
        "commitment": hand.commitment,
        "next_commitment": hand.next_commitment,
        "version": state.version,
    }
    return Answer("made", facts)


def declared(state: TableState, events: list[ev.Event]) -> Answer:
    """A player declared: the hand, and the seat's decision."""
    first = events[0]
    assert isinstance(first, ev.DecisionMade)
    return Answer("changed", {**_hand(state), "seat": first.seat, "decision": first.decision})


def passed(state: TableState, events: list[ev.Event]) -> Answer:
    """A player passed a card: the hand, and the card."""
    first = events[0]
    assert isinstance(first, ev.CardPassed)
    return Answer("changed", {**_hand(state), "seat": first.seat, "card": first.card})


def drew(state: TableState, events: list[ev.Event]) -> Answer:
    """A player drew: the hand, what they discarded and drew, and their cards now."""
    (drawn,) = events
    assert isinstance(drawn, ev.CardsDrawn)
    facts = {
        **_hand(state),
        "seat": drawn.seat,
        "discarded": list(drawn.discarded),
        "drawn": list(drawn.drawn),
        "cards": list(state.hand.cards[drawn.seat]) if state.hand else [],
    }
    return Answer("changed", facts)


def bet_made(state: TableState, events: list[ev.Event]) -> Answer:
    """A player acted in the betting round: the action, the pot, whose turn is next."""
    (made,) = events
    assert isinstance(made, ev.BetMade)
    facts = {
        **_hand(state),
        "seat": made.seat,
        "action": made.action,
        "amount": made.amount,
        "bet_to": made.bet_to,
        "pot": state.pot,
        "betting_turn": state.hand.bet_turn if state.hand else None,
    }
    return Answer("changed", facts)


def hand_moved_on(state: TableState, events: list[ev.Event]) -> Answer:
    """The hand moved on (its declarations closed at their deadline): the hand and its phase."""
    return Answer("changed", _hand(state))


def resolved(state: TableState, events: list[ev.Event]) -> Answer:
    """The hand was resolved: its outcome, as the operator sees it."""
    (settled,) = events
    outcome = event_view(settled, state, Viewer(OPERATOR))["data"]
    return Answer("changed", {**outcome, "version": state.version})


def voided(state: TableState, events: list[ev.Event]) -> Answer:
    """The hand was called off: which one."""
    (void,) = events
    assert isinstance(void, ev.HandVoided)
    return Answer("changed", {"hand": void.hand, "phase": None, "version": state.version})


def ended(state: TableState, events: list[ev.Event]) -> Answer:
    """The table ended: the refunds and cash-outs, by seat."""
    (end,) = events
    assert isinstance(end, ev.TableEnded)
    facts = {
        "table_id": state.table_id,
        "status": "ended",
        "refunds": {str(s): a for s, a in end.refunds.items()},
        "cash_outs": {str(s): a for s, a in end.cash_outs.items()},
        "version": state.version,
    }
    return Answer("changed", facts)
