"""The checks of one hand history, in order: the format, the deck context, the seed against its
commitment, and every card the history shows against the deck the seed derives."""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from .after_deal import AfterDeal
from .deck import FULL_DECK, deal_cards, deck_context, derive_deck, draw_context
from .history import Sighting, find_sightings, format_problems, is_hex, kitty_dealt
from .report import INVALID, Check, CheckList, VerifyReport, describe
from .settlement import check_settlement


def verify_history(history: Any, my_client_seed: str | None = None) -> VerifyReport:
    """Check one hand history (the JSON of GET /v1/tables/{table_id}/hands/{hand}).

    Checks, in order: the format; the players' client seeds (with ``my_client_seed``, the
    seed you chose must be among them); the deck context against the table, hand, client seed
    and players' seeds; the seed against its commitment; then every hand the history shows
    (each seat's dealt cards, the kitty, the dealt cards and undealt rest recorded in the
    events) against the deck derived from the seed, dealt in ``order``; the cards that moved
    after the deal (passes, community cards, draws) as far as the history shows them; and the
    hands shown at the end against what each seat could hold; and the settlement's chips
    (bets included) and the betting round's fixed limit. A stacked sandbox deal, a deck
    carried over from an earlier hand, or a missing seed make the deal not verifiable. Never
    raises for bad input: a non-history gives a report with status "invalid".
    """
    try:
        return _verify(history, my_client_seed)
    except (AttributeError, KeyError, LookupError, TypeError, ValueError) as error:
        checks = CheckList()
        checks.add("format", False, f"malformed hand history ({type(error).__name__}: {error})")
        return _invalid(checks, None)


def _verify(history: Any, my_client_seed: str | None) -> VerifyReport:
    checks = CheckList()
    hand_id, sightings = _check_format(history, checks)
    if sightings is None:
        return _invalid(checks, hand_id)
    context = _check_deck_context(history, my_client_seed, checks)
    seed = _check_seed(history, checks)
    if seed is None:
        return checks.report(hand_id)
    _check_events_agree(history, checks)
    check_settlement(history, checks)
    if not _dealt_from_seed(history, checks):
        return checks.report(hand_id)
    deck = derive_deck(seed, context)
    _check_deal(history, history["order"], deck, sightings, checks, seed)
    return checks.report(hand_id)


def _check_format(history: Any, checks: CheckList) -> tuple[str | None, list[Sighting] | None]:
    """(the hand's id, every sighting of its cards), or None for the sightings when `history`
    is not a hand history in the expected format (the report is then "invalid")."""
    if not isinstance(history, dict):
        checks.add("format", False, f"expected a JSON object, got {type(history).__name__}")
        return None, None
    hand_id = history.get("hand_id") if isinstance(history.get("hand_id"), str) else None
    problems = format_problems(history)
    sightings, sighting_problems = find_sightings(history) if not problems else ([], [])
    problems += sighting_problems
    if problems:
        checks.add("format", False, "; ".join(problems))
        return hand_id, None
    table_id, hand, order = history["table_id"], history["hand"], history["order"]
    checks.add("format", True, f"hand {hand} of table {table_id}, {len(order)} players")
    return hand_id or f"{table_id}/{hand}", sightings


def _check_deck_context(history: dict[str, Any], mine: str | None, checks: CheckList) -> bytes:
    """The deck context, which binds the deck to this table, hand and client seeds (checked
    against the one the history states, if it does)."""
    client_seed = history.get("client_seed", "")
    client_seeds = history.get("client_seeds", {})
    _check_client_seeds(client_seed, client_seeds, mine, checks)
    context = deck_context(history["table_id"], history["hand"], client_seed, client_seeds)
    stated = history.get("deck_context")
    if stated is None:
        checks.add("deck context", True, f"{context.decode()!r} (not stated; derived)")
    else:
        checks.add(
            "deck context",
            stated.encode() == context,
            f"{stated!r}" if stated.encode() == context else f"{stated!r}, expected {context!r}",
        )
    return context


def _check_seed(history: dict[str, Any], checks: CheckList) -> bytes | None:
    """The hand's seed, checked against its commitment; None when the history has none (not
    published yet) or it is not hex."""
    seed_hex = history.get("seed")
    if seed_hex is None:
        status = history.get("status")
        checks.cannot_verify(
            "seed", f"no seed: it is published once the hand is over (status {status!r})"
        )
        return None
    if not is_hex(seed_hex) or not seed_hex:
        checks.add("seed", False, f"the seed {seed_hex!r} is not hex")
        return None
    seed = bytes.fromhex(seed_hex)
    digest = hashlib.sha256(seed).hexdigest()
    commitment = history["commitment"].lower()
    checks.add(
        "commitment",
        hmac.compare_digest(digest, commitment),
        f"sha256(seed) = {digest}"
        + ("" if digest == commitment else f", but the commitment is {commitment}"),
    )
    return seed


def _dealt_from_seed(history: dict[str, Any], checks: CheckList) -> bool:
    """Whether the hand's cards came from its seed: not from a stacked sandbox deal, nor from
    a deck carried over from an earlier hand (either cannot be verified)."""
    if history["stacked"]:
        checks.cannot_verify(
            "stacked",
            "a sandbox deal whose cards were fixed by the caller (stacked_deck): they do not "
            "come from the seed",
        )
        return False
    if not history["reshuffled"]:
        checks.cannot_verify(
            "reshuffled",
            "dealt from the deck carried over from an earlier hand (deck: carry_over), not "
            "from this hand's seed; verify the hand that last reshuffled instead",
        )
        return False
    return True


