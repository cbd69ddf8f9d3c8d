"""What each viewer may see of a table and of its events.

Secrets while a hand is live: every hand's cards (each player sees only their own), the kitty,
the rest of the deck, the deck seed, and simultaneous decisions before the reveal. Operators and
auditors see everything of a finished hand; players never see a mucked hand or a lone winner's
cards (only what a showdown turned face up), and see the seed once the hand is over. A
player's client seed is theirs alone until the deal it was chosen for; then anyone may see it
(without the server's seed it tells nothing about the cards).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import events as ev
from . import protection_events as pe
from .serial import to_data
from .state import DECLARING, PASSING, Seat, TableState

OPERATOR = "operator"
AUDITOR = "auditor"
PLAYER = "player"


@dataclass(frozen=True)
class Viewer:
    """Who is looking: an operator, an auditor, or the player at `seat` who sat down at table
    version `joined` (a seat's earlier occupants' cards are not theirs to see)."""

    role: str
    seat: int | None = None
    joined: int = 0

    def owns(self, seat: int, version: int | None) -> bool:
        """Whether the event at `version` about `seat` is this player's own."""
        mine = self.role == PLAYER and self.seat == seat
        return mine and (version is None or version > self.joined)

    @property
    def privileged(self) -> bool:
        """Operators and auditors: full information about finished hands."""
        return self.role in (OPERATOR, AUDITOR)


def _hand_finished(state: TableState, hand: int) -> bool:
    return state.hand is None or state.hand.number != hand


def _decisions_public(state: TableState, hand: int) -> bool:
    if state.rules.declare == "sequential":
        return True
    if not _hand_finished(state, hand):
        assert state.hand is not None
        return state.hand.phase not in (PASSING, DECLARING)  # revealed: drawing and on
    return hand not in state.sealed_hands


def _own_cards_hidden(state: TableState, hand: int) -> bool:
    """No-peek: a player does not see their own cards until the declarations are revealed."""
    if not state.rules.no_peek or _hand_finished(state, hand):
        return False
    assert state.hand is not None
    return state.hand.phase in (PASSING, DECLARING)


def _passes_done(state: TableState, hand: int) -> bool:
    return _hand_finished(state, hand) or (state.hand is not None and state.hand.phase != PASSING)


OPEN, PLAYING, ENDED = "open", "playing", "ended"
TABLE_STATUSES = (OPEN, PLAYING, ENDED)


def table_status(state: TableState) -> str:
    """`ended` (no more commands), `playing` (a hand is in play) or `open`."""
    if state.ended:
        return ENDED
    return PLAYING if state.hand is not None else OPEN


def table_view(state: TableState, viewer: Viewer) -> dict[str, Any]:
    """The table as `viewer` may see it (the API's table view)."""
    rules = state.rules
    view: dict[str, Any] = {
        "table_id": state.table_id,
        "status": table_status(state),
        "version": state.version,
        "rules": rules.to_dict(),
        "button": state.button,
        "game": state.game,
        "game_running": state.game_running,
        "pot": state.pot,
        "low_pot": state.low_pot,
        "reserve": state.reserve,
        "side_pot": state.side_pot,
        "grace_until": state.grace_until,
        "next_commitment": state.next_commitment or None,
        # Who chose a seed for the next deal (never what: a seed is its seat's until the deal).
        "client_seeds_chosen": sorted(state.client_seeds),
        "seats": [_seat_view(s, viewer) for s in state.seated()],
        "hand": None,
    }
    hand = state.hand
    if hand is not None:
        public = _decisions_public(state, hand.number)
        hand_view: dict[str, Any] = {
            "number": hand.number,
            "phase": hand.phase,
            "deadline": hand.deadline,
            "button": hand.button,
            "order": list(hand.order),
            "antes": {str(s): a for s, a in hand.antes.items()},
            "commitment": hand.commitment,
            "declared": [s for s in hand.order if s in hand.decisions],
        }
        if rules.declare == "sequential":
            hand_view["on_turn"] = hand.on_turn()
        if public:
            hand_view["decisions"] = {str(s): d for s, d in hand.decisions.items()}
        if rules.pass_the_trash:
            hand_view["passed"] = [s for s in hand.order if s in hand.passes]
        if hand.community:
            hand_view["community"] = list(hand.community)
        if rules.draw:
            hand_view["drawers"] = list(hand.drawers)
            hand_view["drawn"] = {str(s): n for s, n in hand.drawn.items()}
            hand_view["drawing_turn"] = hand.drawing_turn()
        if rules.betting_round:
            hand_view["betting"] = _betting_view(state)
        mine = viewer.role == PLAYER and viewer.seat in hand.cards
        if mine and not _own_cards_hidden(state, hand.number):
            assert viewer.seat is not None
            hand_view["cards"] = list(hand.cards[viewer.seat])
        view["hand"] = hand_view
    return view


