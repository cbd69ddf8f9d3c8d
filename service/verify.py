"""Verify a Guts hand history: the seed commitment, and every visible card against the deck
that the published seed derives.

This module uses only the Python standard library and imports nothing from the service, so a
player or an auditor can copy this one file and check hands without trusting the operator's
code. The algorithm it re-implements is described in docs/fairness.md; in short:

1. ``commitment`` (published at the deal) must equal ``sha256(seed).hexdigest()``, where
   ``seed`` is the hex seed published once the hand is over.
2. The deck context is ``f"guts-v1|{table_id}|{hand}|{client_seed}"`` in UTF-8.
3. Block ``n`` = HMAC-SHA256(key=seed, msg=context + b"|" + n as 8 bytes big-endian); the blocks
   are read as consecutive 4-byte big-endian unsigned words.
4. Fisher-Yates from the canonical deck (2s 2h 2d 2c 3s ... Ad Ac): for i = 51 down to 1, with
   m = i + 1, draw words until one is below ``2**32 - 2**32 % m``, then swap indices i and
   ``word % m``.
5. Deal one card at a time from index 0: to each seat in ``order``, then the kitty (when
   dealt), round after round, until every hand has its cards.
6. Cards that move afterwards (pass the trash, community cards, draws) are followed as far as
   the history shows them, and the hands shown at the end are checked against what each seat
   could hold (see ``_AfterDeal``).

Usage, as a library::

    report = verify_history(json.load(open("hand.json")))
    print(report.render())
    assert report.ok

or from a shell: ``guts verify hand.json``, ``python -m service.verify URL --token T``
(``--json`` for a machine-readable report). Exit status: 0 verified, 1 a check failed or the
hand cannot be verified, 2 the input could not be read or is not a hand history.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = [
    "CONTEXT_FORMAT",
    "FULL_DECK",
    "Check",
    "VerifyReport",
    "deal_cards",
    "deck_context",
    "derive_deck",
    "main",
    "verify_history",
]

RANKS = "23456789TJQKA"
SUITS = "shdc"
FULL_DECK: tuple[str, ...] = tuple(rank + suit for rank in RANKS for suit in SUITS)
"""The canonical starting order of the shuffle: 2s 2h 2d 2c 3s 3h ... Ad Ac (52 cards)."""

CONTEXT_FORMAT = "guts-v1|{table_id}|{hand}|{client_seed}"
"""The deck context of one hand (UTF-8 encoded before use)."""

VERIFIED = "verified"
FAILED = "failed"
NOT_VERIFIABLE = "not_verifiable"
INVALID = "invalid"

EXIT_VERIFIED = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2

_TWO_32 = 1 << 32
_HTTP_TIMEOUT_S = 30


# --- the algorithm -----------------------------------------------------------------------------


def _block(seed: bytes, context: bytes, counter: int) -> bytes:
    """Block ``counter`` of the stream: HMAC-SHA256(seed, context | "|" | counter as u64 BE)."""
    return hmac.new(seed, context + b"|" + counter.to_bytes(8, "big"), hashlib.sha256).digest()


def _words(seed: bytes, context: bytes) -> Iterator[int]:
    """The stream's 4-byte big-endian unsigned words, block 0 first; it never ends."""
    counter = 0
    while True:
        block = _block(seed, context, counter)
        for offset in range(0, len(block), 4):
            yield int.from_bytes(block[offset : offset + 4], "big")
        counter += 1


def derive_deck(seed: bytes, context: bytes) -> list[str]:
    """The 52 cards in the order that ``seed`` and ``context`` fix; index 0 is dealt first.

    Fisher-Yates from the end of ``FULL_DECK``: for ``i`` = 51, 50, ..., 1, read words until one
    is below ``2**32 - 2**32 % (i + 1)`` (the rejected ones are consumed too), and swap the cards
    at ``i`` and ``word % (i + 1)``.
    """
    deck = list(FULL_DECK)
    words = _words(bytes(seed), bytes(context))
    for i in range(len(deck) - 1, 0, -1):
        m = i + 1
        limit = _TWO_32 - _TWO_32 % m
        word = next(words)
        while word >= limit:
            word = next(words)
        j = word % m
        deck[i], deck[j] = deck[j], deck[i]
    return deck


