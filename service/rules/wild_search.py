"""The search behind ``service.rules.wild``: the best (or lowest) hand a set of natural cards
makes with ``k`` wild cards, for the rule stated there.

Algorithm. The strength of ``N + S`` depends only on the ranks of the final hand, whether it is a
flush and, with ``suit_tiebreak``, the suits read in the tie-break order (ranks descending, then
suits descending). So instead of the ``C(52 - |N|, k)`` substitution sets, only the multisets of
``k`` substitute *ranks* are enumerated (combinations with replacement of the 13 ranks: 13, 91,
455 and 1,820 for 1-4 wilds), skipping those that would need a fifth card of a rank. Each
multiset gets one concrete choice of suits (no card repeated), the best one for it:

* for the high hand, when flushes count (3-card with ``straights_and_flushes``, 5-card), the
  naturals share a suit (or there are none) and every rank in the hand is distinct: the flush,
  all substitutes in the naturals' suit (spades when every card is wild), since a flush beats
  the same ranks unsuited (flush over high card, straight flush over straight);
* otherwise suits greedily: per rank, the best suits no natural holds (spades, hearts, diamonds,
  clubs; for the low hand clubs first). The ranks being fixed, the tie-break compares suits rank
  group by rank group, and within each group the greedy pick is the best (for the low hand the
  lowest) possible. If the low hand's greedy pick is a flush that counts, its lowest-ranked
  substitute (the least significant tie-break position) takes the next suit: the lowest
  non-flush choice, which beats (is lower than) any flush of those ranks.

Every candidate is a real hand of distinct cards, scored by ``make_int_evaluator`` without suit
tie-break; the best (for ``low`` the smallest) score wins and, with ``suit_tiebreak``, the
tie-break evaluator picks among the candidates sharing that score (a suit tie-break never
overrides the ranking). The tests check the result against brute force over every
substitution. Without ``suit_tiebreak`` the answer depends only on the naturals' ranks, whether
they share one suit, and ``k``: those "shapes" (at most a few thousand) are memoised outright.
"""

from __future__ import annotations

import functools
import itertools
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Final

from service.rules.cards import FULL_DECK, RANKS
from service.rules.ranking import IntEvaluator, encode, make_int_evaluator

_SUIT_VALUE: Final = {"c": 0, "d": 1, "h": 2, "s": 3}  # tie-break order, clubs lowest
_BEST_SUITS_FIRST: Final = (3, 2, 1, 0)
_WORST_SUITS_FIRST: Final = (0, 1, 2, 3)
_RANK: Final[dict[str, int]] = {card: RANKS.index(card[0]) for card in FULL_DECK}
_SUIT: Final[dict[str, int]] = {card: _SUIT_VALUE[card[1]] for card in FULL_DECK}
_CODE: Final[dict[str, int]] = dict(zip(FULL_DECK, encode(FULL_DECK), strict=True))
# _CODE_AT[rank][suit value] -> the card's encoded int.
_CODE_AT: Final[tuple[tuple[int, ...], ...]] = tuple(
    tuple(_CODE[rank + suit] for suit in "cdhs") for rank in RANKS
)
# _CODES_OF_SUIT[suit value][rank] -> the card's encoded int.
_CODES_OF_SUIT: Final = tuple(tuple(codes[suit] for codes in _CODE_AT) for suit in range(4))
# _FREE_CODES[low][rank][suit bits taken] -> codes of that rank's other cards, in the order a
# wild prefers them (best suits first for the high hand, worst first for the low one).
_FREE_CODES: Final[dict[bool, tuple[tuple[tuple[int, ...], ...], ...]]] = {
    low: tuple(
        tuple(tuple(codes[suit] for suit in order if not taken >> suit & 1) for taken in range(16))
        for codes in _CODE_AT
    )
    for low, order in ((False, _BEST_SUITS_FIRST), (True, _WORST_SUITS_FIRST))
}

Solver = Callable[[Sequence[str], int], int]
"""(naturals, number of wilds) -> strength of the best (or lowest) hand they make."""


_Multiset = tuple[tuple[tuple[int, int], ...], int]
"""A multiset of substitute ranks: ``((rank, multiplicity), ...)`` with ranks ascending, and the
bit mask of its ranks if every multiplicity is 1 (else 0)."""


@functools.cache
def _rank_multisets(k: int) -> tuple[_Multiset, ...]:
    """Every multiset of ``k`` ranks (see ``_Multiset``)."""
    multisets = []
    for ranks in itertools.combinations_with_replacement(range(len(RANKS)), k):
        pairs = tuple(sorted(Counter(ranks).items()))
        singles = sum(1 << r for r in ranks) if len(pairs) == k else 0
        multisets.append((pairs, singles))
    return tuple(multisets)


_Naturals = tuple[list[int], int, list[tuple[int, ...]], tuple[int, ...], bool]
"""The natural cards of a search, and what they leave for the substitutes: the naturals'
codes; the bit mask of their ranks; per rank, the codes of the cards still free for substitutes,
in order of preference; the codes by rank of the suit the high hand makes its flush in (empty
when it can make none, or the search is for the low hand); and whether the low hand's greedy
suits would make a flush, which it must avoid. (A plain tuple: one is made per search, and a
NamedTuple made a one-wild search, about 9 us, some 4% slower.)"""


