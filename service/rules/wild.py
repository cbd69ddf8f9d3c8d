"""Wild cards: hand strength when some cards may stand for any other card.

The rule (option ``wild``: ``none | deuces | one_eyed_jacks``):

* ``deuces``: 2s 2h 2d 2c are wild; ``one_eyed_jacks``: Js and Jh are wild; ``none``: nothing is.
* A wild card becomes whatever card makes the best hand, under the usual ranking (see
  ``service.rules.ranking``), with one restriction: the hand it makes has no two identical cards.
  A wild becomes a card that is not among the hand's natural (non-wild) cards, and several wilds
  become different cards, so there are no "five aces". A wild may become the very card it is (a
  wild 2c may play as 2c), or another wild card of the hand that itself plays as something else.
  Formally: with naturals ``N`` and ``k`` wild cards, the hand plays as the best ``N + S`` over all
  sets ``S`` of ``k`` distinct cards from the 52 that are not in ``N``.
* For the low half of a hi-lo pot a wild becomes whatever makes the LOWEST hand: the smallest
  strength of ``N + S`` under the same ranking.

Algorithm: see ``service.rules.wild_search``, which finds the best (or lowest) substitution;
this module makes the evaluators and their tables.

Speed and complexity:

* ``wild="none"``: the base evaluator itself. Otherwise a hand without wild cards costs one
  ``frozenset.isdisjoint`` (and a call) on top of the base evaluator.
* 2- and 3-card hands with wilds: one dict lookup (OR of per-card bits). The table of every hand
  holding a wild (3 cards: 4,804 with deuces, 2,500 with one-eyed jacks) is built once per option
  combination when the evaluator is made, with one search per distinct (naturals, k):
  ``sum_k C(52 - w, n - k) * C(12 + k, k)`` candidates for ``w`` wild cards (about 20,000 for
  3-card deuces), 5-40 ms.
* 5-card hands with wilds: a search scores ``C(12 + k, k)`` candidates (13, 91, 455, 1,820 for
  k = 1..4), each in O(1): tens of microseconds for one wild, a few milliseconds for four.
  Results are memoised by the sorted naturals and ``k`` in an LRU cache bounded at 16,384 entries
  per evaluator, so a repeated hand costs a set, a sort and a lookup.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Sequence
from typing import Final

from service.rules.cards import FULL_DECK
from service.rules.ranking import Evaluator, invalid_hand, make_evaluator
from service.rules.wild_search import Solver, make_solver

__all__ = ["WILD_CARDS", "make_wild_evaluator"]

WILD_CARDS: Final[dict[str, frozenset[str]]] = {
    "none": frozenset(),
    "deuces": frozenset({"2s", "2h", "2d", "2c"}),
    "one_eyed_jacks": frozenset({"Js", "Jh"}),
}
"""The wild cards of each ``wild`` option."""

_FIVE_CACHE_SIZE: Final = 1 << 14
"""Bound of each 5-card evaluator's memo of (sorted naturals, number of wilds) -> strength."""

_DECK: Final = frozenset(FULL_DECK)
_BIT: Final[dict[str, int]] = {card: 1 << index for index, card in enumerate(FULL_DECK)}


def _bits(cards: Iterable[str]) -> int:
    bits = 0
    for card in cards:
        bits |= _BIT[card]
    return bits


@functools.cache
def _small_table(
    n_cards: int,
    wild: str,
    straights_and_flushes: bool,
    ace_low: bool,
    suit_tiebreak: bool,
    low: bool,
) -> dict[int, int]:
    """Every 2/3-card hand holding a wild: OR of the cards' bits -> strength."""
    solve = make_solver(n_cards, straights_and_flushes, ace_low, suit_tiebreak, low)
    wilds = sorted(WILD_CARDS[wild])
    naturals_pool = [card for card in FULL_DECK if card not in WILD_CARDS[wild]]
    table: dict[int, int] = {}
    for k in range(1, min(n_cards, len(wilds)) + 1):
        wild_bits = [_bits(combo) for combo in itertools.combinations(wilds, k)]
        for naturals in itertools.combinations(naturals_pool, n_cards - k):
            strength = solve(naturals, k)
            natural_bits = _bits(naturals)
            for bits in wild_bits:
                table[natural_bits | bits] = strength
    return table


def _base_evaluator(
    n_cards: int, straights_and_flushes: bool, ace_low_straight: bool, suit_tiebreak: bool
) -> Evaluator:
    """``make_evaluator`` called with only the options that differ from its defaults.

    ``make_evaluator`` is cached by its call's arguments, so this is the object that the usual
    call (``make_evaluator(3)``, ``make_evaluator(3, suit_tiebreak=True)``) returns.
    """
    options: dict[str, bool] = {}
    if not straights_and_flushes:
        options["straights_and_flushes"] = False
    if not ace_low_straight:
        options["ace_low_straight"] = False
    if suit_tiebreak:
        options["suit_tiebreak"] = True
    return make_evaluator(n_cards, **options)