def deck_context(table_id: str, hand: int, client_seed: str = "") -> bytes:
    """The shuffle context of one hand: ``guts-v1|<table_id>|<hand>|<client_seed>`` in UTF-8."""
    return CONTEXT_FORMAT.format(table_id=table_id, hand=hand, client_seed=client_seed).encode()


def deal_cards(
    deck: Sequence[str], order: Sequence[int | str], cards: int, kitty: bool
) -> tuple[dict[str, list[str]], list[str]]:
    """Deal ``cards`` cards one at a time from the top (index 0) of ``deck``: each round gives
    one card to every seat of ``order`` in turn and then one to the kitty (when ``kitty``).

    Returns the hands by position (the seat as a string, or ``"kitty"``) and the undealt rest.
    """
    positions = [str(seat) for seat in order] + (["kitty"] if kitty else [])
    hands: dict[str, list[str]] = {position: [] for position in positions}
    top = 0
    for _ in range(cards):
        for position in positions:
            hands[position].append(deck[top])
            top += 1
    return hands, list(deck[top:])


# --- the report --------------------------------------------------------------------------------


class Check(NamedTuple):
    """One check: its name (e.g. "commitment", "cards of seat 2"), whether it passed, and why."""

    name: str
    passed: bool
    detail: str


@dataclass
class VerifyReport:
    """The verdict on one hand history.

    ``status`` is "verified" (every check passed), "failed" (some check failed: the history
    does not match its seed), "not_verifiable" (nothing failed, but the deal cannot be checked
    from this history: a stacked sandbox deal, a deck carried over from an earlier hand, or a
    hand whose seed is not published yet) or "invalid" (not a hand history). ``ok`` is true only
    for "verified".
    """

    ok: bool
    checks: list[Check] = field(default_factory=list)
    status: str = VERIFIED
    hand_id: str | None = None

    @property
    def failed(self) -> list[Check]:
        """The checks that did not pass."""
        return [check for check in self.checks if not check.passed]

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data."""
        return {
            "ok": self.ok,
            "status": self.status,
            "hand_id": self.hand_id,
            "checks": [check._asdict() for check in self.checks],
        }

    def render(self) -> str:
        """The report as text for a terminal: a verdict line, then one line per check."""
        verdict = {
            VERIFIED: "VERIFIED",
            FAILED: "FAILED",
            NOT_VERIFIABLE: "NOT VERIFIABLE",
            INVALID: "NOT A HAND HISTORY",
        }[self.status]
        lines = [f"hand {self.hand_id or '?'}: {verdict}"]
        width = max((len(check.name) for check in self.checks), default=0)
        for check in self.checks:
            mark = "ok  " if check.passed else "FAIL"
            lines.append(f"  {mark}  {check.name.ljust(width)}  {check.detail}")
        return "\n".join(lines)


class _Checks:
    """Collects checks; "not verifiable" findings are kept apart from failures."""

    def __init__(self) -> None:
        self.items: list[Check] = []
        self.unverifiable = False
        self.failures = False

    def add(self, name: str, passed: bool, detail: str) -> bool:
        self.items.append(Check(name, passed, detail))
        self.failures |= not passed
        return passed

    def cannot_verify(self, name: str, detail: str) -> None:
        self.items.append(Check(name, False, f"not verifiable: {detail}"))
        self.unverifiable = True

    def report(self, hand_id: str | None) -> VerifyReport:
        status = FAILED if self.failures else NOT_VERIFIABLE if self.unverifiable else VERIFIED
        return VerifyReport(status == VERIFIED, self.items, status, hand_id)


# --- reading a history -------------------------------------------------------------------------


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _card_list_problem(value: Any, what: str) -> str | None:
    if not isinstance(value, list) or not all(isinstance(card, str) for card in value):
        return f"{what} is not a list of cards"
    bad = [card for card in value if card not in FULL_DECK]
    if bad:
        return f"{what} has invalid cards {bad}"
    return None


def _format_problems(history: dict[str, Any]) -> list[str]:
    """What makes `history` unusable as a hand history (empty when it is usable)."""
    problems: list[str] = []
    if not isinstance(history.get("table_id"), str):
        problems.append("table_id must be a string")
    if not _is_int(history.get("hand")) or history["hand"] < 1:
        problems.append("hand must be a positive integer")
    order = history.get("order")
    if not (isinstance(order, list) and order and all(_is_int(seat) for seat in order)):
        problems.append("order must be a non-empty list of seat numbers")
    elif len(set(order)) != len(order):
        problems.append("order repeats a seat")
    commitment = history.get("commitment")
    if not (isinstance(commitment, str) and len(commitment) == 64 and _is_hex(commitment)):
        problems.append("commitment must be 64 hex digits")
    for key in ("stacked", "reshuffled"):
        if not isinstance(history.get(key), bool):
            problems.append(f"{key} must be true or false")
    for key in ("client_seed", "deck_context"):
        if key in history and not isinstance(history[key], str):
            problems.append(f"{key} must be a string")
    if "seed" in history and not isinstance(history["seed"], str | None):
        problems.append("seed must be a string")
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


def _is_hex(text: str) -> bool:
    try:
        bytes.fromhex(text)
    except ValueError:
        return False
    return True


class _Sighting(NamedTuple):
    """Cards the history says were somewhere: a hand at the deal, a shown hand, the rest."""

    name: str
    position: str  # a seat as a string, "kitty", or "rest" (the undealt deck)
    cards: list[str]
    ordered: bool  # dealt hands keep the deal order; shown hands are compared as sets


def _sightings(history: dict[str, Any]) -> tuple[list[_Sighting], list[str]]:
    """Every set of cards the history shows, and problems with them that are not card checks."""
    found: list[_Sighting] = []
    problems: list[str] = []
    for seat, cards in history.get("cards", {}).items():
        found.append(_Sighting(f"cards of seat {seat}", str(seat), cards, True))
    if history.get("kitty"):
        found.append(_Sighting("kitty", "kitty", history["kitty"], True))
    outcome = history.get("outcome") or {}
    for seat, cards in outcome.get("shown", {}).items():
        found.append(_Sighting(f"shown by seat {seat}", str(seat), cards, False))
    if outcome.get("kitty_shown"):
        found.append(_Sighting("kitty shown", "kitty", outcome["kitty_shown"], False))
    for event in history.get("events", []):
        data = event.get("data", {})
        label = f"event {event.get('version', '?')} {event.get('type', '?')}"
        if event.get("type") == "hand_dealt":
            cards = data.get("cards", {})
            for seat, hand in cards.items() if isinstance(cards, dict) else ():
                found.append(_Sighting(f"{label}: cards of seat {seat}", str(seat), hand, True))
            if data.get("kitty"):
                found.append(_Sighting(f"{label}: kitty", "kitty", data["kitty"], True))
            if "deck" in data:
                found.append(_Sighting(f"{label}: rest of the deck", "rest", data["deck"], True))
        elif event.get("type") == "hand_resolved":
            shown = data.get("shown", {})
            for seat, hand in shown.items() if isinstance(shown, dict) else ():
                found.append(_Sighting(f"{label}: shown by seat {seat}", str(seat), hand, False))
            if data.get("kitty_shown"):
                found.append(
                    _Sighting(f"{label}: kitty shown", "kitty", data["kitty_shown"], False)
                )
    for sighting in found:
        if problem := _card_list_problem(sighting.cards, sighting.name):
            problems.append(problem)
    return found, problems


def _kitty_dealt(history: dict[str, Any], sightings: list[_Sighting]) -> bool | None:
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


def _describe(cards: Sequence[str]) -> str:
    return " ".join(cards) if cards else "(none)"


# --- the checks --------------------------------------------------------------------------------


def verify_history(history: Any) -> VerifyReport:
    """Check one hand history (the JSON of GET /v1/tables/{table_id}/hands/{hand}).

    Checks, in order: the format; the deck context against the table, hand and client seed;
    the seed against its commitment; then every hand the history shows (each seat's dealt
    cards, the kitty, the dealt cards and undealt rest recorded in the events) against the deck
    derived from the seed, dealt in ``order``; the cards that moved after the deal (passes,
    community cards, draws) as far as the history shows them; and the hands shown at the end
    against what each seat could hold. A stacked sandbox deal, a deck carried over from an
    earlier hand, or a missing seed make the deal not verifiable. Never raises for bad input:
    a non-history gives a report with status "invalid".
    """
    try:
        return _verify(history)
    except (AttributeError, KeyError, LookupError, TypeError, ValueError) as error:
        checks = _Checks()
        checks.add("format", False, f"malformed hand history ({type(error).__name__}: {error})")
        return _invalid(checks, None)


def _verify(history: Any) -> VerifyReport:
    checks = _Checks()
    if not isinstance(history, dict):
        checks.add("format", False, f"expected a JSON object, got {type(history).__name__}")
        return _invalid(checks, None)
    hand_id = history.get("hand_id") if isinstance(history.get("hand_id"), str) else None
    problems = _format_problems(history)
    sightings, sighting_problems = _sightings(history) if not problems else ([], [])
    problems += sighting_problems
    if problems:
        checks.add("format", False, "; ".join(problems))
        return _invalid(checks, hand_id)
    table_id, hand, order = history["table_id"], history["hand"], history["order"]
    hand_id = hand_id or f"{table_id}/{hand}"
    checks.add("format", True, f"hand {hand} of table {table_id}, {len(order)} players")

    # The deck context binds the deck to this table, hand and client seed.
    client_seed = history.get("client_seed", "")
    context = deck_context(table_id, hand, client_seed)
    stated = history.get("deck_context")
    if stated is None:
        checks.add("deck context", True, f"{context.decode()!r} (not stated; derived)")
    else:
        checks.add(
            "deck context",
            stated.encode() == context,
            f"{stated!r}" if stated.encode() == context else f"{stated!r}, expected {context!r}",
        )

    seed_hex = history.get("seed")
    if seed_hex is None:
        status = history.get("status")
        checks.cannot_verify(
            "seed", f"no seed: it is published once the hand is over (status {status!r})"
        )
        return checks.report(hand_id)
    if not _is_hex(seed_hex) or not seed_hex:
        checks.add("seed", False, f"the seed {seed_hex!r} is not hex")
        return checks.report(hand_id)
    seed = bytes.fromhex(seed_hex)
    digest = hashlib.sha256(seed).hexdigest()
    commitment = history["commitment"].lower()
    checks.add(
        "commitment",
        hmac.compare_digest(digest, commitment),
        f"sha256(seed) = {digest}"
        + ("" if digest == commitment else f", but the commitment is {commitment}"),
    )
    _check_events_agree(history, checks)

    if history["stacked"]:
        checks.cannot_verify(
            "stacked",
            "a sandbox deal whose cards were fixed by the caller (stacked_deck): they do not "
            "come from the seed",
        )
        return checks.report(hand_id)
    if not history["reshuffled"]:
        checks.cannot_verify(
            "reshuffled",
            "dealt from the deck carried over from an earlier hand (deck: carry_over), not "
            "from this hand's seed; verify the hand that last reshuffled instead",
        )
        return checks.report(hand_id)

    deck = derive_deck(seed, context)
    _check_deal(history, order, deck, sightings, checks, seed)
    return checks.report(hand_id)


def _invalid(checks: _Checks, hand_id: str | None) -> VerifyReport:
    return VerifyReport(False, checks.items, INVALID, hand_id)


def _check_events_agree(history: dict[str, Any], checks: _Checks) -> None:
    """The deal event recorded in the history states the same deal as the record's fields."""
    for event in history.get("events", []):
        if event.get("type") != "hand_dealt":
            continue
        data = event.get("data", {})
        keys = ("hand", "order", "commitment", "seed", "client_seed", "stacked", "reshuffled")
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
    sightings: list[_Sighting],
    checks: _Checks,
    seed: bytes,
) -> None:
    """Re-deal `deck` in `order` and compare every sighting with the derived hands; then follow
    the cards through passes, community cards and draws to check the hands shown at the end."""
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
        return
    if len(sizes) > 1:
        checks.add("deal", False, f"hands of different sizes in the history: {sorted(sizes)}")
        return
    (cards,) = sizes
    known = _kitty_dealt(history, sightings)
    candidates = [known] if known is not None else [False, True]
    candidates = [k for k in candidates if (len(order) + k) * cards <= len(FULL_DECK)]
    if not candidates:
        checks.add("deal", False, f"{len(order)} hands of {cards} cards do not fit in one deck")
        return

    def compare(kitty: bool) -> list[Check]:
        hands, rest = deal_cards(deck, order, cards, kitty)
        after = _AfterDeal(history, order, hands, rest, seed)
        results = list(after.checks)
        for s in sightings:
            if s.position == "rest":
                expected: list[str] | None = rest
            elif not s.ordered and s.position in after.held:  # shown at the end of the hand
                results.append(after.held[s.position].compare(s.name, s.cards))
                continue
            else:
                expected = hands.get(s.position)
            if expected is None:
                results.append(Check(s.name, False, f"seat {s.position} is not in order {order}"))
                continue
            same = expected == s.cards if s.ordered else sorted(expected) == sorted(s.cards)
            detail = _describe(s.cards)
            if not same:
                detail = f"history has {_describe(s.cards)}, the seed deals {_describe(expected)}"
            results.append(Check(s.name, same, detail))
        return results

    outcomes = {kitty: compare(kitty) for kitty in candidates}
    # With the kitty unknown (a player's view), keep the layout the cards agree with, if any.
    best = max(candidates, key=lambda k: sum(c.passed for c in outcomes[k]))
    kitty_note = {
        True: "with the kitty dealt last in each round",
        False: "without a kitty",
    }[best]
    if known is None:
        kitty_note += " (inferred: this history does not say whether a kitty was dealt)"
    checks.add("layout", True, f"{cards} cards each to seats {order} in that order, {kitty_note}")
    for check in outcomes[best]:
        checks.add(*check)


