"""The precomputed tables behind ``service.rules.ranking``: the card encoding and, per option
combination, the tables from an encoded hand to its strength.

The strength layout and the rankings are described in ``service.rules.ranking``; this module
builds them (``_base_strength`` is the reference classification) and the evaluators there read
them. Tables are built lazily, once per option combination (tens of milliseconds).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Final

from service.rules.cards import FULL_DECK, RANKS, parse_cards

# Category names from weakest to strongest, per hand size; a strength's category index is its
# position in this tuple.
CATEGORIES: Final[dict[int, tuple[str, ...]]] = {
    2: ("high_card", "pair"),
    3: ("high_card", "pair", "flush", "straight", "three_of_a_kind", "straight_flush"),
    5: (
        "high_card",
        "pair",
        "two_pair",
        "three_of_a_kind",
        "straight",
        "flush",
        "full_house",
        "four_of_a_kind",
        "straight_flush",
    ),
}
"""Category names per hand size, weakest first."""

CATEGORY_SHIFT: Final = 20

# --- card encoding ----------------------------------------------------------------------------
#
# An encoded card is one int below 2**28 (a single CPython digit, so arithmetic on it and on sums
# and products of five stays on the interpreter's fast paths), with three fields:
#
#   bits  0-17  the small code  RANK_CODE[rank] * 40 + SUIT_CODE[suit]
#   bits 18-21  the suit bit    1 << (18 + suit value)        (clubs 0 .. spades 3)
#   bits 22-27  the rank prime  2, 3, 5, ..., 41              (deuce .. ace)
#
# RANK_CODE and SUIT_CODE are B3 sequences (found greedily): every multiset of at most three
# codes has its own sum. A suit-code sum is at most 39 < 40 and a small-code sum of three at most
# 186,759 < 2**18, so the low 18 bits of the sum of two or three cards identify the multiset of
# ranks and the multiset of suits, hence the hand's strength without suit tie-break: 2- and
# 3-card evaluation is one list index. For five cards, an AND of the suit bits tests for a flush
# and the product of the primes identifies the multiset of ranks (as in Cactus Kev's evaluator).
_RANK_CODE: Final = (0, 1, 4, 13, 32, 71, 124, 218, 375, 572, 744, 1208, 1556)
_SUIT_CODE: Final = (0, 1, 4, 13)
_SUIT_FACTOR: Final = 40
_PRIMES: Final = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41)
_SUIT_BIT_SHIFT: Final = 18
PRIME_SHIFT: Final = 22
SMALL_MASK: Final = (1 << _SUIT_BIT_SHIFT) - 1
SUIT_BITS: Final = 0xF << _SUIT_BIT_SHIFT
_SUIT_VALUE: Final = {"c": 0, "d": 1, "h": 2, "s": 3}  # suit tie-break order, clubs lowest
_NO_HAND: Final = -1  # table slot that no hand of distinct cards reaches


def _small_code(rank: int, suit: int) -> int:
    return _RANK_CODE[rank] * _SUIT_FACTOR + _SUIT_CODE[suit]


ENCODED: Final[dict[str, int]] = {
    card: (
        _small_code(RANKS.index(card[0]), _SUIT_VALUE[card[1]])
        | 1 << (_SUIT_BIT_SHIFT + _SUIT_VALUE[card[1]])
        | _PRIMES[RANKS.index(card[0])] << PRIME_SHIFT
    )
    for card in FULL_DECK
}
SMALL_OF_CARD: Final[dict[str, int]] = {card: code & SMALL_MASK for card, code in ENCODED.items()}
_RANK_OF: Final[dict[int, int]] = {code: RANKS.index(card[0]) for card, code in ENCODED.items()}
_SUIT_OF: Final[dict[int, int]] = {code: _SUIT_VALUE[card[1]] for card, code in ENCODED.items()}
# Sort key for suit tie-breaks: rank first, then suit (both ascending).
_ORDER_OF: Final[dict[int, int]] = {code: 4 * _RANK_OF[code] + _SUIT_OF[code] for code in _RANK_OF}
# One distinct bit per card, for the 2- and 3-card suit tie-break tables.
BIT_OF_CODE: Final[dict[int, int]] = {code: 1 << order for code, order in _ORDER_OF.items()}
BIT_OF_CARD: Final[dict[str, int]] = {card: BIT_OF_CODE[ENCODED[card]] for card in FULL_DECK}


def encode(cards: Sequence[str]) -> tuple[int, ...]:
    """Encode card strings for ``make_int_evaluator``; validates them like ``parse_cards``.

    The encoding is internal to the ranking: only feed the results to evaluators made by
    ``service.rules.ranking``.
    """
    return tuple(ENCODED[card] for card in parse_cards(cards))


# --- reference classification (used to build the tables) -----------------------------------


def _straight_top(ranks: Sequence[int], ace_low: bool) -> int | None:
    """Top rank index of the straight formed by distinct ``ranks``, or None."""
    ordered = sorted(ranks)
    n = len(ordered)
    if ordered == list(range(ordered[0], ordered[0] + n)):
        return ordered[-1]
    # Ace plays low: A-2-3 (top card the 3) or A-2-3-4-5 (top card the 5).
    if ace_low and ordered == [*range(n - 1), 12]:
        return n - 2
    return None


def _base_strength(
    n_cards: int, ranks: Sequence[int], flush: bool, straights_and_flushes: bool, ace_low: bool
) -> int:
    """Strength of a hand without suit tie-break, from its rank indices and flushness."""
    counts = Counter(ranks)
    # Distinct ranks, most numerous first, then highest first: the hand's comparison order.
    groups = sorted(counts, key=lambda r: (counts[r], r), reverse=True)
    shape = sorted(counts.values(), reverse=True)
    names = CATEGORIES[n_cards]
    kickers = groups
    straight_top = None
    if straights_and_flushes and n_cards >= 3 and len(counts) == n_cards:
        straight_top = _straight_top(ranks, ace_low)
    flush = flush and straights_and_flushes and n_cards >= 3

    if straight_top is not None and flush:
        name, kickers = "straight_flush", [straight_top]
    elif shape[0] == 4:
        name = "four_of_a_kind"
    elif shape[:2] == [3, 2]:
        name = "full_house"
    elif shape[0] == 3:
        name = "three_of_a_kind"
    elif straight_top is not None:
        name, kickers = "straight", [straight_top]
    elif flush:
        name = "flush"
    elif shape[:2] == [2, 2]:
        name = "two_pair"
    elif shape[0] == 2:
        name = "pair"
    else:
        name = "high_card"

    strength = names.index(name) << CATEGORY_SHIFT
    for position, rank in enumerate(kickers):
        strength |= rank << (4 * (4 - position))
    return strength


def suit_key(codes: Iterable[int]) -> int:
    """Suits in tie-break order (rank descending, then suit descending) as base-4 digits."""
    key = 0
    for code in sorted(codes, key=_ORDER_OF.__getitem__, reverse=True):
        key = key << 2 | _SUIT_OF[code]
    return key


# --- tables -----------------------------------------------------------------------------------


def _store(table: dict[int, int], key: int, strength: int) -> None:
    # The encoding guarantees one strength per key; a clash would mean a broken encoding.
    if table.setdefault(key, strength) != strength:
        raise RuntimeError(f"hand table key {key} maps to two strengths")


@functools.cache
def small_table(n_cards: int, straights_and_flushes: bool, ace_low: bool) -> list[int]:
    """2/3-card table: low 18 bits of the sum of encoded cards -> strength (no suit tie-break).

    Slots that no hand reaches hold ``_NO_HAND``.
    """
    by_key: dict[int, int] = {}
    known: dict[tuple[tuple[int, ...], bool], int] = {}  # (sorted ranks, flush) -> strength
    for hand in itertools.combinations(tuple(ENCODED.values()), n_cards):
        shape = (tuple(sorted(_RANK_OF[c] for c in hand)), len({_SUIT_OF[c] for c in hand}) == 1)
        strength = known.get(shape)
        if strength is None:
            strength = _base_strength(n_cards, shape[0], shape[1], straights_and_flushes, ace_low)
            known[shape] = strength
        _store(by_key, sum(hand) & SMALL_MASK, strength)
    table = [_NO_HAND] * (max(by_key) + 1)
    for key, strength in by_key.items():
        table[key] = strength
    return table


@functools.cache
def small_tiebreak_table(
    n_cards: int, straights_and_flushes: bool, ace_low: bool
) -> dict[int, int]:
    """2/3-card table with suit tie-break: OR of per-card bits -> strength."""
    plain = small_table(n_cards, straights_and_flushes, ace_low)
    table: dict[int, int] = {}
    for hand in itertools.combinations(tuple(ENCODED.values()), n_cards):
        key = 0
        for code in hand:
            key |= BIT_OF_CODE[code]
        table[key] = plain[sum(hand) & SMALL_MASK] << (2 * n_cards) | suit_key(hand)
    return table


@functools.cache
def five_tables(ace_low: bool) -> tuple[dict[int, int], dict[int, int]]:
    """5-card tables keyed by the product of the rank primes: (flushes, all other hands)."""
    flushes: dict[int, int] = {}
    others: dict[int, int] = {}
    for ranks in itertools.combinations_with_replacement(range(13), 5):
        if max(Counter(ranks).values()) > 4:
            continue  # five of a kind cannot be dealt from one deck
        product = math.prod(_PRIMES[r] for r in ranks)
        _store(others, product, _base_strength(5, ranks, False, True, ace_low))
        if len(set(ranks)) == 5:
            _store(flushes, product, _base_strength(5, ranks, True, True, ace_low))
    return flushes, others