@functools.cache
def _make_wild(
    n_cards: int,
    wild: str,
    straights_and_flushes: bool,
    ace_low: bool,
    suit_tiebreak: bool,
    low: bool,
) -> Evaluator:
    # ace_low is False without straights; the plain call leaves the (meaningless) option out.
    base = _base_evaluator(
        n_cards, straights_and_flushes, ace_low or not straights_and_flushes, suit_tiebreak
    )
    wilds = WILD_CARDS[wild]
    if n_cards == 5:
        solve = make_solver(n_cards, straights_and_flushes, ace_low, suit_tiebreak, low)
        return _five_wild(base, wilds, solve)
    table = _small_table(n_cards, wild, straights_and_flushes, ace_low, suit_tiebreak, low)
    return _small_wild(n_cards, base, wilds, table)


def _five_wild(base: Evaluator, wilds: frozenset[str], solve: Solver) -> Evaluator:
    """Five cards: the base evaluator for a hand without wilds, else the memoised search."""
    search = functools.lru_cache(maxsize=_FIVE_CACHE_SIZE)(solve)
    is_free_of_wilds = wilds.isdisjoint
    deck = _DECK

    def five(cards: Sequence[str]) -> int:
        try:
            if is_free_of_wilds(cards):
                return base(cards)
            held = set(cards)
            if len(held) != 5 or len(cards) != 5 or not held <= deck:
                raise invalid_hand(cards, 5)
        except TypeError:
            raise invalid_hand(cards, 5) from None
        naturals = sorted(held - wilds)
        return search(tuple(naturals), 5 - len(naturals))

    return five


def _small_wild(
    n_cards: int, base: Evaluator, wilds: frozenset[str], table: dict[int, int]
) -> Evaluator:
    """Two or three cards: the base evaluator for a hand without wilds, else one lookup in the
    table of every hand holding a wild (`_small_table`)."""
    is_free_of_wilds = wilds.isdisjoint
    bit = _BIT
    if n_cards == 3:

        def three(cards: Sequence[str]) -> int:
            try:
                if is_free_of_wilds(cards):
                    return base(cards)
                a, b, c = cards
                return table[bit[a] | bit[b] | bit[c]]
            except (KeyError, TypeError, ValueError):
                raise invalid_hand(cards, 3) from None

        return three

    def two(cards: Sequence[str]) -> int:
        try:
            if is_free_of_wilds(cards):
                return base(cards)
            a, b = cards
            return table[bit[a] | bit[b]]
        except (KeyError, TypeError, ValueError):
            raise invalid_hand(cards, 2) from None

    return two


def make_wild_evaluator(
    n_cards: int,
    wild: str,
    *,
    straights_and_flushes: bool = True,
    ace_low_straight: bool = True,
    suit_tiebreak: bool = False,
    low: bool = False,
) -> Evaluator:
    """The strength function for ``n_cards``-card hands in which ``wild`` cards are wild.

    ``wild`` is ``"none"``, ``"deuces"`` or ``"one_eyed_jacks"`` (see ``WILD_CARDS``); the other
    options are those of ``make_evaluator`` and mean the same. The function returns the strength
    (as ``make_evaluator`` scores it) of the best hand the wild cards can make, each becoming a
    card not otherwise in the hand (module docstring). With ``low=True`` it returns the strength
    of the LOWEST hand they can make, for the low half of a hi-lo pot: callers compare lows with
    smaller = better (``ranking.low_strength`` turns that into higher = better).

    With ``wild="none"`` this is the base evaluator itself, no wrapper: the very object
    ``make_evaluator(n_cards, ...)`` returns when called with the options that differ from the
    defaults (``low`` changes nothing without wilds). Otherwise hands without wild cards cost one
    set check on top of the base evaluator; 2- and 3-card hands with wilds one table lookup (the
    table is built here, once per option combination); 5-card hands with wilds a search over
    substitute rank multisets, memoised (see the module docstring for the complexity).

    Raises ``ValueError`` for an unknown ``wild`` or an option combination ``make_evaluator``
    rejects. The function raises ``InvalidCard`` for unknown cards, repeated cards in a hand
    holding a wild, or the wrong number of cards; hands without wilds are checked exactly as
    the base evaluator checks them. Evaluators are cached per option combination.
    """
    if wild not in WILD_CARDS:
        raise ValueError(f"wild must be one of {', '.join(WILD_CARDS)}, not {wild!r}")
    if not WILD_CARDS[wild]:
        return _base_evaluator(n_cards, straights_and_flushes, ace_low_straight, suit_tiebreak)
    return _make_wild(
        n_cards,
        wild,
        bool(straights_and_flushes),
        bool(ace_low_straight and straights_and_flushes),
        bool(suit_tiebreak),
        bool(low),
    )
