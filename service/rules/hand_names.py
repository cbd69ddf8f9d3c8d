"""Names of ranked hands, in words: "pair of sevens", "three of a kind, kings", "ace high".

``name_hand`` reads a strength made by a ``service.rules.ranking`` evaluator (or a wild one:
a wild hand is named as the hand it plays as) back into its category and the ranks that name
it, most significant first; ``HandName.text`` says it in English. Clients in other languages
word the same ``category`` and ``ranks`` from their own tables, so nothing but the rules decides
what a hand is. ``shown_hand_names`` names the hands a showdown turned face up, as the ruleset
scored them (the best hand of cards and community card; in a hi-lo hand the low contenders'
lowest hand too).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from .cards import RANKS
from .ranking import category
from .ranking_tables import CATEGORY_SHIFT
from .ruleset import Ruleset
from .settlement import scorer

__all__ = ["HandName", "name_hand", "shown_hand_names"]

_WORDS: Final[dict[str, tuple[str, str]]] = {
    "2": ("two", "twos"),
    "3": ("three", "threes"),
    "4": ("four", "fours"),
    "5": ("five", "fives"),
    "6": ("six", "sixes"),
    "7": ("seven", "sevens"),
    "8": ("eight", "eights"),
    "9": ("nine", "nines"),
    "T": ("ten", "tens"),
    "J": ("jack", "jacks"),
    "Q": ("queen", "queens"),
    "K": ("king", "kings"),
    "A": ("ace", "aces"),
}
"""Each rank in words, one and many."""

_NAMING_RANKS: Final[dict[str, int]] = {
    "high_card": 1,
    "pair": 1,
    "two_pair": 2,
    "three_of_a_kind": 1,
    "straight": 1,
    "flush": 1,
    "full_house": 2,
    "four_of_a_kind": 1,
    "straight_flush": 1,
}
"""How many of a category's ranks (in order of significance) its name says."""


@dataclass(frozen=True)
class HandName:
    """What a hand is: its category (a ``ranking.CATEGORIES`` name) and the ranks that name it,
    most significant first ("7" for a pair of sevens; "K", "4" for kings full of fours; the
    top card of a straight, a flush or a high-card hand)."""

    category: str
    ranks: tuple[str, ...]
    n_cards: int

    @property
    def text(self) -> str:
        """The name in English."""
        one = [_WORDS[r][0] for r in self.ranks]
        many = [_WORDS[r][1] for r in self.ranks]
        if self.category == "high_card":
            return f"{one[0]} high"
        if self.category == "pair":
            return f"pair of {many[0]}"
        if self.category == "two_pair":
            return f"two pair, {many[0]} and {many[1]}"
        if self.category == "three_of_a_kind":
            return f"three of a kind, {many[0]}"
        if self.category == "full_house":
            return f"full house, {many[0]} full of {many[1]}"
        if self.category == "four_of_a_kind":
            return f"four of a kind, {many[0]}"
        if self.category == "straight_flush" and self.n_cards == 5 and self.ranks == ("A",):
            return "royal flush"
        return f"{self.category.replace('_', ' ')}, {one[0]} high"

    def to_dict(self) -> dict[str, Any]:
        """The name as the API shows it: ``category``, ``ranks`` and ``text``."""
        return {"category": self.category, "ranks": list(self.ranks), "text": self.text}


def name_hand(n_cards: int, strength: int, suit_tiebreak: bool = False) -> HandName:
    """The name of a hand of ``n_cards`` cards whose strength is ``strength``.

    ``strength`` is what an evaluator of ``ranking`` (or ``wild``) gave, not a low score: negate
    a low pot's score first (``ranking.low_strength``). ``suit_tiebreak`` must match the
    evaluator's option. Raises ``ValueError`` for a value no evaluator produces.
    """
    name = category(n_cards, strength, suit_tiebreak)
    base = strength >> (2 * n_cards) if suit_tiebreak else strength
    fields = base & ((1 << CATEGORY_SHIFT) - 1)
    ranks = tuple(RANKS[fields >> (4 * (4 - position)) & 0xF] for position in range(5))
    return HandName(name, ranks[: _NAMING_RANKS[name]], n_cards)


def shown_hand_names(
    rules: Ruleset,
    shown: Mapping[int, Sequence[str]],
    community: Sequence[str] = (),
    low_seats: Sequence[int] = (),
) -> dict[str, dict[str, Any]]:
    """The names of the hands turned face up at a showdown, by seat (as a string): ``high``, the
    hand it played for the (high) pot, and for seats in ``low_seats`` (a hi-lo hand's low
    contenders) ``low``, the lowest hand it played for the low pot."""
    high = scorer(rules, community)
    low = scorer(rules, community, low=True)
    names: dict[str, dict[str, Any]] = {}
    for seat, cards in shown.items():
        entry = {"high": name_hand(rules.cards, high(cards), rules.suit_tiebreak).to_dict()}
        if seat in low_seats:
            entry["low"] = name_hand(rules.cards, -low(cards), rules.suit_tiebreak).to_dict()
        names[str(seat)] = entry
    return names