def _check_client_seeds(
    client_seed: str, client_seeds: dict[str, str], mine: str | None, checks: CheckList
) -> None:
    """The players' seeds mixed into the deck (context v2), and yours among them. A deal with
    players' seeds takes no operator seed: one chosen after theirs could steer the deck."""
    if client_seeds:
        listed = ", ".join(f"seat {s} {client_seeds[s]!r}" for s in sorted(client_seeds, key=int))
        checks.add(
            "client seeds",
            not client_seed,
            listed
            if not client_seed
            else f"{listed}, and an operator's client seed {client_seed!r} chosen after them",
        )
    if mine is not None:
        seats = [s for s in sorted(client_seeds, key=int) if client_seeds[s] == mine]
        checks.add(
            "your client seed",
            bool(seats),
            f"{mine!r} is the seed of seat {', '.join(seats)}"
            if seats
            else f"{mine!r} is not among the players' seeds of this hand",
        )


def _invalid(checks: CheckList, hand_id: str | None) -> VerifyReport:
    return VerifyReport(False, checks.items, INVALID, hand_id)


def _check_events_agree(history: dict[str, Any], checks: CheckList) -> None:
    """The deal event recorded in the history states the same deal as the record's fields."""
    for event in history.get("events", []):
        if event.get("type") != "hand_dealt":
            continue
        data = event.get("data", {})
        keys = (
            *("hand", "order", "commitment", "seed", "client_seed", "client_seeds"),
            *("deck_context", "stacked", "reshuffled"),
        )
        differ = [k for k in keys if k in data and k in history and data[k] != history[k]]
        checks.add(
            f"event {event.get('version', '?')} hand_dealt: fields",
            not differ,
            f"differs from the record in {', '.join(differ)}"
            if differ
            else "agrees with the record",
        )


def _check_deal(
    history: dict[str, Any],
    order: list[int],
    deck: list[str],
    sightings: list[Sighting],
    checks: CheckList,
    seed: bytes,
) -> None:
    """Re-deal `deck` in `order` and compare every sighting with the derived hands; then follow
    the cards through passes, community cards and draws to check the hands shown at the end."""
    cards = _hand_size(sightings, checks)
    if cards is None:
        return
    known = kitty_dealt(history, sightings)
    table_id, hand = history["table_id"], history["hand"]
    seeds = (history.get("client_seed", ""), history.get("client_seeds", {}))

    def draw_contexts(k: int) -> bytes:
        return draw_context(table_id, hand, k, *seeds)

    candidates = [known] if known is not None else [False, True]
    candidates = [k for k in candidates if (len(order) + k) * cards <= len(FULL_DECK)]
    if not candidates:
        checks.add("deal", False, f"{len(order)} hands of {cards} cards do not fit in one deck")
        return

    def compare(kitty: bool) -> list[Check]:
        hands, rest = deal_cards(deck, order, cards, kitty)
        after = AfterDeal(history, order, hands, rest, seed, draw_contexts)
        return [*after.checks, *(_sighting_check(s, order, hands, rest, after) for s in sightings)]

    outcomes = {kitty: compare(kitty) for kitty in candidates}
    # With the kitty unknown (a player's view), keep the layout the cards agree with, if any.
    best = max(candidates, key=lambda k: sum(c.passed for c in outcomes[k]))
    kitty_note = "with the kitty dealt last in each round" if best else "without a kitty"
    if known is None:
        kitty_note += " (inferred: this history does not say whether a kitty was dealt)"
    checks.add("layout", True, f"{cards} cards each to seats {order} in that order, {kitty_note}")
    for check in outcomes[best]:
        checks.add(*check)


def _hand_size(sightings: list[Sighting], checks: CheckList) -> int | None:
    """How many cards each hand was dealt, as the sightings show it; None (and why, in
    `checks`) when they show no dealt cards or hands of different sizes."""
    sizes = {len(s.cards) for s in sightings if s.position != "rest" and s.ordered}
    sizes |= {len(s.cards) for s in sightings if s.position == "kitty"}
    if not sizes:
        sizes = {len(s.cards) for s in sightings if s.position != "rest"}
    if not sizes:
        checks.add(
            "deal",
            True,
            "no dealt cards are visible in this history; only the commitment could be checked",
        )
        return None
    if len(sizes) > 1:
        checks.add("deal", False, f"hands of different sizes in the history: {sorted(sizes)}")
        return None
    (cards,) = sizes
    return cards


def _sighting_check(
    s: Sighting, order: list[int], hands: dict[str, list[str]], rest: list[str], after: AfterDeal
) -> Check:
    """One sighting against the cards the seed deals (a hand shown at the end: against what
    the seat can hold after the deal)."""
    if s.position == "rest":
        expected: list[str] | None = rest
    elif not s.ordered and s.position in after.held:  # shown at the end of the hand
        return after.held[s.position].compare(s.name, s.cards)
    else:
        expected = hands.get(s.position)
    if expected is None:
        return Check(s.name, False, f"seat {s.position} is not in order {order}")
    same = expected == s.cards if s.ordered else sorted(expected) == sorted(s.cards)
    detail = describe(s.cards)
    if not same:
        detail = f"history has {describe(s.cards)}, the seed deals {describe(expected)}"
    return Check(s.name, same, detail)