def _seat_view(seat: Seat, viewer: Viewer) -> dict[str, Any]:
    """A seat as `viewer` sees it: everyone sees who is away; the player's session (since
    when, its net result, a reality check waiting, why it is ending) is theirs, the
    operators' and the auditors' only."""
    view: dict[str, Any] = {
        "seat": seat.seat,
        "player_id": seat.player_id,
        "stack": seat.stack,
        "status": seat.status,
        "away": seat.away,
    }
    if viewer.privileged or viewer.owns(seat.seat, None):
        view["session"] = {
            "since": seat.since or None,
            "net_result": seat.stack - seat.put_in,
            "reality_check_pending": seat.check_pending,
            "reality_check_minutes": seat.reality_check_minutes,
            "session_limit_minutes": seat.session_limit_minutes,
            "ending": seat.leaving or None,
        }
    return view


PRIVATE_EVENTS = (pe.ProtectionSet, pe.RealityCheck, pe.RealityCheckAnswered, pe.SessionEnded)
"""A player's own: their limits, reality checks and why their session ended."""


def may_see(event: ev.Event, viewer: Viewer, version: int | None = None) -> bool:
    """Whether `viewer` may see `event` at all: a player's protection events are theirs, the
    operators' and the auditors' only (everything else is redacted field by field)."""
    if not isinstance(event, PRIVATE_EVENTS):
        return True
    return viewer.privileged or viewer.owns(event.seat, version)


def _betting_view(state: TableState) -> dict[str, Any]:
    """The betting round, public to everyone at the table (bets are open actions); `deadline`
    is the hand's, the turn's while betting."""
    hand = state.hand
    assert hand is not None
    turn = hand.bet_turn
    return {
        "bettors": list(hand.bettors),
        "turn": turn,
        "bet_to": hand.bet_to,
        "to_call": hand.to_call(turn) if turn is not None else 0,
        "raises": hand.raises,
        "max_raises": state.rules.max_raises,
        "bet_size": state.rules.bet_amount,
        "bets": {str(s): hand.bets.get(s, 0) for s in hand.bettors},
        "folded": list(hand.folded),
        "pot_declared": state.pot - sum(hand.bets.values()),
    }


def event_view(
    event: ev.Event, state: TableState, viewer: Viewer, version: int | None = None
) -> dict[str, Any]:
    """The event's data as `viewer` may see it; hidden fields are left out, not blanked.
    `version` is the event's place in the log (a player sees only their own seat's secrets
    from after they sat down)."""
    data: dict[str, Any] = to_data(event)
    # The next hand's seed stays secret here for everyone: it is revealed as that hand's
    # `seed` once that hand is over. Its commitment is public.
    data.pop("next_seed", None)
    if isinstance(event, ev.HandDealt):
        finished = _hand_finished(state, event.hand)
        if not (viewer.privileged and finished):
            for key in ("kitty", "deck"):
                data.pop(key)
            mine = str(viewer.seat)
            visible = (
                mine in data["cards"]
                and viewer.owns(int(mine), version)
                and not _own_cards_hidden(state, event.hand)
            )
            data["cards"] = {mine: data["cards"][mine]} if visible else {}
            if not finished:
                data.pop("seed")
    elif isinstance(event, ev.CardPassed):
        full = viewer.privileged and _hand_finished(state, event.hand)
        own = viewer.owns(event.seat, version)
        received = event.to_seat >= 0 and viewer.owns(event.to_seat, version)
        if not (full or own or (received and _passes_done(state, event.hand))):
            data.pop("card")
    elif isinstance(event, ev.CardsDrawn):
        full = viewer.privileged and _hand_finished(state, event.hand)
        own = viewer.owns(event.seat, version)
        if not full:
            data.pop("deck")
            if not own:
                data["discarded"] = len(event.discarded)
                data["drawn"] = len(event.drawn)
    elif isinstance(event, ev.ClientSeedSet):
        # The seat's own until the deal it was chosen for; then it is in that deal's record.
        if not (viewer.owns(event.seat, version) or state.hands_dealt >= event.hand):
            data.pop("client_seed")
    elif isinstance(event, ev.DecisionMade):
        own = viewer.owns(event.seat, version)
        full = viewer.privileged and _hand_finished(state, event.hand)
        if not (own or full or _decisions_public(state, event.hand)):
            data.pop("decision")
    return {"type": event.TYPE, "v": event.VERSION, "data": data}
