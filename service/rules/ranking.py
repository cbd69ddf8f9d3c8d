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
combination (tens of milliseconds) in ``service.rules.ranking_tables``. ``encode`` turns cards
into small ints that carry three fields at once (see "card encoding" there);
``make_int_evaluator`` works on those directly and the string evaluators look each card's int up
in a dict, then do the same arithmetic.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import NoReturn

from service.rules.cards import parse_cards
from service.rules.errors import InvalidCard
from service.rules.ranking_tables import (
    BIT_OF_CARD,
    BIT_OF_CODE,
    CATEGORIES,
    CATEGORY_SHIFT,
    ENCODED,
    PRIME_SHIFT,
    SMALL_MASK,
    SMALL_OF_CARD,
    SUIT_BITS,
    encode,
    five_tables,
    small_table,
    small_tiebreak_table,
    suit_key,
)

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
        return _five_from_codes(ace_low, suit_tiebreak)
    if suit_tiebreak:
        table = small_tiebreak_table(n_cards, straights_and_flushes, ace_low)
        return _small_tiebreak_from_codes(n_cards, table)
    return _small_from_codes(n_cards, small_table(n_cards, straights_and_flushes, ace_low))


# Each builder below returns one closure per hand size, its loop-free body written out in full:
# these are the hot paths, and a shared helper or a loop over the cards would cost a call each.


def _five_from_codes(ace_low: bool, suit_tiebreak: bool) -> IntEvaluator:
    """Five encoded cards: the product of the cards' primes keys the flush or the other table."""
    flushes, others = five_tables(ace_low)
    suit_bits, shift = SUIT_BITS, PRIME_SHIFT

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
        return five(cards) << 10 | suit_key(cards)

    return five_tiebreak


def _small_tiebreak_from_codes(n_cards: int, by_bits: dict[int, int]) -> IntEvaluator:
    """Two or three encoded cards, suits breaking ties: the OR of the cards' bits keys the
    table of every hand."""
    bit = BIT_OF_CODE
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


def _small_from_codes(n_cards: int, table: list[int]) -> IntEvaluator:
    """Two or three encoded cards: the sum of the cards' small fields indexes the table."""
    mask = SMALL_MASK
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
    if n_cards == 5:
        if suit_tiebreak:
            ints = make_int_evaluator(5, ace_low_straight=ace_low, suit_tiebreak=True)
            return _five_tiebreak_from_strings(ints)
        return _five_from_strings(ace_low)
    if suit_tiebreak:
        table = small_tiebreak_table(n_cards, straights_and_flushes, ace_low)
        return _small_tiebreak_from_strings(n_cards, table)
    return _small_from_strings(n_cards, small_table(n_cards, straights_and_flushes, ace_low))


# The string evaluators: the same arithmetic as the int ones, each card's int looked up first.


def _five_tiebreak_from_strings(ints: IntEvaluator) -> Evaluator:
    """Five card strings, suits breaking ties: encoded, then the int evaluator's answer."""
    enc = ENCODED

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


def _five_from_strings(ace_low: bool) -> Evaluator:
    """Five card strings: as ``_five_from_codes``, each card encoded on the way."""
    flushes, others = five_tables(ace_low)
    suit_bits, shift = SUIT_BITS, PRIME_SHIFT
    enc = ENCODED

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


def _small_tiebreak_from_strings(n_cards: int, by_bits: dict[int, int]) -> Evaluator:
    """Two or three card strings, suits breaking ties: as ``_small_tiebreak_from_codes``."""
    bit = BIT_OF_CARD
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


def _small_from_strings(n_cards: int, table: list[int]) -> Evaluator:
    """Two or three card strings: as ``_small_from_codes``."""
    small = SMALL_OF_CARD  # the low 18 bits only: their sum needs no mask
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
    index = base >> CATEGORY_SHIFT
    names = CATEGORIES[n_cards]
    if strength < 0 or index >= len(names):
        raise ValueError(f"{strength} is not a {n_cards}-card hand strength")
    return names[index]
