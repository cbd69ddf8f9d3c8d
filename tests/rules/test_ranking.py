"""Hand ranking: exhaustive category counts, worked examples, suit tie-breaks, and cross-checks
against treys (5 cards) and a slow reference ranker written here (3 cards)."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Callable, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.rules import ranking_tables
from service.rules.cards import FULL_DECK
from service.rules.errors import InvalidCard
from service.rules.ranking import (
    CATEGORIES,
    category,
    encode,
    low_strength,
    make_evaluator,
    make_int_evaluator,
)

# --- a slow, obviously-correct reference ranker --------------------------------------------------

VALUE = {rank: value for value, rank in enumerate("23456789TJQKA", start=2)}  # deuce 2 .. ace 14
SUIT_VALUE = {"s": 3, "h": 2, "d": 1, "c": 0}

THREE_CARD_ORDER = ["high_card", "pair", "flush", "straight", "three_of_a_kind", "straight_flush"]


def reference_three(
    hand: Sequence[str], straights_and_flushes: bool = True, ace_low: bool = True
) -> tuple[str, tuple[int, ...]]:
    """(category, tie-break values) of a 3-card hand, by the rules as written."""
    values = sorted((VALUE[card[0]] for card in hand), reverse=True)
    counts = Counter(values)
    flush = straights_and_flushes and len({card[1] for card in hand}) == 1
    straight_top = None
    if straights_and_flushes and len(counts) == 3:
        if values[0] - values[2] == 2:
            straight_top = values[0]
        elif ace_low and values == [14, 3, 2]:
            straight_top = 3  # A-2-3 plays as 3-2-1
    if straight_top is not None and flush:
        return "straight_flush", (straight_top,)
    if len(counts) == 1:
        return "three_of_a_kind", (values[0],)
    if straight_top is not None:
        return "straight", (straight_top,)
    if flush:
        return "flush", tuple(values)
    if len(counts) == 2:
        pair = max(counts, key=counts.__getitem__)
        kicker = min(counts, key=counts.__getitem__)
        return "pair", (pair, kicker)
    return "high_card", tuple(values)


def reference_key(
    hand: Sequence[str], straights_and_flushes: bool, ace_low: bool, suit_tiebreak: bool
) -> tuple[object, ...]:
    name, tiebreak = reference_three(hand, straights_and_flushes, ace_low)
    key: tuple[object, ...] = (THREE_CARD_ORDER.index(name), tiebreak)
    if suit_tiebreak:
        ordered = sorted(hand, key=lambda c: (VALUE[c[0]], SUIT_VALUE[c[1]]), reverse=True)
        key += (tuple(SUIT_VALUE[c[1]] for c in ordered),)
    return key


def sign(x: float) -> int:
    return (x > 0) - (x < 0)


def all_hands(n: int) -> list[tuple[str, ...]]:
    return list(itertools.combinations(FULL_DECK, n))


def category_counts(
    n: int, evaluate: Callable[[Sequence[int]], int], **options: bool
) -> Counter[str]:
    strengths = Counter(map(evaluate, itertools.combinations(encode(FULL_DECK), n)))
    names: Counter[str] = Counter()
    for strength, count in strengths.items():
        names[category(n, strength, options.get("suit_tiebreak", False))] += count
    return names


def distinct(n: int, evaluate: Callable[[Sequence[int]], int]) -> int:
    return len(set(map(evaluate, itertools.combinations(encode(FULL_DECK), n))))


# --- options ------------------------------------------------------------------------------------


def test_two_card_hands_cannot_have_straights_and_flushes() -> None:
    with pytest.raises(ValueError):
        make_evaluator(2, straights_and_flushes=True)
    with pytest.raises(ValueError):
        make_int_evaluator(2, straights_and_flushes=True)


def test_five_card_hands_always_have_straights_and_flushes() -> None:
    with pytest.raises(ValueError):
        make_evaluator(5, straights_and_flushes=False)


@pytest.mark.parametrize("n", [0, 1, 4, 6, 7])
def test_only_two_three_and_five_card_hands(n: int) -> None:
    with pytest.raises(ValueError):
        make_evaluator(n, straights_and_flushes=False)
    with pytest.raises(ValueError):
        category(n, 0)


def test_evaluators_are_cached_per_option_combination() -> None:
    assert make_evaluator(3) is make_evaluator(3)
    assert make_evaluator(3, suit_tiebreak=True) is not make_evaluator(3)


# --- two cards ----------------------------------------------------------------------------------

TWO = make_evaluator(2, straights_and_flushes=False)


def test_two_card_counts_and_classes() -> None:
    ev = make_int_evaluator(2, straights_and_flushes=False)
    assert category_counts(2, ev) == {"pair": 78, "high_card": 1248}
    assert distinct(2, ev) == 91  # 13 pairs + 78 rank combinations


def test_two_card_any_pair_beats_any_non_pair() -> None:
    strengths = {hand: TWO(hand) for hand in all_hands(2)}
    pairs = [s for hand, s in strengths.items() if hand[0][0] == hand[1][0]]
    others = [s for hand, s in strengths.items() if hand[0][0] != hand[1][0]]
    assert min(pairs) > max(others)


def test_two_card_higher_pair_beats_lower_pair() -> None:
    assert TWO(["As", "Ad"]) > TWO(["Ks", "Kh"]) > TWO(["3c", "3d"]) > TWO(["2s", "2h"])


def test_two_card_higher_top_card_then_second_card() -> None:
    assert TWO(["As", "3d"]) > TWO(["Ks", "Qh"])
    assert TWO(["Ks", "Jh"]) > TWO(["Kd", "Tc"])
    assert TWO(["Ks", "Jh"]) == TWO(["Kd", "Jc"])  # suits do not matter without tie-break


def test_two_card_aces_best_and_three_two_worst() -> None:
    strengths = [TWO(hand) for hand in all_hands(2)]
    assert TWO(["As", "Ah"]) == max(strengths)
    assert TWO(["3s", "2h"]) == min(strengths)


def test_two_card_strength_is_independent_of_card_order() -> None:
    assert TWO(["Qs", "7h"]) == TWO(["7h", "Qs"])


# --- three cards --------------------------------------------------------------------------------

THREE = make_evaluator(3)


def test_three_card_category_counts() -> None:
    assert category_counts(3, make_int_evaluator(3)) == {
        "straight_flush": 48,
        "three_of_a_kind": 52,
        "straight": 720,
        "flush": 1096,
        "pair": 3744,
        "high_card": 16440,
    }
    assert distinct(3, make_int_evaluator(3)) == 741


def test_three_card_without_straights_and_flushes_counts() -> None:
    ev = make_int_evaluator(3, straights_and_flushes=False)
    assert category_counts(3, ev) == {
        "three_of_a_kind": 52,
        "pair": 3744,
        "high_card": 22100 - 52 - 3744,
    }
    assert distinct(3, ev) == 455


def test_three_card_without_ace_low_straight_counts() -> None:
    # A-2-3 stops being a straight: 11 straight rank runs instead of 12, so 11 x 4 straight
    # flushes, 11 x 60 straights; the 4 suited A-2-3 become flushes and the 60 others high cards.
    ev = make_int_evaluator(3, ace_low_straight=False)
    counts = category_counts(3, ev)
    assert counts == {
        "straight_flush": 44,
        "three_of_a_kind": 52,
        "straight": 660,
        "flush": 1100,
        "pair": 3744,
        "high_card": 16500,
    }
    # ... and that is exactly what brute force with the reference ranker says.
    brute = Counter(reference_three(hand, ace_low=False)[0] for hand in all_hands(3))
    assert counts == brute
    assert distinct(3, ev) == 741


@pytest.mark.parametrize(
    ("straights_and_flushes", "ace_low"), [(True, True), (True, False), (False, True)]
)
def test_three_card_counts_agree_with_brute_force(
    straights_and_flushes: bool, ace_low: bool
) -> None:
    ev = make_int_evaluator(
        3, straights_and_flushes=straights_and_flushes, ace_low_straight=ace_low
    )
    brute = Counter(reference_three(h, straights_and_flushes, ace_low)[0] for h in all_hands(3))
    assert category_counts(3, ev) == brute


def test_three_card_straight_beats_flush() -> None:
    assert THREE(["4s", "5h", "6d"]) > THREE(["As", "Ks", "Js"])
    assert category(3, THREE(["4s", "5h", "6d"])) == "straight"
    assert category(3, THREE(["As", "Ks", "Js"])) == "flush"


def test_three_card_trips_beat_straight_and_straight_flush_beats_trips() -> None:
    assert THREE(["2s", "2h", "2d"]) > THREE(["As", "Kh", "Qd"])
    assert THREE(["2s", "3s", "4s"]) > THREE(["As", "Ah", "Ad"])


def test_three_card_flush_beats_pair_beats_high_card() -> None:
    assert THREE(["2s", "3s", "5s"]) > THREE(["As", "Ah", "Kd"])
    assert THREE(["2s", "2h", "3d"]) > THREE(["As", "Kh", "Jd"])


def test_three_card_ace_king_queen_is_highest_straight() -> None:
    straights = [THREE(h) for h in all_hands(3) if category(3, THREE(h)) == "straight"]
    assert THREE(["As", "Kh", "Qd"]) == max(straights)
    assert THREE(["As", "Ks", "Qs"]) == max(THREE(h) for h in all_hands(3))


def test_ace_low_straight_is_lowest_straight() -> None:
    a23 = THREE(["As", "2h", "3d"])
    assert category(3, a23) == "straight"
    assert a23 < THREE(["2s", "3h", "4d"])
    straights = [THREE(h) for h in all_hands(3) if category(3, THREE(h)) == "straight"]
    assert a23 == min(straights)
    assert a23 > THREE(["As", "Ks", "Js"])  # still a straight, so above every flush
    assert category(3, THREE(["As", "2s", "3s"])) == "straight_flush"
    assert THREE(["As", "2s", "3s"]) < THREE(["2h", "3h", "4h"])


def test_without_ace_low_a23_is_ace_high() -> None:
    ev = make_evaluator(3, ace_low_straight=False)
    assert category(3, ev(["As", "2h", "3d"])) == "high_card"
    assert ev(["As", "2h", "3d"]) > ev(["Ks", "Qh", "9d"])  # ace high beats king high
    assert ev(["As", "2h", "3d"]) < ev(["2s", "2h", "3d"])
    assert category(3, ev(["As", "2s", "3s"])) == "flush"
    assert category(3, ev(["As", "Ks", "Qs"])) == "straight_flush"


def test_without_straights_and_flushes_suited_runs_are_high_cards() -> None:
    ev = make_evaluator(3, straights_and_flushes=False)
    assert category(3, ev(["As", "Ks", "Qs"])) == "high_card"
    assert ev(["2s", "2h", "3d"]) > ev(["As", "Ks", "Qs"])
    assert ev(["As", "Ks", "Qs"]) == ev(["Ad", "Kh", "Qc"])
    assert ev(["2s", "2h", "2d"]) > ev(["As", "Ah", "Kd"])


def test_three_card_pair_compares_pair_then_kicker() -> None:
    assert THREE(["Ks", "Kh", "2d"]) > THREE(["Qs", "Qh", "Ad"])
    assert THREE(["Ks", "Kh", "3d"]) > THREE(["Kd", "Kc", "2s"])
    assert THREE(["Ks", "Kh", "3d"]) == THREE(["Kd", "Kc", "3s"])


def test_three_card_strength_is_independent_of_card_order() -> None:
    for hand in [("As", "2h", "3d"), ("Ks", "Kh", "2d"), ("9c", "Td", "Jc")]:
        assert len({THREE(p) for p in itertools.permutations(hand)}) == 1


@settings(max_examples=400, deadline=None)
@given(
    first=st.lists(st.sampled_from(FULL_DECK), min_size=3, max_size=3, unique=True),
    second=st.lists(st.sampled_from(FULL_DECK), min_size=3, max_size=3, unique=True),
    straights_and_flushes=st.booleans(),
    ace_low=st.booleans(),
    suit_tiebreak=st.booleans(),
)
def test_three_card_order_agrees_with_reference_ranker(
    first: list[str],
    second: list[str],
    straights_and_flushes: bool,
    ace_low: bool,
    suit_tiebreak: bool,
) -> None:
    options = {
        "straights_and_flushes": straights_and_flushes,
        "ace_low_straight": ace_low,
        "suit_tiebreak": suit_tiebreak,
    }
    ev = make_evaluator(3, **options)
    int_ev = make_int_evaluator(3, **options)
    ref_first = reference_key(first, straights_and_flushes, ace_low, suit_tiebreak)
    ref_second = reference_key(second, straights_and_flushes, ace_low, suit_tiebreak)
    expected = (ref_first > ref_second) - (ref_first < ref_second)
    assert sign(ev(first) - ev(second)) == expected
    assert ev(first) == int_ev(encode(first))
    expected_name = reference_three(first, straights_and_flushes, ace_low)[0]
    assert category(3, ev(first), suit_tiebreak) == expected_name


# --- five cards ---------------------------------------------------------------------------------

FIVE = make_evaluator(5)


@pytest.mark.slow
def test_five_card_category_counts_over_all_hands() -> None:
    ev = make_int_evaluator(5)
    strengths = Counter(map(ev, itertools.combinations(encode(FULL_DECK), 5)))
    assert sum(strengths.values()) == 2_598_960
    assert len(strengths) == 7462
    counts: Counter[str] = Counter()
    for strength, count in strengths.items():
        counts[category(5, strength)] += count
    assert counts == {
        "straight_flush": 40,
        "four_of_a_kind": 624,
        "full_house": 3744,
        "flush": 5108,
        "straight": 10200,
        "three_of_a_kind": 54912,
        "two_pair": 123552,
        "pair": 1098240,
        "high_card": 1302540,
    }


@pytest.mark.slow
def test_five_card_without_ace_low_the_wheel_is_not_a_straight() -> None:
    # The 10 wheel rank runs drop out: 4 suited ones become flushes, 1,020 others high cards.
    ev = make_int_evaluator(5, ace_low_straight=False)
    counts = category_counts(5, ev)
    assert counts["straight_flush"] == 36
    assert counts["straight"] == 9180
    assert counts["flush"] == 5112
    assert counts["high_card"] == 1302540 + 1020
    assert counts["four_of_a_kind"] == 624


def test_five_card_category_order() -> None:
    hands = [
        ["2s", "3d", "4h", "5c", "7s"],  # high card
        ["2s", "2d", "4h", "5c", "7s"],  # pair
        ["2s", "2d", "4h", "4c", "7s"],  # two pair
        ["2s", "2d", "2h", "5c", "7s"],  # three of a kind
        ["As", "2d", "3h", "4c", "5s"],  # straight (the wheel)
        ["2s", "3s", "4s", "5s", "7s"],  # flush
        ["2s", "2d", "2h", "5c", "5s"],  # full house
        ["2s", "2d", "2h", "2c", "7s"],  # four of a kind
        ["As", "2s", "3s", "4s", "5s"],  # straight flush (steel wheel)
    ]
    strengths = [FIVE(h) for h in hands]
    assert strengths == sorted(strengths)
    assert len(set(strengths)) == len(strengths)
    assert [category(5, s) for s in strengths] == list(CATEGORIES[5])


def test_five_card_wheel_is_lowest_straight() -> None:
    wheel = FIVE(["As", "2d", "3h", "4c", "5s"])
    assert category(5, wheel) == "straight"
    assert wheel < FIVE(["2s", "3d", "4h", "5c", "6s"])
    assert wheel > FIVE(["As", "Ad", "Ah", "Kc", "Qs"])  # above any three of a kind
    assert FIVE(["As", "Kd", "Qh", "Jc", "Ts"]) > FIVE(["Ks", "Qd", "Jh", "Tc", "9s"])


def test_five_card_royal_flush_is_best() -> None:
    royal = FIVE(["As", "Ks", "Qs", "Js", "Ts"])
    assert royal == FIVE(["Ah", "Kh", "Qh", "Jh", "Th"])
    assert royal > FIVE(["Ks", "Qs", "Js", "Ts", "9s"]) > FIVE(["As", "Ad", "Ah", "Ac", "Ks"])


def test_five_card_kickers() -> None:
    assert FIVE(["Ks", "Kd", "Qh", "Qc", "2s"]) > FIVE(["Ks", "Kd", "Jh", "Jc", "As"])
    assert FIVE(["Ks", "Kd", "Qh", "Qc", "3s"]) > FIVE(["Kh", "Kc", "Qs", "Qd", "2s"])
    assert FIVE(["3s", "3d", "3h", "2c", "2s"]) > FIVE(["2s", "2d", "2h", "Ac", "As"])
    assert FIVE(["As", "Qs", "9s", "5s", "3s"]) > FIVE(["Ah", "Qh", "9h", "5h", "2h"])


def test_five_card_order_agrees_with_treys() -> None:
    treys = pytest.importorskip("treys")
    evaluator = treys.Evaluator()
    rng = random.Random(20240601)
    hands = [rng.sample(FULL_DECK, 5) for _ in range(4000)]
    # Include every category's extremes so that the boundaries are checked too.
    hands += [
        ["As", "2d", "3h", "4c", "5s"],
        ["As", "Kd", "Qh", "Jc", "Ts"],
        ["As", "2s", "3s", "4s", "5s"],
        ["As", "Ks", "Qs", "Js", "Ts"],
        ["7s", "5d", "4h", "3c", "2s"],
        ["As", "Ad", "Ah", "Ac", "Ks"],
    ]
    ours = [FIVE(h) for h in hands]
    # treys: lower is better.
    theirs = [evaluator.evaluate([treys.Card.new(c) for c in h], []) for h in hands]
    pairs = sorted(zip(ours, theirs, strict=True))
    for (ours_a, theirs_a), (ours_b, theirs_b) in itertools.pairwise(pairs):
        assert (ours_a < ours_b) == (theirs_a > theirs_b)
        assert (ours_a == ours_b) == (theirs_a == theirs_b)
    for hand, strength in zip(hands, ours, strict=True):
        theirs_name = evaluator.class_to_string(
            evaluator.get_rank_class(evaluator.evaluate([treys.Card.new(c) for c in hand], []))
        )
        assert category(5, strength).replace("_", " ") == theirs_name.lower().replace(
            "royal flush", "straight flush"
        )


# --- suit tie-break -----------------------------------------------------------------------------


def test_suit_tiebreak_orders_spades_over_hearts() -> None:
    ev = make_evaluator(3, suit_tiebreak=True)
    assert ev(["As", "Kd", "9c"]) > ev(["Ah", "Kd", "9c"])
    assert ev(["Ah", "Kd", "9c"]) > ev(["Ad", "Kd", "9c"]) > ev(["Ac", "Kd", "9c"])


def test_suit_tiebreak_compares_from_the_highest_rank_down() -> None:
    ev = make_evaluator(3, suit_tiebreak=True)
    # The aces decide before the kings do.
    assert ev(["As", "Kc", "9c"]) > ev(["Ah", "Ks", "9s"])
    # Equal aces and kings: the nines decide.
    assert ev(["As", "Kh", "9d"]) > ev(["As", "Kh", "9c"])


def test_suit_tiebreak_puts_the_higher_suit_first_within_a_rank() -> None:
    ev = make_evaluator(3, suit_tiebreak=True)
    # Pair of aces: spade-club (s first) against heart-diamond (h first).
    assert ev(["As", "Ac", "5c"]) > ev(["Ah", "Ad", "5s"])
    two = make_evaluator(2, straights_and_flushes=False, suit_tiebreak=True)
    assert two(["As", "Ac"]) > two(["Ah", "Ad"])


def test_suit_tiebreak_counts_the_ace_first_in_ace_low_straights() -> None:
    ev = make_evaluator(3, suit_tiebreak=True)
    assert ev(["As", "2h", "3h"]) > ev(["Ah", "2s", "3s"])
    five = make_evaluator(5, suit_tiebreak=True)
    assert five(["As", "2h", "3h", "4h", "5h"]) > five(["Ah", "2s", "3s", "4s", "5s"])


def test_suit_tiebreak_never_overrides_the_hand_ranking() -> None:
    ev = make_evaluator(3, suit_tiebreak=True)
    assert ev(["Ac", "Kc", "Jd"]) > ev(["As", "Ks", "Th"])
    assert ev(["2c", "2d", "3c"]) > ev(["As", "Ks", "Jh"])


@pytest.mark.parametrize(("n", "straights_and_flushes"), [(2, False), (3, True), (3, False)])
def test_suit_tiebreak_only_identical_hands_tie(n: int, straights_and_flushes: bool) -> None:
    options = {"straights_and_flushes": straights_and_flushes}
    plain = make_int_evaluator(n, **options)
    broken = make_int_evaluator(n, suit_tiebreak=True, **options)
    hands = list(itertools.combinations(encode(FULL_DECK), n))
    strengths = [broken(h) for h in hands]
    assert len(set(strengths)) == len(hands)
    for hand, strength in zip(hands, strengths, strict=True):
        assert strength >> (2 * n) == plain(hand)
        assert category(n, strength, suit_tiebreak=True) == category(n, plain(hand))


def test_five_card_suit_tiebreak_keeps_order_and_breaks_ties() -> None:
    plain = make_evaluator(5)
    broken = make_evaluator(5, suit_tiebreak=True)
    rng = random.Random(7)
    hands = [tuple(rng.sample(FULL_DECK, 5)) for _ in range(3000)]
    by_strength = {broken(h): frozenset(h) for h in hands}
    assert len(by_strength) == len({frozenset(h) for h in hands})
    for h in hands:
        assert broken(h) >> 10 == plain(h)
    assert broken(["Ks", "Qs", "Js", "Ts", "9s"]) > broken(["Kh", "Qh", "Jh", "Th", "9h"])
    # Kings first, the higher suit of each rank first: spade-club beats heart-diamond.
    assert broken(["Ks", "Kc", "5h", "5d", "2d"]) > broken(["Kh", "Kd", "5s", "5c", "2s"])


# --- low pot, categories, encodings, bad input --------------------------------------------------


def test_low_strength_makes_the_lowest_hand_win() -> None:
    hands = [["As", "Ah"], ["3s", "2h"], ["Ks", "Qd"], ["3d", "2c"]]
    lows = [low_strength(TWO(h)) for h in hands]
    best = max(lows)
    assert [h for h, s in zip(hands, lows, strict=True) if s == best] == [
        ["3s", "2h"],
        ["3d", "2c"],
    ]
    assert low_strength(low_strength(12345)) == 12345


def test_category_rejects_impossible_strengths() -> None:
    with pytest.raises(ValueError):
        category(3, -1)
    with pytest.raises(ValueError):
        category(2, 2 << 20)
    with pytest.raises(ValueError):
        category(3, 6 << 20)


def test_int_evaluators_agree_with_string_evaluators() -> None:
    rng = random.Random(3)
    combos: list[tuple[int, dict[str, bool]]] = [
        (2, {"straights_and_flushes": False}),
        (2, {"straights_and_flushes": False, "suit_tiebreak": True}),
        (3, {}),
        (3, {"ace_low_straight": False}),
        (3, {"straights_and_flushes": False}),
        (3, {"suit_tiebreak": True}),
        (5, {}),
        (5, {"ace_low_straight": False}),
        (5, {"suit_tiebreak": True}),
    ]
    for n, options in combos:
        ev, int_ev = make_evaluator(n, **options), make_int_evaluator(n, **options)
        for _ in range(500):
            hand = rng.sample(FULL_DECK, n)
            assert ev(hand) == int_ev(encode(hand)) == ev(tuple(hand))


def test_small_codes_give_every_multiset_its_own_sum() -> None:
    # The 2/3-card tables rely on this: the sum of the small codes of two or three cards
    # identifies the multiset of ranks and the multiset of suits.
    for codes in (ranking_tables._RANK_CODE, ranking_tables._SUIT_CODE):
        for size in (2, 3):
            sums = [sum(m) for m in itertools.combinations_with_replacement(codes, size)]
            assert len(set(sums)) == len(sums)
    assert 3 * max(ranking_tables._SUIT_CODE) < ranking_tables._SUIT_FACTOR
    assert (
        3 * max(c & ranking_tables.SMALL_MASK for c in encode(FULL_DECK))
        <= ranking_tables.SMALL_MASK
    )
    assert max(encode(FULL_DECK)) < 1 << 30  # one CPython digit


@pytest.mark.parametrize("n", [2, 3, 5])
@pytest.mark.parametrize("suit_tiebreak", [False, True])
def test_evaluators_reject_bad_cards_and_wrong_counts(n: int, suit_tiebreak: bool) -> None:
    ev = make_evaluator(n, straights_and_flushes=n != 2, suit_tiebreak=suit_tiebreak)
    good = list(FULL_DECK[-n:])
    with pytest.raises(InvalidCard, match="'Xx'"):
        ev([*good[:-1], "Xx"])
    with pytest.raises(InvalidCard, match="exactly"):
        ev(good[:-1])
    with pytest.raises(InvalidCard, match="exactly"):
        ev([*good, "2c"])
    with pytest.raises(InvalidCard):
        ev(None)  # type: ignore[arg-type]
    int_ev = make_int_evaluator(n, straights_and_flushes=n != 2, suit_tiebreak=suit_tiebreak)
    with pytest.raises(InvalidCard):
        int_ev(encode(good)[:-1])


def test_encode_validates_cards() -> None:
    with pytest.raises(InvalidCard):
        encode(["As", "As"])
    with pytest.raises(InvalidCard):
        encode(["as"])
    assert len(set(encode(FULL_DECK))) == 52


def test_a_two_card_evaluator_needs_no_options():
    best = make_evaluator(2)
    assert best(["As", "Ad"]) > best(["As", "Kd"]) > best(["Qs", "Jd"])
    assert best(["Ks", "Kd"]) == make_evaluator(2, straights_and_flushes=False)(["Ks", "Kd"])
    with pytest.raises(ValueError, match="two-card"):
        make_evaluator(2, straights_and_flushes=True)
