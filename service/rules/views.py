"""What each viewer may see of a table and of its events.

Secrets while a hand is live: every hand's cards (each player sees only their own), the kitty,
the rest of the deck, the deck seed, and simultaneous decisions before the reveal. Operators and
auditors see everything of a finished hand; players never see a mucked hand or a lone winner's
cards (only what a showdown turned face up), and see the seed once the hand is over.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import events as ev
from .serial import to_data
from .state import SHOWDOWN, TableState

OPERATOR = "operator"
AUDITOR = "auditor"
PLAYER = "player"


@dataclass(frozen=True)
class Viewer:
    """Who is looking: an operator, an auditor, or the player at `seat`."""

    role: str
    seat: int | None = None

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
        return state.hand.phase == SHOWDOWN
    return hand not in state.sealed_hands


def table_view(state: TableState, viewer: Viewer) -> dict[str, Any]:
    """The table as `viewer` may see it (the API's table view)."""
    rules = state.rules
    view: dict[str, Any] = {
        "table_id": state.table_id,
        "version": state.version,
        "rules": rules.to_dict(),
        "button": state.button,
        "game": state.game,
        "game_running": state.game_running,
        "pot": state.pot,
        "reserve": state.reserve,
        "side_pot": state.side_pot,
        "grace_until": state.grace_until,
        "seats": [
            {"seat": s.seat, "player_id": s.player_id, "stack": s.stack, "status": s.status}
            for s in state.seated()
        ],
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
        if viewer.role == PLAYER and viewer.seat in hand.cards:
            hand_view["cards"] = list(hand.cards[viewer.seat])
        view["hand"] = hand_view
    return view


def event_view(event: ev.Event, state: TableState, viewer: Viewer) -> dict[str, Any]:
    """The event's data as `viewer` may see it; hidden fields are left out, not blanked."""
    data: dict[str, Any] = to_data(event)
    if isinstance(event, ev.HandDealt):
        finished = _hand_finished(state, event.hand)
        if not (viewer.privileged and finished):
            for key in ("kitty", "deck"):
                data.pop(key)
            mine = str(viewer.seat)
            data["cards"] = {mine: data["cards"][mine]} if mine in data["cards"] else {}
            if not finished:
                data.pop("seed")
    elif isinstance(event, ev.DecisionMade):
        own = viewer.role == PLAYER and viewer.seat == event.seat
        full = viewer.privileged and _hand_finished(state, event.hand)
        if not (own or full or _decisions_public(state, event.hand)):
            data.pop("decision")
    return {"type": event.TYPE, "v": event.VERSION, "data": data}
