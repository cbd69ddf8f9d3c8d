"""The PHH ``actions`` of a Guts hand: the deal, the declarations, passes, draws, the betting
round and the showdown, as the package docstring maps them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

UNKNOWN_CARD = "??"
"""A card the viewer may not see, in PHH notation."""


def hand_text(hand: Iterable[str] | None, size: int) -> str:
    """Cards in PHH notation, concatenated; ``??`` for each unknown card."""
    return "".join(hand) if hand else UNKNOWN_CARD * size


def declaration_actions(history: Mapping[str, Any], player: Mapping[int, str]) -> list[str]:
    """``pN cc`` (in) and ``pN f`` (out), in the order the decisions were made."""
    decisions = history.get("decisions") or {}
    ordered = sorted(
        ((int(seat), made) for seat, made in decisions.items() if int(seat) in player),
        key=lambda item: (item[1].get("version", 0), item[0]),
    )
    actions = []
    for seat, made in ordered:
        decision = made.get("decision")
        by = made.get("by", "player")
        note = {"platform": ": timed out, declared by the platform", "auto_in": ": dealer auto-in"}
        comment = f"{decision}{note.get(by, '')}"
        if decision == "out":
            actions.append(f"{player[seat]} f # {comment}")
        elif isinstance(decision, str):  # "in"; "high", "low" or "both" in a hi-lo game
            actions.append(f"{player[seat]} cc # {comment}")
    return actions


def pass_actions(
    history: Mapping[str, Any], order: list[int], player: Mapping[int, str]
) -> list[str]:
    """Pass the trash as commentaries (PHH has no passing): who passed which card to whom."""
    passes = history.get("passes") or {}
    actions = []
    for i, seat in enumerate(order):
        entry = passes.get(str(seat))
        if isinstance(entry, dict):
            card = entry.get("card") or UNKNOWN_CARD
            receiver = player[order[(i + 1) % len(order)]]
            actions.append(f"# {player[seat]} passes {card} to {receiver}")
    return actions


def draw_actions(history: Mapping[str, Any], player: Mapping[int, str]) -> list[str]:
    """Draws in the order made: ``pN sd <discards>`` (``pN sd`` to stand pat), then the dealer's
    ``d dh pN <drawn>``; cards this viewer may not see are ``??`` (their number is public)."""
    draws = history.get("draws") or {}
    actions = []
    for seat_text, entry in draws.items():
        seat = int(seat_text)
        if seat not in player or not isinstance(entry, dict):
            continue
        discarded, drawn = entry.get("discarded"), entry.get("drawn")
        out = (
            "".join(discarded)
            if isinstance(discarded, list)
            else UNKNOWN_CARD * int(discarded or 0)
        )
        got = "".join(drawn) if isinstance(drawn, list) else UNKNOWN_CARD * int(drawn or 0)
        note = " # timed out: stands pat" if entry.get("by") == "platform" else ""
        actions.append(f"{player[seat]} sd {out}".rstrip() + note)
        if got:
            actions.append(f"d dh {player[seat]} {got}")
    return actions


def bet_actions(history: Mapping[str, Any], player: Mapping[int, str]) -> list[str]:
    """The betting round as PHH betting actions, in the order made: ``pN cc`` (check or
    call), ``pN cbr <to>`` (bet or raise to the round's new total), ``pN f`` (fold), each with
    the Guts action as commentary."""
    actions = []
    for entry in history.get("bets") or []:
        seat = entry.get("seat")
        if seat not in player:
            continue
        action, by = entry.get("action"), entry.get("by")
        note = f"{action}: timed out, by the platform" if by == "platform" else f"{action}"
        if action in ("bet", "raise"):
            actions.append(f"{player[seat]} cbr {entry.get('bet_to')} # {note}")
        elif action == "fold":
            actions.append(f"{player[seat]} f # {note}")
        else:
            actions.append(f"{player[seat]} cc # {note}")
    return actions


def showdown_actions(
    history: Mapping[str, Any], order: list[int], player: Mapping[int, str], size: int
) -> list[str]:
    """The showing of hands, the kitty and the settlement, as PHH actions and commentaries."""
    outcome = history.get("outcome")
    if not outcome:
        if history.get("status") == "cancelled":
            return [f"# hand voided: {history.get('void_reason', '')}".rstrip()]
        return []
    in_seats = set(outcome.get("in_seats") or [])
    folded = set(outcome.get("folded") or [])
    shown = outcome.get("shown") or {}
    actions = []
    for seat in order:
        cards = shown.get(str(seat))
        if seat in folded:  # folded in the betting round: already ``f``, cards mucked
            continue
        if seat in in_seats:
            actions.append(f"{player[seat]} sm {hand_text(cards, size)}")
        elif cards:  # nobody in and a wimp penalty: every hand is turned up, but all folded
            actions.append(f"# {player[seat]} shows {''.join(cards)} for the wimp penalty")
    if outcome.get("kitty_shown"):
        actions.append(f"# kitty shows {''.join(outcome['kitty_shown'])}")
    for key, verb in (("won", "wins"), ("matched", "matches the pot with"), ("wimp", "pays")):
        for seat in order:
            amount = (outcome.get(key) or {}).get(str(seat))
            if amount:
                actions.append(f"# {player[seat]} {verb} {amount}")
    low = outcome.get("low") or {}
    for key, verb in (("won", "wins from the low pot"), ("matched", "matches the low pot with")):
        for seat in order:
            amount = (low.get(key) or {}).get(str(seat))
            if amount:
                actions.append(f"# {player[seat]} {verb} {amount}")
    actions.append(f"# outcome: {outcome.get('outcome')}")
    return actions
