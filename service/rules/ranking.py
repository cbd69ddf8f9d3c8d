"""Hand ranking: one comparable int per hand for 2-, 3- and 5-card Guts.

``make_evaluator(n_cards, ...)`` returns a function from a hand (a sequence of card strings) to
its *strength*: an int, higher is better, equal ints tie. Rankings:

* 2 cards: any pair beats any non-pair; a higher pair beats a lower one; otherwise the higher
  top card wins, then the higher second card. Aces are high.
* 3 cards: straight flush > three of a kind > straight > flush > pair > high card (a straight
  beats a flush, being rarer). With ``ace_low_straight`` A-2-3 is a straight, the lowest one,
  and A-K-Q the highest. Without ``straights_and_flushes``: three of a kind > pair > high card.
* 5 cards: standard poker, straight flush > four of a kind > full house > flush > straight >
  three of a kind > two pair > pair > high card; with ``ace_low_straight`` A-2-3-4-5 is the
  lowest straight (and straight flush).
* ``suit_tiebreak``: hands that would otherwise tie are decided by suits, spades > hearts >
  diamonds > clubs. Both hands' cards are put in order of rank, highest first (an ace counts as
  the highest rank here, also in A-2-3 and A-2-3-4-5), cards of equal rank in suit order
  (spades first); the first position where the suits differ decides. Two different hands then
  never tie.

Strength layout (so that ``category`` can read it back): without suit tie-break a strength is
``category_index << 20`` plus up to five 4-bit rank indices (0 = deuce .. 12 = ace) in order of
significance (the straight's top card for straights; for other hands the distinct ranks,
grouped by count then rank, e.g. K-K-K-2-2 gives K, 2). With ``suit_tiebreak`` the strength is
``base * 4**n_cards + suit_key``, where ``suit_key`` reads the suits (clubs 0, diamonds 1,
hearts 2, spades 3) in the order above as base-4 digits, most significant first.

Speed: evaluation is a few table lookups, the tables being built lazily once per option
combination (tens of milliseconds). ``encode`` turns cards into small ints that carry three
fields at once (see "card encoding" below); ``make_int_evaluator`` works on those directly and
the string evaluators look each card's int up in a dict, then do the same arithmetic.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Final, NoReturn

from service.rules.cards import FULL_DECK, RANKS, parse_cards
from service.rules.errors import InvalidCard

__all__ = [
    "CATEGORIES",
    "Evaluator",
    "IntEvaluator",
    "category",
    "encode",
    "low_strength",
    "make_evaluator",
    "make_int_evaluator",
]

Evaluator = Callable[[Sequence[str]], int]
"""A hand evaluator on card strings: hand -> strength (higher is better)."""

IntEvaluator = Callable[[Sequence[int]], int]
"""A hand evaluator on encoded cards (see ``encode``): encoded hand -> strength."""

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

_CATEGORY_SHIFT: Final = 20

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
_PRIME_SHIFT: Final = 22
_SMALL_MASK: Final = (1 << _SUIT_BIT_SHIFT) - 1
_SUIT_BITS: Final = 0xF << _SUIT_BIT_SHIFT
_SUIT_VALUE: Final = {"c": 0, "d": 1, "h": 2, "s": 3}  # suit tie-break order, clubs lowest
_NO_HAND: Final = -1  # table slot that no hand of distinct cards reaches


def _small_code(rank: int, suit: int) -> int:
    return _RANK_CODE[rank] * _SUIT_FACTOR + _SUIT_CODE[suit]


_ENCODED: Final[dict[str, int]] = {
    card: (
        _small_code(RANKS.index(card[0]), _SUIT_VALUE[card[1]])
        | 1 << (_SUIT_BIT_SHIFT + _SUIT_VALUE[card[1]])
        | _PRIMES[RANKS.index(card[0])] << _PRIME_SHIFT
    )
    for card in FULL_DECK
}
_SMALL_OF_CARD: Final[dict[str, int]] = {
    card: code & _SMALL_MASK for card, code in _ENCODED.items()
}
_RANK_OF: Final[dict[int, int]] = {code: RANKS.index(card[0]) for card, code in _ENCODED.items()}
_SUIT_OF: Final[dict[int, int]] = {code: _SUIT_VALUE[card[1]] for card, code in _ENCODED.items()}
# Sort key for suit tie-breaks: rank first, then suit (both ascending).
_ORDER_OF: Final[dict[int, int]] = {code: 4 * _RANK_OF[code] + _SUIT_OF[code] for code in _RANK_OF}
# One distinct bit per card, for the 2- and 3-card suit tie-break tables.
_BIT_OF_CODE: Final[dict[int, int]] = {code: 1 << order for code, order in _ORDER_OF.items()}
_BIT_OF_CARD: Final[dict[str, int]] = {card: _BIT_OF_CODE[_ENCODED[card]] for card in FULL_DECK}


def encode(cards: Sequence[str]) -> tuple[int, ...]:
    """Encode card strings for ``make_int_evaluator``; validates them like ``parse_cards``.

    The encoding is internal to this module: only feed the results to evaluators made here.
    """
    return tuple(_ENCODED[card] for card in parse_cards(cards))


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

    strength = names.index(name) << _CATEGORY_SHIFT
    for position, rank in enumerate(kickers):
        strength |= rank << (4 * (4 - position))
    return strength


def _suit_key(codes: Iterable[int]) -> int:
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
def _small_table(n_cards: int, straights_and_flushes: bool, ace_low: bool) -> list[int]:
    """2/3-card table: low 18 bits of the sum of encoded cards -> strength (no suit tie-break).

    Slots that no hand reaches hold ``_NO_HAND``.
    """
    by_key: dict[int, int] = {}
    known: dict[tuple[tuple[int, ...], bool], int] = {}  # (sorted ranks, flush) -> strength
    for hand in itertools.combinations(tuple(_ENCODED.values()), n_cards):
        shape = (tuple(sorted(_RANK_OF[c] for c in hand)), len({_SUIT_OF[c] for c in hand}) == 1)
        strength = known.get(shape)
        if strength is None:
            strength = _base_strength(n_cards, shape[0], shape[1], straights_and_flushes, ace_low)
            known[shape] = strength
        _store(by_key, sum(hand) & _SMALL_MASK, strength)
    table = [_NO_HAND] * (max(by_key) + 1)
    for key, strength in by_key.items():
        table[key] = strength
    return table


@functools.cache
def _small_tiebreak_table(
    n_cards: int, straights_and_flushes: bool, ace_low: bool
) -> dict[int, int]:
    """2/3-card table with suit tie-break: OR of per-card bits -> strength."""
    plain = _small_table(n_cards, straights_and_flushes, ace_low)
    table: dict[int, int] = {}
    for hand in itertools.combinations(tuple(_ENCODED.values()), n_cards):
        key = 0
        for code in hand:
            key |= _BIT_OF_CODE[code]
        table[key] = plain[sum(hand) & _SMALL_MASK] << (2 * n_cards) | _suit_key(hand)
    return table


@functools.cache
def _five_tables(ace_low: bool) -> tuple[dict[int, int], dict[int, int]]:
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


# --- evaluators -------------------------------------------------------------------------------


def invalid_hand(cards: object, n_cards: int) -> InvalidCard:
    """The error for a hand an evaluator could not look up."""
    try:
        checked = parse_cards(cards)  # type: ignore[arg-type]
    except InvalidCard as exc:
        return exc
    if len(checked) != n_cards:
        return InvalidCard(f"a hand has exactly {n_cards} cards, got {len(checked)}")
    return InvalidCard(f"invalid hand {checked!r}")


def _bad_codes(cards: object, n_cards: int) -> NoReturn:
    raise InvalidCard(f"not a hand of {n_cards} encoded cards: {cards!r}")


def _resolved(n_cards: int, straights_and_flushes: bool | None) -> bool:
    """`straights_and_flushes` as given, or what `n_cards` implies when not given (none for
    two cards, always for five, ranked by default for three)."""
    return n_cards != 2 if straights_and_flushes is None else straights_and_flushes


def _check_options(n_cards: int, straights_and_flushes: bool) -> None:
    """Refuse an impossible combination (`straights_and_flushes` already resolved)."""
    if n_cards not in CATEGORIES:
        raise ValueError(f"n_cards must be 2, 3 or 5, not {n_cards!r}")
    if n_cards == 2 and straights_and_flushes:
        raise ValueError("two-card hands have no straights or flushes")
    if n_cards == 5 and not straights_and_flushes:
        raise ValueError("five-card hands always rank straights and flushes")


@functools.cache
def make_int_evaluator(
    n_cards: int,
    *,
    straights_and_flushes: bool | None = None,
    ace_low_straight: bool = True,
    suit_tiebreak: bool = False,
) -> IntEvaluator:
    """Like ``make_evaluator``, but the returned function takes cards from ``encode``.

    This is the fast path for callers that keep hands encoded. The ints are trusted: the
    function assumes distinct cards from ``encode`` and gives an unspecified result (possibly
    ``-1``) for anything else; a wrong number of cards raises ``InvalidCard``.
    """
    straights_and_flushes = _resolved(n_cards, straights_and_flushes)
    _check_options(n_cards, straights_and_flushes)
    # Options that cannot change the result share one table.
    ace_low = ace_low_straight and straights_and_flushes

    if n_cards == 5:
        flushes, others = _five_tables(ace_low)
        suit_bits, shift = _SUIT_BITS, _PRIME_SHIFT

        def five(cards: Sequence[int]) -> int:
            try:
                a, b, c, d, e = cards
                product = (a >> shift) * (b >> shift) * (c >> shift) * (d >> shift) * (e >> shift)
                if a & b & c & d & e & suit_bits:
                    return flushes[product]
                return others[product]
            except (KeyError, TypeError, ValueError):
                _bad_codes(cards, 5)

        if not suit_tiebreak:
            return five

        def five_tiebreak(cards: Sequence[int]) -> int:
            return five(cards) << 10 | _suit_key(cards)

        return five_tiebreak

    if suit_tiebreak:
        by_bits = _small_tiebreak_table(n_cards, straights_and_flushes, ace_low)
        bit = _BIT_OF_CODE
        if n_cards == 3:

            def three_tiebreak(cards: Sequence[int]) -> int:
                try:
                    a, b, c = cards
                    return by_bits[bit[a] | bit[b] | bit[c]]
                except (KeyError, TypeError, ValueError):
                    _bad_codes(cards, 3)

            return three_tiebreak

        def two_tiebreak(cards: Sequence[int]) -> int:
            try:
                a, b = cards
                return by_bits[bit[a] | bit[b]]
            except (KeyError, TypeError, ValueError):
                _bad_codes(cards, 2)

        return two_tiebreak

    table = _small_table(n_cards, straights_and_flushes, ace_low)
    mask = _SMALL_MASK
    if n_cards == 3:

        def three(cards: Sequence[int]) -> int:
            try:
                a, b, c = cards
                return table[(a + b + c) & mask]
            except (IndexError, TypeError, ValueError):
                _bad_codes(cards, 3)

        return three

    def two(cards: Sequence[int]) -> int:
        try:
            a, b = cards
            return table[(a + b) & mask]
        except (IndexError, TypeError, ValueError):
            _bad_codes(cards, 2)

    return two


@functools.cache
def make_evaluator(
    n_cards: int,
    *,
    straights_and_flushes: bool | None = None,
    ace_low_straight: bool = True,
    suit_tiebreak: bool = False,
) -> Evaluator:
    """Return the strength function for ``n_cards``-card hands under the given options.

    The function maps a sequence of card strings (e.g. ``("As", "Kd", "Qh")``) to an int: higher
    is a better hand, equal ints tie (with ``suit_tiebreak`` only identical hands tie). Rankings
    and the strength layout are described in the module docstring. Raises ``ValueError`` for an
    impossible combination: ``n_cards`` other than 2, 3 or 5, two-card hands with
    ``straights_and_flushes``, or five-card hands without it.

    The function raises ``InvalidCard`` for unknown card strings or the wrong number of cards.
    It assumes the cards are distinct (hands dealt from one deck): for speed it does not check,
    and a hand with a repeated card gets an unspecified result (possibly ``-1``) unless the
    table lookup happens to fail. Check untrusted input with ``parse_cards`` first.
    Evaluators are cached: the same options return the same function.
    """
    straights_and_flushes = _resolved(n_cards, straights_and_flushes)
    _check_options(n_cards, straights_and_flushes)
    ace_low = ace_low_straight and straights_and_flushes
    enc = _ENCODED

    if n_cards == 5:
        if suit_tiebreak:
            ints = make_int_evaluator(5, ace_low_straight=ace_low, suit_tiebreak=True)

            def five_tiebreak(cards: Sequence[str]) -> int:
                try:
                    codes = [enc[card] for card in cards]
                except (KeyError, TypeError):
                    raise invalid_hand(cards, 5) from None
                try:
                    return ints(codes)
                except InvalidCard:
                    raise invalid_hand(cards, 5) from None

            return five_tiebreak

        flushes, others = _five_tables(ace_low)
        suit_bits, shift = _SUIT_BITS, _PRIME_SHIFT

        def five(cards: Sequence[str]) -> int:
            try:
                s1, s2, s3, s4, s5 = cards
                a, b, c, d, e = enc[s1], enc[s2], enc[s3], enc[s4], enc[s5]
                product = (a >> shift) * (b >> shift) * (c >> shift) * (d >> shift) * (e >> shift)
                if a & b & c & d & e & suit_bits:
                    return flushes[product]
                return others[product]
            except (KeyError, TypeError, ValueError):
                raise invalid_hand(cards, 5) from None

        return five

    if suit_tiebreak:
        by_bits = _small_tiebreak_table(n_cards, straights_and_flushes, ace_low)
        bit = _BIT_OF_CARD
        if n_cards == 3:

            def three_tiebreak(cards: Sequence[str]) -> int:
                try:
                    a, b, c = cards
                    return by_bits[bit[a] | bit[b] | bit[c]]
                except (KeyError, TypeError, ValueError):
                    raise invalid_hand(cards, 3) from None

            return three_tiebreak

        def two_tiebreak(cards: Sequence[str]) -> int:
            try:
                a, b = cards
                return by_bits[bit[a] | bit[b]]
            except (KeyError, TypeError, ValueError):
                raise invalid_hand(cards, 2) from None

        return two_tiebreak

    table = _small_table(n_cards, straights_and_flushes, ace_low)
    small = _SMALL_OF_CARD  # the low 18 bits only: their sum needs no mask
    if n_cards == 3:

        def three(cards: Sequence[str]) -> int:
            try:
                a, b, c = cards
                return table[small[a] + small[b] + small[c]]
            except (IndexError, KeyError, TypeError, ValueError):
                raise invalid_hand(cards, 3) from None

        return three

    def two(cards: Sequence[str]) -> int:
        try:
            a, b = cards
            return table[small[a] + small[b]]
        except (IndexError, KeyError, TypeError, ValueError):
            raise invalid_hand(cards, 2) from None

    return two


def low_strength(strength: int) -> int:
    """Strength for the low half of a hi-lo pot: ``-strength``.

    The low pot goes to the lowest hand under the same ranking, so negating turns "lowest
    wins" into "highest wins" and the usual max/tie logic applies unchanged. Ties stay ties.
    """
    return -strength


def category(n_cards: int, strength: int, suit_tiebreak: bool = False) -> str:
    """The category name of a strength made by an ``n_cards`` evaluator.

    One of "straight_flush", "four_of_a_kind", "full_house", "flush", "straight",
    "three_of_a_kind", "two_pair", "pair", "high_card". ``suit_tiebreak`` must match the
    evaluator's option. Raises ``ValueError`` for a value no evaluator produces.
    """
    if n_cards not in CATEGORIES:
        raise ValueError(f"n_cards must be 2, 3 or 5, not {n_cards!r}")
    base = strength >> (2 * n_cards) if suit_tiebreak else strength
    index = base >> _CATEGORY_SHIFT
    names = CATEGORIES[n_cards]
    if strength < 0 or index >= len(names):
        raise ValueError(f"{strength} is not a {n_cards}-card hand strength")
    return names[index]