class _Held:
    """What one seat can hold after cards changed hands, as far as the history shows.

    The seat holds every card of `added`, at least `keep` cards of `pool`, and, when `unsure`,
    cards this history does not show. A hand known card for card is `pool` = the hand,
    `keep` = its size, nothing added, not unsure.
    """

    def __init__(self, hand: list[str]) -> None:
        self.pool = list(hand)
        self.keep = len(hand)
        self.added: list[str] = []
        self.unsure = False

    def _merge(self) -> None:
        self.pool += self.added
        self.keep += len(self.added)
        self.added = []

    def remove(self, cards: list[str] | None, count: int) -> bool:
        """Take out `cards` (None: `count` cards this history does not show). False when the
        seat cannot have held a named card."""
        self._merge()
        if cards is None:
            self.keep = max(0, self.keep - count)
            return True
        ok = True
        for card in cards:
            if card in self.pool:
                self.pool.remove(card)
                self.keep = max(0, self.keep - 1)
            elif not self.unsure:
                ok = False
        return ok

    def add(self, cards: list[str] | None) -> None:
        """Put in `cards` (None: cards this history does not show)."""
        if cards is None:
            self.unsure = True
        else:
            self.added += cards

    def compare(self, name: str, shown: list[str]) -> Check:
        """Whether `shown` (the hand turned up at the end) is a hand this seat can hold."""
        rest = list(shown)
        missing = [card for card in self.added if card not in rest]
        for card in self.added:
            if card in rest:
                rest.remove(card)
        from_pool = [card for card in rest if card in self.pool]
        strangers = [card for card in rest if card not in self.pool]
        ok = (
            not missing
            and len(set(shown)) == len(shown)
            and len(from_pool) >= self.keep
            and (self.unsure or not strangers)
        )
        if ok:
            return Check(name, True, _describe(shown))
        if not self.unsure and len(self.pool) == self.keep:
            held = sorted(self.pool + self.added)
            return Check(
                name, False, f"history has {_describe(shown)}, the seat held {_describe(held)}"
            )
        need = f"all of {_describe(self.added)} and " if self.added else ""
        return Check(
            name,
            False,
            f"history has {_describe(shown)}; the seat held {need}at least {self.keep} of "
            f"{_describe(self.pool)}",
        )


