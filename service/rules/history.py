"""A finished hand's history: one record built from the hand's events, as a viewer may see it.

Players see what they could see at the table (their own cards, the showdown's cards, the
revealed decisions, the seed once the hand is over); operators and auditors see everything.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import events as ev
from . import protection_events as pe
from .cards import hand_context
from .hand_names import shown_hand_names
from .state import TableState
from .views import Viewer, event_view, may_see


def _empty_record(
    state: TableState, hand: int, found: Sequence[tuple[int, ev.Event]]
) -> dict[str, Any]:
    """The record before its events: an interrupted hand with no decisions and no outcome, with
    empty passes, draws and bets where the rules have them."""
    record: dict[str, Any] = {
        "hand_id": f"{state.table_id}/{hand}",
        "table_id": state.table_id,
        "hand": hand,
        "rules": state.rules.to_dict(),
        "status": "interrupted",
        "versions": [found[0][0], found[-1][0]] if found else [],
        "decisions": {},
        "outcome": None,
    }
    if state.rules.pass_the_trash:
        record["passes"] = {}
    if state.rules.draw:
        record["draws"] = {}
    if state.rules.betting_round:
        record["bets"] = []
    return record


def _record_dealt(
    record: dict[str, Any], state: TableState, hand: int, event: ev.HandDealt, data: Any
) -> None:
    """The deal: the game, seats, antes, cards as the viewer sees them and the deal's fairness.

    Keeps the antes in the pots (``_antes_total``, ``_low_antes``) for the pots before the
    hand, which the resolution works out."""
    # Hi-lo: each ante's low half went to the low pot (the odd chip stays high).
    low_antes = sum(a // 2 for a in event.antes.values()) if state.rules.hi_lo else 0
    antes_total = sum(event.antes.values()) - low_antes
    record["_low_antes"] = low_antes
    record.update(
        game=event.game,
        started_at=event.at,
        button=event.button,
        order=list(event.order),
        antes={str(s): a for s, a in event.antes.items()},
        cards=data["cards"],
        commitment=event.commitment,
        client_seed=event.client_seed,
        client_seeds={str(s): seed for s, seed in event.client_seeds.items()},
        deck_context=event.deck_context
        or hand_context(state.table_id, hand, event.client_seed, event.client_seeds).decode(),
        stacked=event.stacked,
        reshuffled=event.reshuffled,
        deadline=event.deadline,
        stacks_before={str(s): n for s, n in event.stacks.items()},
        players={str(s): p for s, p in event.players.items()},
    )
    if "seed" in data:
        record["seed"] = data["seed"]
    if "kitty" in data:
        record["kitty"] = data["kitty"]
    record["_antes_total"] = antes_total


def _record_resolved(record: dict[str, Any], event: ev.HandResolved, data: Any) -> None:
    """The resolution: the outcome as the viewer sees it, and the pots before, in play and
    after (the low pot's too in hi-lo)."""
    bets_total = sum(event.bets.values())
    record.update(
        status="complete",
        ended_at=event.at,
        outcome={k: v for k, v in data.items() if k not in ("hand", "at")},
        pot_before=event.pot_in_play - bets_total - record.pop("_antes_total", 0),
        pot_in_play=event.pot_in_play,
        pot_after=event.pot,
        reserve_before=event.reserve_before,
        reserve_after=event.reserve,
        side_pot_before=event.side_pot_before,
        side_pot_after=event.side_pot,
    )
    if event.low is not None:
        record.update(
            low_pot_before=event.low.pot_in_play - record.pop("_low_antes", 0),
            low_pot_in_play=event.low.pot_in_play,
            low_pot_after=event.low.pot,
        )


PROTECTION_EVENTS = (
    pe.PlayerAway,
    pe.PlayerBack,
    pe.RealityCheck,
    pe.RealityCheckAnswered,
    pe.SessionEnded,
)


def _record_action(record: dict[str, Any], version: int, event: ev.Event, data: Any) -> None:
    """A player's action in the hand (a decision, a pass, a draw, a bet) or the community card,
    as the viewer sees it; any other event adds nothing."""
    if isinstance(event, ev.DecisionMade) and "decision" in data:
        record["decisions"][str(event.seat)] = {
            "decision": data["decision"],
            "by": event.by,
            "at": event.at,
            "version": version,
        }
    elif isinstance(event, ev.CardPassed):
        record["passes"][str(event.seat)] = {
            k: v for k, v in data.items() if k in ("card", "by", "at")
        }
    elif isinstance(event, PROTECTION_EVENTS):
        # Away and back, reality checks, a session ended: the game record keeps each status.
        record.setdefault("protection", []).append({"version": version, "type": event.TYPE, **data})
    elif isinstance(event, ev.CommunityCardDealt):
        record["community"] = [event.card]
    elif isinstance(event, ev.CardsDrawn):
        record["draws"][str(event.seat)] = {
            k: v for k, v in data.items() if k in ("discarded", "drawn", "by", "at")
        }
    elif isinstance(event, ev.BetMade):
        # Bets are public: every viewer sees every action, in the order made.
        record["bets"].append(
            {k: data[k] for k in ("seat", "action", "amount", "bet_to", "by", "at")}
            | {"version": version}
        )


def hand_history(
    state: TableState, hand: int, found: Sequence[tuple[int, ev.Event]], viewer: Viewer
) -> dict[str, Any]:
    """The record of finished hand `hand`, from its events `found` (version, event)."""
    views = [
        (v, e, event_view(e, state, viewer, v)["data"]) for v, e in found if may_see(e, viewer, v)
    ]
    record = _empty_record(state, hand, found)
    for version, event, data in views:
        if isinstance(event, ev.HandDealt):
            _record_dealt(record, state, hand, event, data)
        elif isinstance(event, ev.HandResolved):
            _record_resolved(record, event, data)
        elif isinstance(event, ev.HandVoided):
            record.update(status="cancelled", ended_at=event.at, void_reason=event.reason)
        else:
            _record_action(record, version, event, data)
    record.pop("_antes_total", None)
    record.pop("_low_antes", None)
    resolved = [e for _, e in found if isinstance(e, ev.HandResolved)]
    if resolved:
        low = resolved[0].low
        record["hand_names"] = shown_hand_names(
            state.rules,
            resolved[0].shown,
            record.get("community", ()),
            low.contenders if low is not None else (),
        )
    record["events"] = [
        {"version": v, "type": e.TYPE, "v": e.VERSION, "data": data} for v, e, data in views
    ]
    return record