def _naturals(
    ranks: Sequence[int], suits: Sequence[int], low: bool, flush_matters: bool
) -> _Naturals:
    """The naturals ``ranks`` and ``suits`` (distinct cards) as the search starts from them."""
    n_ranks = len(RANKS)
    held = [0] * n_ranks  # suit bits of the naturals, per rank
    suit_bits = rank_bits = 0
    distinct = True
    codes: list[int] = []
    for rank, suit in zip(ranks, suits, strict=True):
        distinct = distinct and not held[rank]
        held[rank] |= 1 << suit
        suit_bits |= 1 << suit
        rank_bits |= 1 << rank
        codes.append(_CODE_AT[rank][suit])
    preference = _WORST_SUITS_FIRST if low else _BEST_SUITS_FIRST
    free_by_held = _FREE_CODES[low]
    free = [free_by_held[rank][0] for rank in range(n_ranks)]
    for rank in ranks:
        free[rank] = free_by_held[rank][held[rank]]
    # A flush is possible only if the naturals share a suit (or there are none) and the hand's
    # ranks are distinct; the high hand then takes it, the low hand avoids it.
    flush_possible = flush_matters and distinct and suit_bits & (suit_bits - 1) == 0
    flush_codes: tuple[int, ...] = ()
    if flush_possible and not low:
        flush_suit = suit_bits.bit_length() - 1 if suit_bits else preference[0]
        flush_codes = _CODES_OF_SUIT[flush_suit]
    # The low hand's greedy suits are a flush only if the naturals all have the preferred suit.
    avoid_flush = flush_possible and low and suit_bits in (0, 1 << preference[0])
    return codes, rank_bits, free, flush_codes, avoid_flush


def search(
    ranks: Sequence[int],
    suits: Sequence[int],
    k: int,
    plain: IntEvaluator,
    tiebreak: IntEvaluator | None,
    low: bool,
    flush_matters: bool,
) -> int:
    """Best (or, with ``low``, lowest) strength of the naturals plus ``k`` substitutes.

    ``ranks`` and ``suits`` describe distinct natural cards (rank index, suit value). One
    candidate per multiset of substitute ranks suffices (module docstring). Candidates are scored
    with ``plain`` (no suit tie-break); if ``tiebreak`` is given, the answer is its best score
    among the candidates of the best plain score (a suit tie-break never overrides the ranking).
    """
    naturals, rank_bits, free, flush_codes, avoid_flush = _naturals(
        ranks, suits, low, flush_matters
    )
    first_sub = len(naturals)
    best = -1
    best_hands: list[list[int]] = []
    for pairs, singles in _rank_multisets(k):
        if flush_codes and singles and not singles & rank_bits:
            hand = naturals + [flush_codes[rank] for rank, _ in pairs]
        else:
            hand = naturals.copy()
            for rank, m in pairs:
                codes = free[rank]
                if len(codes) < m:
                    break
                if m == 1:
                    hand.append(codes[0])
                else:
                    hand += codes[:m]
            else:
                if avoid_flush and singles and not singles & rank_bits:
                    # Greedy gave every card the preferred suit: a flush, which the low hand
                    # avoids by moving its least significant substitute (the lowest rank) on.
                    hand[first_sub] = free[pairs[0][0]][1]
            if len(hand) < first_sub + k:
                continue  # some rank would need a fifth card
        value = plain(hand)
        if value == best:
            best_hands.append(hand)
        elif best < 0 or (value < best if low else value > best):
            best, best_hands = value, [hand]
    if tiebreak is None:
        return best
    scores = [tiebreak(hand) for hand in best_hands]
    return min(scores) if low else max(scores)


def _representative_suits(ranks: Sequence[int], one_suit: bool) -> list[int]:
    """Suits for ``ranks`` (ascending) giving distinct cards, one suit iff ``one_suit``."""
    if one_suit:
        return [3] * len(ranks)
    suits = [3 - sum(1 for r in ranks[:i] if r == rank) for i, rank in enumerate(ranks)]
    if len(set(suits)) == 1:  # all ranks distinct: move one card to another suit
        suits[-1] = 2
    return suits


def make_solver(
    n_cards: int, straights_and_flushes: bool, ace_low: bool, suit_tiebreak: bool, low: bool
) -> Solver:
    """The search for one option combination, as a function of (naturals, number of wilds)."""
    plain = make_int_evaluator(
        n_cards, straights_and_flushes=straights_and_flushes, ace_low_straight=ace_low
    )
    flush_matters = straights_and_flushes and n_cards >= 3

    if suit_tiebreak:
        tiebreak = make_int_evaluator(
            n_cards,
            straights_and_flushes=straights_and_flushes,
            ace_low_straight=ace_low,
            suit_tiebreak=True,
        )

        def solve_exact(naturals: Sequence[str], k: int) -> int:
            ranks = [_RANK[card] for card in naturals]
            suits = [_SUIT[card] for card in naturals]
            return search(ranks, suits, k, plain, tiebreak, low, flush_matters)

        return solve_exact

    # Without suit tie-break only the naturals' ranks, whether they share a suit, and k matter:
    # memoise by that shape (at most a few thousand of them).
    shapes: dict[tuple[tuple[int, ...], bool, int], int] = {}

    def solve_shape(naturals: Sequence[str], k: int) -> int:
        ranks = tuple(sorted(_RANK[card] for card in naturals))
        one_suit = len({card[1] for card in naturals}) <= 1
        key = (ranks, one_suit, k)
        value = shapes.get(key)
        if value is None:
            suits = _representative_suits(ranks, one_suit)
            value = shapes[key] = search(ranks, suits, k, plain, None, low, flush_matters)
        return value

    return solve_shape