class _AfterDeal:
    """Follows the cards after the deal: passes (pass the trash), community cards and draws.

    As the service plays them: every seat passes one card to the next seat of `order` (the last
    to the first), all at once; community cards come off the top of the undealt deck when the
    declarations are revealed; then each drawer in turn discards and draws as many from the
    top of the deck. When the deck runs short, the discards made since the last reshuffle are
    put under it, ordered by their positions in the deck derived from the same seed with the
    context ``guts-v1-draw|<table_id>|<hand>|<k>`` (k = draws made before this one).
    """

    def __init__(
        self,
        history: dict[str, Any],
        order: list[int],
        hands: dict[str, list[str]],
        rest: list[str],
        seed: bytes,
    ) -> None:
        self.checks: list[Check] = []
        self.held = {str(seat): _Held(hands[str(seat)]) for seat in order}
        self._history = history
        self._seed = seed
        self._events = [e for e in history.get("events", []) if isinstance(e, dict)]
        self._passes(order, hands)
        deck = self._community(list(rest))
        self._draws(deck)

    def _event_types(self) -> set[str]:
        return {str(e.get("type")) for e in self._events}

    def _passes(self, order: list[int], hands: dict[str, list[str]]) -> None:
        passes = self._history.get("passes") or {}
        if not isinstance(passes, dict) or not passes:
            return
        moved = "cards_passed" in self._event_types() or (
            not self._events and len(passes) == len(order)
        )
        cards: dict[str, str | None] = {}
        for seat in order:
            entry = passes.get(str(seat))
            card = entry.get("card") if isinstance(entry, dict) else None
            cards[str(seat)] = card if card in FULL_DECK else None
            if card is not None:
                held = card in hands[str(seat)]
                detail = card if held else f"{card} is not among the cards dealt to seat {seat}"
                self.checks.append(Check(f"passed by seat {seat}", held, detail))
        if not moved:
            return
        for i, seat in enumerate(order):
            gave, got = cards[str(seat)], cards[str(order[i - 1])]  # from the seat before
            self.held[str(seat)].remove([gave] if gave else None, 1)
            self.held[str(seat)].add([got] if got else None)

    def _community(self, deck: list[str]) -> list[str]:
        community = self._history.get("community")
        if community is None:
            community = [
                e.get("data", {}).get("card")
                for e in self._events
                if e.get("type") == "community_card_dealt"
            ]
        if not community:
            return deck
        expected = deck[: len(community)]
        same = list(community) == expected
        detail = _describe(community)
        if not same:
            detail = f"history has {_describe(community)}, the seed deals {_describe(expected)}"
        self.checks.append(Check("community cards", same, detail))
        return deck[len(community) :]

    def _draw_entries(self) -> list[tuple[str, dict[str, Any], str]]:
        """(seat, data, label) per draw, in the order drawn."""
        found = [
            (str(e.get("data", {}).get("seat")), e.get("data", {}), f"event {e.get('version')}")
            for e in self._events
            if e.get("type") == "cards_drawn"
        ]
        if found or not isinstance(self._history.get("draws"), dict):
            return found
        return [(str(s), d, "") for s, d in self._history["draws"].items() if isinstance(d, dict)]

    def _draws(self, deck: list[str]) -> None:
        known_deck: list[str] | None = deck
        pile: list[str] | None = []
        table_id, hand = self._history["table_id"], self._history["hand"]
        unchecked: list[str] = []
        for k, (seat, data, label) in enumerate(self._draw_entries()):
            discarded, drawn = data.get("discarded"), data.get("drawn")
            discards = discarded if isinstance(discarded, list) else None
            shown_drawn = drawn if isinstance(drawn, list) else None
            count = len(drawn) if isinstance(drawn, list) else drawn if _is_int(drawn) else None
            if count is None and discards is not None:
                count = len(discards)
            expected: list[str] | None = None
            reshuffled = False
            if known_deck is not None and count is not None:
                if len(known_deck) < count:
                    reshuffled = True
                    if pile is None:
                        known_deck = None
                    else:
                        context = f"guts-v1-draw|{table_id}|{hand}|{k}".encode()
                        rank = {card: i for i, card in enumerate(derive_deck(self._seed, context))}
                        known_deck = known_deck + sorted(pile, key=rank.__getitem__)
                if known_deck is not None:
                    expected, known_deck = known_deck[:count], known_deck[count:]
            elif count is None:
                known_deck = None
            if shown_drawn is not None:
                if expected is None:
                    unchecked.append(f"seat {seat}")
                else:
                    same = shown_drawn == expected
                    detail = _describe(shown_drawn)
                    if not same:
                        detail = f"history has {detail}, the seed deals {_describe(expected)}"
                    self.checks.append(Check(f"drawn by seat {seat}", same, detail))
            if isinstance(data.get("deck"), list) and known_deck is not None:
                same = data["deck"] == known_deck
                name = f"{label} cards_drawn: deck".strip()
                detail = f"{len(known_deck)} cards" if same else "differs from the derived deck"
                self.checks.append(Check(name, same, detail))
            if reshuffled:
                pile = list(discards) if discards is not None else None
            elif pile is not None:
                pile = pile + discards if discards is not None else None
            held = self.held.get(seat)
            if held is not None:
                if not held.remove(discards, count or 0):
                    self.checks.append(
                        Check(
                            f"discarded by seat {seat}",
                            False,
                            f"{_describe(discards or [])} were not all in the seat's hand",
                        )
                    )
                held.add(shown_drawn if shown_drawn is not None else expected)
        if unchecked:
            self.checks.append(
                Check(
                    "draws",
                    True,
                    "not compared for " + ", ".join(unchecked) + ": they drew after the deck was "
                    "reshuffled from discards this history does not show",
                )
            )


