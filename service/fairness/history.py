"""Reading a hand history: what makes it unusable, and every set of cards it shows."""

from __future__ import annotations

from typing import Any, NamedTuple

from .deck import FULL_DECK


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _card_list_problem(value: Any, what: str) -> str | None:
    if not isinstance(value, list) or not all(isinstance(card, str) for card in value):
        return f"{what} is not a list of cards"
    bad = [card for card in value if card not in FULL_DECK]
    if bad:
        return f"{what} has invalid cards {bad}"
    return None


def format_problems(history: dict[str, Any]) -> list[str]:
    """What makes `history` unusable as a hand history (empty when it is usable)."""
    return _header_problems(history) + _card_problems(history) + _move_problems(history)


def _header_problems(history: dict[str, Any]) -> list[str]:
    """The hand's identity, seats, commitment, flags and seeds."""
    problems: list[str] = []
    if not isinstance(history.get("table_id"), str):
        problems.append("table_id must be a string")
    if not is_int(history.get("hand")) or history["hand"] < 1:
        problems.append("hand must be a positive integer")
    order = history.get("order")
    if not (isinstance(order, list) and order and all(is_int(seat) for seat in order)):
        problems.append("order must be a non-empty list of seat numbers")
    elif len(set(order)) != len(order):
        problems.append("order repeats a seat")
    commitment = history.get("commitment")
    if not (isinstance(commitment, str) and len(commitment) == 64 and is_hex(commitment)):
        problems.append("commitment must be 64 hex digits")
    for key in ("stacked", "reshuffled"):
        if not isinstance(history.get(key), bool):
            problems.append(f"{key} must be true or false")
    for key in ("client_seed", "deck_context"):
        if key in history and not isinstance(history[key], str):
            problems.append(f"{key} must be a string")
    seeds = history.get("client_seeds", {})
    if not (
        isinstance(seeds, dict)
        and all(isinstance(s, str) and s.isdigit() for s in seeds)
        and all(isinstance(v, str) for v in seeds.values())
    ):
        problems.append("client_seeds must map seat numbers to strings")
    if "seed" in history and not isinstance(history["seed"], str | None):
        problems.append("seed must be a string")
    return problems


def _card_problems(history: dict[str, Any]) -> list[str]:
    """The cards dealt, shown and on the board."""
    problems: list[str] = []
    cards = history.get("cards", {})
    if not isinstance(cards, dict):
        problems.append("cards must map seats to cards")
    else:
        problems += [p for s, h in cards.items() if (p := _card_list_problem(h, f"cards[{s}]"))]
    if "kitty" in history and (problem := _card_list_problem(history["kitty"], "kitty")):
        problems.append(problem)
    outcome = history.get("outcome")
    if outcome is not None and not isinstance(outcome, dict):
        problems.append("outcome must be an object or null")
    elif outcome:
        shown = outcome.get("shown", {})
        if not isinstance(shown, dict):
            problems.append("outcome.shown must map seats to cards")
        else:
            problems += [
                p for s, h in shown.items() if (p := _card_list_problem(h, f"outcome.shown[{s}]"))
            ]
        kitty_shown = outcome.get("kitty_shown", [])
        if problem := _card_list_problem(kitty_shown, "outcome.kitty_shown"):
            problems.append(problem)
    if "community" in history and (
        problem := _card_list_problem(history["community"], "community")
    ):
        problems.append(problem)
    return problems


def _move_problems(history: dict[str, Any]) -> list[str]:
    """The passes and draws, as listed and as the events say."""
    problems: list[str] = []
    moves: dict[str, dict[str, Any]] = {}
    for key in ("passes", "draws"):
        value = history.get(key) or {}
        if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
            problems.append(f"{key} must map seats to objects")
            value = {}
        moves[key] = value
    for seat, entry in moves["passes"].items():
        card = entry.get("card")
        if card is not None and card not in FULL_DECK:
            problems.append(f"passes[{seat}] has the invalid card {card!r}")
    events = history.get("events", [])
    if not isinstance(events, list) or not all(
        isinstance(e, dict) and isinstance(e.get("data", {}), dict) for e in events
    ):
        problems.append("events must be a list of objects")
        events = []
    draws = [(f"draws[{s}]", d) for s, d in moves["draws"].items()]
    draws += [
        (f"event {e.get('version')} cards_drawn", e["data"])
        for e in events
        if e.get("type") == "cards_drawn"
    ]
    for name, data in draws:
        for key in ("discarded", "drawn"):
            value = data.get(key) if isinstance(data, dict) else None
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                continue
            if problem := _card_list_problem(value, f"{name}.{key}"):
                problems.append(problem)
    return problems


def is_hex(text: str) -> bool:
    try:
        bytes.fromhex(text)
    except ValueError:
        return False
    return True


class Sighting(NamedTuple):
    """Cards the history says were somewhere: a hand at the deal, a shown hand, the rest."""

    name: str
    position: str  # a seat as a string, "kitty", or "rest" (the undealt deck)
    cards: list[str]
    ordered: bool  # dealt hands keep the deal order; shown hands are compared as sets


def _shown(outcome: dict[str, Any], label: str) -> list[Sighting]:
    """The hands (and the kitty) an outcome shows, each named after `label`."""
    shown = outcome.get("shown", {})
    found = [
        Sighting(f"{label}shown by seat {seat}", str(seat), cards, False)
        for seat, cards in (shown.items() if isinstance(shown, dict) else ())
    ]
    if outcome.get("kitty_shown"):
        found.append(Sighting(f"{label}kitty shown", "kitty", outcome["kitty_shown"], False))
    return found


def find_sightings(history: dict[str, Any]) -> tuple[list[Sighting], list[str]]:
    """Every set of cards the history shows, and problems with them that are not card checks."""
    found: list[Sighting] = []
    problems: list[str] = []
    for seat, cards in history.get("cards", {}).items():
        found.append(Sighting(f"cards of seat {seat}", str(seat), cards, True))
    if history.get("kitty"):
        found.append(Sighting("kitty", "kitty", history["kitty"], True))
    found += _shown(history.get("outcome") or {}, "")
    for event in history.get("events", []):
        data = event.get("data", {})
        label = f"event {event.get('version', '?')} {event.get('type', '?')}"
        if event.get("type") == "hand_dealt":
            cards = data.get("cards", {})
            for seat, hand in cards.items() if isinstance(cards, dict) else ():
                found.append(Sighting(f"{label}: cards of seat {seat}", str(seat), hand, True))
            if data.get("kitty"):
                found.append(Sighting(f"{label}: kitty", "kitty", data["kitty"], True))
            if "deck" in data:
                found.append(Sighting(f"{label}: rest of the deck", "rest", data["deck"], True))
        elif event.get("type") == "hand_resolved":
            found += _shown(data, f"{label}: ")
    for sighting in found:
        if problem := _card_list_problem(sighting.cards, sighting.name):
            problems.append(problem)
    return found, problems


def kitty_dealt(history: dict[str, Any], sightings: list[Sighting]) -> bool | None:
    """Whether a kitty was dealt, when the history says so; None when it cannot tell.

    An auditor's history carries the kitty (an empty list when there was none); a player's
    shows it only when it played at the showdown.
    """
    if isinstance(history.get("kitty"), list):
        return bool(history["kitty"])
    for event in history.get("events", []):
        kitty = event.get("data", {}).get("kitty")
        if event.get("type") == "hand_dealt" and isinstance(kitty, list):
            return bool(kitty)
    if any(s.position == "kitty" for s in sightings):
        return True
    return None