# --- the command line --------------------------------------------------------------------------


class _BadInput(Exception):
    """The input could not be read as a JSON document."""


def _read(source: str, token: str | None) -> Any:
    """The JSON document at `source`: a file path, "-" for stdin, or an http(s) URL."""
    if source.startswith(("http://", "https://")):
        request = urllib.request.Request(source, headers={"Accept": "application/json"})
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=_HTTP_TIMEOUT_S) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            with error:
                body = error.read(2000).decode("utf-8", "replace")
            raise _BadInput(f"GET {source}: HTTP {error.code}: {_problem(body)}") from None
        except (urllib.error.URLError, OSError) as error:
            raise _BadInput(f"GET {source}: {getattr(error, 'reason', error)}") from None
    elif source == "-":
        raw = sys.stdin.buffer.read()
    else:
        try:
            with open(source, "rb") as file:
                raw = file.read()
        except OSError as error:
            raise _BadInput(f"{source}: {error.strerror or error}") from None
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as error:
        raise _BadInput(f"{source}: not JSON ({error})") from None


def _problem(body: str) -> str:
    """The useful part of an error body: a problem+json title and detail, else the text."""
    try:
        problem = json.loads(body)
    except ValueError:
        return body.strip()[:200] or "(no body)"
    if isinstance(problem, dict):
        parts = [str(problem[k]) for k in ("title", "detail") if problem.get(k)]
        if parts:
            return ": ".join(parts)
    return body.strip()[:200]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="guts verify",
        description=(
            "Verify a Guts hand history: the seed against its commitment and every visible "
            "card against the deck the seed derives. Exit status: 0 verified, 1 a check "
            "failed or the hand cannot be verified, 2 bad input."
        ),
    )
    parser.add_argument(
        "source",
        help="a hand-history JSON file, '-' for stdin, or the http(s) URL of "
        "GET /v1/tables/{table_id}/hands/{hand}",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--token",
        default=os.environ.get("GUTS_TOKEN"),
        help="bearer token sent with a URL (default: $GUTS_TOKEN)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``guts verify`` with `argv` (the arguments after "verify"); returns the exit status."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse exits 2 on usage errors, 0 for --help
        return int(exit_.code or 0)
    try:
        history = _read(args.source, args.token)
    except _BadInput as error:
        if args.json:
            print(json.dumps({"ok": False, "status": INVALID, "error": str(error)}))
        print(f"guts verify: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    report = verify_history(history)
    print(json.dumps(report.to_dict(), indent=2) if args.json else report.render())
    if report.status == INVALID:
        return EXIT_BAD_INPUT
    return EXIT_VERIFIED if report.ok else EXIT_FAILED


if __name__ == "__main__":
    raise SystemExit(main())
