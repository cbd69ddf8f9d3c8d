"""Wild cards (``wild: none | deuces | one_eyed_jacks``): a wild becomes whatever card makes the
best hand (for the low pot: the lowest), never a card already in the hand.

The main check is brute force: a reference that tries every card not otherwise in the hand for
each wild (all combinations for several wilds) and takes the max (min for low) of the base
evaluator, against ``make_wild_evaluator`` for every 2- and 3-card hand holding a wild and for
thousands of random 5-card hands.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterator, Sequence

import pytest

from service.rules.cards import FULL_DECK
from service.rules.errors import InvalidCard
from service.rules.ranking import category, encode, make_evaluator, make_int_evaluator
from service.rules.wild import WILD_CARDS, make_wild_evaluator

WILD_KINDS = ["deuces", "one_eyed_jacks"]
CODE = dict(zip(FULL_DECK, encode(FULL_DECK), strict=True))


# --- the brute-force reference -------------------------------------------------------------------


def substitutions(naturals: Sequence[str], k: int) -> Iterator[tuple[str, ...]]:
    """Every hand the wilds can make: the naturals plus any ``k`` distinct other cards."""
    rest = [card for card in FULL_DECK if card not in naturals]
    for chosen in itertools.combinations(rest, k):
        yield (*naturals, *chosen)


def brute_force(
    naturals: Sequence[str], k: int, evaluate: Callable[[Sequence[str]], int]
) -> tuple[int, int]:
    """(best, lowest) strength over every substitution."""
    values = [evaluate(hand) for hand in substitutions(naturals, k)]
    return max(values), min(values)


def split(hand: Sequence[str], wild: str) -> tuple[tuple[str, ...], int]:
    """(natural cards, number of wild cards)."""
    naturals = tuple(card for card in hand if card not in WILD_CARDS[wild])
    return naturals, len(hand) - len(naturals)


# --- the rule's cards and the "none" option ----------------------------------------------------


def test_wild_cards_are_deuces_or_one_eyed_jacks() -> None:
    assert WILD_CARDS == {
        "none": frozenset(),
        "deuces": frozenset({"2s", "2h", "2d", "2c"}),
        "one_eyed_jacks": frozenset({"Js", "Jh"}),
    }


@pytest.mark.parametrize(
    "n, options",
    [
        (2, {"straights_and_flushes": False}),
        (2, {"straights_and_flushes": False, "suit_tiebreak": True}),
        (3, {}),
        (3, {"straights_and_flushes": False}),
        (3, {"ace_low_straight": False, "suit_tiebreak": True}),
        (5, {}),
        (5, {"suit_tiebreak": True}),
    ],
)
def test_no_wilds_is_the_base_evaluator_itself(n: int, options: dict[str, bool]) -> None:
    # The same function object, so test_ranking's exhaustive counts hold unchanged.
    base = make_evaluator(n, **options)
    assert make_wild_evaluator(n, "none", **options) is base
    assert make_wild_evaluator(n, "none", low=True, **options) is base


def test_no_wilds_with_default_options_spelled_out_is_the_plain_call() -> None:
    # make_evaluator is cached by how it is called; "none" returns the plain call's object.
    spelled = {"straights_and_flushes": True, "ace_low_straight": True, "suit_tiebreak": False}
    assert make_wild_evaluator(3, "none", **spelled) is make_evaluator(3)
    assert make_wild_evaluator(5, "none", suit_tiebreak=True, low=True) is make_evaluator(
        5, suit_tiebreak=True
    )


def test_wild_evaluators_are_cached_per_option_combination() -> None:
    ev = make_wild_evaluator(3, "deuces")
    assert make_wild_evaluator(3, "deuces", straights_and_flushes=True, low=False) is ev
    assert make_wild_evaluator(3, "deuces", low=True) is not ev
    assert make_wild_evaluator(3, "one_eyed_jacks") is not ev
    # ace_low_straight means nothing without straights.
    assert make_wild_evaluator(
        3, "deuces", straights_and_flushes=False, ace_low_straight=False
    ) is make_wild_evaluator(3, "deuces", straights_and_flushes=False)


def test_unknown_wild_option_and_impossible_options_are_rejected() -> None:
    with pytest.raises(ValueError, match="wild"):
        make_wild_evaluator(3, "jokers")
    with pytest.raises(ValueError):
        make_wild_evaluator(2, "deuces")  # two-card hands have no straights or flushes
    with pytest.raises(ValueError):
        make_wild_evaluator(5, "deuces", straights_and_flushes=False)
    with pytest.raises(ValueError):
        make_wild_evaluator(4, "one_eyed_jacks", straights_and_flushes=False)


# --- brute force: every 2- and 3-card hand holding a wild --------------------------------------

SMALL_CASES = [
    (2, False, True),
    (3, True, True),
    (3, True, False),
    (3, False, True),
]


@pytest.mark.slow
@pytest.mark.parametrize("wild", WILD_KINDS)
@pytest.mark.parametrize("n, straights_and_flushes, ace_low", SMALL_CASES)
def test_every_small_hand_with_a_wild_matches_brute_force(
    wild: str, n: int, straights_and_flushes: bool, ace_low: bool
) -> None:
    options = {"straights_and_flushes": straights_and_flushes, "ace_low_straight": ace_low}
    bases = {tb: make_evaluator(n, suit_tiebreak=tb, **options) for tb in (False, True)}
    evaluators = {
        (tb, low): make_wild_evaluator(n, wild, suit_tiebreak=tb, low=low, **options)
        for tb in (False, True)
        for low in (False, True)
    }
    reference: dict[tuple[tuple[str, ...], int], dict[tuple[bool, bool], int]] = {}
    failures = []
    hands = 0
    for hand in itertools.combinations(FULL_DECK, n):
        naturals, k = split(hand, wild)
        if not k:
            continue
        hands += 1
        expected = reference.get((naturals, k))
        if expected is None:
            expected = {}
            for tb, base in bases.items():
                expected[tb, False], expected[tb, True] = brute_force(naturals, k, base)
            reference[naturals, k] = expected
        for key, evaluate in evaluators.items():
            if evaluate(hand) != expected[key]:
                failures.append((hand, key, evaluate(hand), expected[key]))
    assert not failures, failures[:5]
    wilds = len(WILD_CARDS[wild])
    assert hands == len(list(itertools.combinations(FULL_DECK, n))) - len(
        list(itertools.combinations(range(52 - wilds), n))
    )
    if n == 3:
        assert hands == {"deuces": 4804, "one_eyed_jacks": 2500}[wild]


# --- brute force: random 5-card hands ------------------------------------------------------------

# (wild, number of wilds, hands checked without suit tie-break, hands also checked with it).
# The brute force tries C(52 - 5 + k, k) substitutions: 47, 1,128, 18,424 and 230,300.
FIVE_CASES = [
    ("deuces", 1, 1500, 1500),
    ("deuces", 2, 150, 150),
    ("deuces", 3, 24, 24),
    ("deuces", 4, 12, 2),
    ("one_eyed_jacks", 1, 1500, 1500),
    ("one_eyed_jacks", 2, 150, 150),
]


@pytest.mark.slow
@pytest.mark.parametrize("wild, k, count, tiebreak_count", FIVE_CASES)
def test_random_five_card_hands_with_wilds_match_brute_force(
    wild: str, k: int, count: int, tiebreak_count: int
) -> None:
    rng = random.Random(f"wild-{wild}-{k}")
    wilds = sorted(WILD_CARDS[wild])
    pool = [card for card in FULL_DECK if card not in WILD_CARDS[wild]]
    failures = []
    for i in range(count):
        ace_low = rng.random() < 0.5
        naturals = rng.sample(pool, 5 - k)
        hand = naturals + rng.sample(wilds, k)
        rng.shuffle(hand)
        tiebreaks = (False, True) if i < tiebreak_count else (False,)
        rest = [CODE[card] for card in FULL_DECK if card not in naturals]
        natural_codes = tuple(CODE[card] for card in naturals)
        for tb in tiebreaks:
            # The int evaluator is the base evaluator on encoded cards (test_ranking checks that).
            base = make_int_evaluator(5, ace_low_straight=ace_low, suit_tiebreak=tb)
            hands = map(natural_codes.__add__, itertools.combinations(rest, k))
            values = list(map(base, hands))
            for low, expected in ((False, max(values)), (True, min(values))):
                evaluate = make_wild_evaluator(
                    5, wild, ace_low_straight=ace_low, suit_tiebreak=tb, low=low
                )
                if evaluate(hand) != expected:
                    failures.append((hand, ace_low, tb, low, evaluate(hand), expected))
    assert not failures, failures[:5]


def test_five_card_results_do_not_depend_on_card_order_or_memo() -> None:
    rng = random.Random(5)
    evaluators = [
        make_wild_evaluator(5, "deuces", suit_tiebreak=tb, low=low)
        for tb in (False, True)
        for low in (False, True)
    ]
    for _ in range(200):
        hand = rng.sample(FULL_DECK, 5)
        if WILD_CARDS["deuces"].isdisjoint(hand):
            hand[0] = rng.choice(sorted(WILD_CARDS["deuces"] - set(hand)))
        for evaluate in evaluators:
            first = evaluate(hand)
            assert evaluate(hand[::-1]) == first
            assert evaluate(tuple(sorted(hand))) == first


@pytest.mark.parametrize("wild", WILD_KINDS)
@pytest.mark.parametrize("n", [2, 3, 5])
def test_hands_without_wilds_score_as_the_base_evaluator(wild: str, n: int) -> None:
    rng = random.Random(n)
    pool = [card for card in FULL_DECK if card not in WILD_CARDS[wild]]
    hands = [rng.sample(pool, n) for _ in range(500)]
    for tb in (False, True):
        options = {"straights_and_flushes": n != 2, "suit_tiebreak": tb}
        base = make_evaluator(n, **options)
        for low in (False, True):
            evaluate = make_wild_evaluator(n, wild, low=low, **options)
            assert [evaluate(hand) for hand in hands] == [base(hand) for hand in hands]


# --- worked examples ----------------------------------------------------------------------------

THREE = make_evaluator(3)
THREE_TB = make_evaluator(3, suit_tiebreak=True)
THREE_PLAIN = make_evaluator(3, straights_and_flushes=False)
FIVE = make_evaluator(5)
FIVE_TB = make_evaluator(5, suit_tiebreak=True)


def test_ace_ace_wild_is_three_aces() -> None:
    evaluate = make_wild_evaluator(3, "deuces")
    strength = evaluate(["As", "Ad", "2c"])
    assert strength == THREE(["As", "Ad", "Ah"])
    assert category(3, strength) == "three_of_a_kind"
    # With suit tie-break the wild is the best ace left: hearts.
    tiebreak = make_wild_evaluator(3, "deuces", suit_tiebreak=True)
    assert tiebreak(["As", "Ad", "2c"]) == THREE_TB(["As", "Ah", "Ad"])


def test_wild_turns_king_queen_into_the_ace_high_straight() -> None:
    evaluate = make_wild_evaluator(3, "deuces")
    strength = evaluate(["Kd", "Qh", "2s"])
    assert strength == THREE(["As", "Kd", "Qh"])
    assert category(3, strength) == "straight"
    assert strength > THREE(["Kd", "Qh", "Ks"])  # better than pairing the king
    # Suited, the same wild makes the ace-high straight flush.
    assert evaluate(["Kd", "Qd", "2s"]) == THREE(["Ad", "Kd", "Qd"])
    # Without straights the best is a pair of kings with an ace.
    plain = make_wild_evaluator(3, "deuces", straights_and_flushes=False)
    assert plain(["Kd", "Qh", "2s"]) == THREE_PLAIN(["Kd", "Ks", "Qh"])


def test_two_wilds_and_an_ace_make_the_ace_high_straight_flush() -> None:
    # In 3-card Guts a straight flush beats three of a kind, so two wilds with the As become
    # Ks Qs (not two more aces).
    evaluate = make_wild_evaluator(3, "deuces")
    strength = evaluate(["2h", "As", "2c"])
    assert strength == THREE(["As", "Ks", "Qs"])
    assert category(3, strength) == "straight_flush"
    assert strength > THREE(["As", "Ah", "Ad"])
    # Without straights and flushes the same cards are three aces.
    plain = make_wild_evaluator(3, "deuces", straights_and_flushes=False)
    assert plain(["2h", "As", "2c"]) == THREE_PLAIN(["As", "Ah", "Ad"])
    # One-eyed jacks with a natural jack: K-Q-J of the jack's suit.
    jacks = make_wild_evaluator(3, "one_eyed_jacks")
    assert jacks(["Js", "Jh", "Jd"]) == THREE(["Kd", "Qd", "Jd"])


def test_three_wilds_are_the_best_three_card_hand() -> None:
    evaluate = make_wild_evaluator(3, "deuces", suit_tiebreak=True)
    assert evaluate(["2s", "2h", "2d"]) == THREE_TB(["As", "Ks", "Qs"])
    plain = make_wild_evaluator(3, "deuces", straights_and_flushes=False, suit_tiebreak=True)
    assert plain(["2s", "2h", "2d"]) == make_evaluator(
        3, straights_and_flushes=False, suit_tiebreak=True
    )(["As", "Ah", "Ad"])


def test_two_card_wilds_pair_the_other_card() -> None:
    evaluate = make_wild_evaluator(2, "deuces", straights_and_flushes=False)
    two = make_evaluator(2, straights_and_flushes=False)
    assert evaluate(["7c", "2d"]) == two(["7c", "7s"])
    assert evaluate(["2c", "2d"]) == two(["As", "Ah"])


def test_four_deuces_and_an_ace_are_a_royal_flush_not_five_aces() -> None:
    evaluate = make_wild_evaluator(5, "deuces")
    strength = evaluate(["2s", "2h", "As", "2d", "2c"])
    assert strength == FIVE(["As", "Ks", "Qs", "Js", "Ts"])
    assert category(5, strength) == "straight_flush"
    assert evaluate(["2s", "2h", "Ah", "2d", "2c"]) == FIVE(["Ah", "Kh", "Qh", "Jh", "Th"])
    # With a three the best straight flush holding it is 7-high.
    assert evaluate(["2s", "2h", "3c", "2d", "2c"]) == FIVE(["7c", "6c", "5c", "4c", "3c"])


def test_four_aces_and_a_wild_take_the_best_kicker() -> None:
    evaluate = make_wild_evaluator(5, "deuces")
    strength = evaluate(["As", "Ah", "Ad", "Ac", "2c"])
    assert strength == FIVE(["As", "Ah", "Ad", "Ac", "Kd"])
    assert category(5, strength) == "four_of_a_kind"


def test_five_card_wilds_fill_a_straight_flush() -> None:
    evaluate = make_wild_evaluator(5, "one_eyed_jacks", suit_tiebreak=True)
    # 9-T-K of diamonds and two wilds: K-Q-J-T-9 (A-K-Q-J-T would need a third wild).
    assert evaluate(["9d", "Jh", "Td", "Js", "Kd"]) == FIVE_TB(["Kd", "Qd", "Jd", "Td", "9d"])
    # The wild Jh may play as the very card it is: the Jh of a heart straight flush.
    assert evaluate(["9h", "Th", "Qh", "Kh", "Jh"]) == FIVE_TB(["Kh", "Qh", "Jh", "Th", "9h"])
    assert evaluate(["Ah", "Th", "Qh", "Kh", "Jh"]) == FIVE_TB(["Ah", "Kh", "Qh", "Jh", "Th"])


def test_low_hand_wild_becomes_the_card_making_the_lowest_hand() -> None:
    # Straights on: 4-3-2 and 5-4-3 are straights, A-4-3 is ace high, so 6-4-3 is the lowest.
    low = make_wild_evaluator(3, "deuces", low=True)
    strength = low(["3c", "4d", "2s"])
    assert strength == THREE(["6h", "4d", "3c"])
    assert category(3, strength) == "high_card"
    # Without straights the wild plays as a deuce: 4-3-2, the lowest hand there is.
    plain_low = make_wild_evaluator(3, "deuces", straights_and_flushes=False, low=True)
    assert plain_low(["3c", "4d", "2s"]) == THREE_PLAIN(["4d", "3c", "2h"])
    # A low hand avoids the flush: the deuce is not a heart.
    assert low(["3h", "5h", "2h"]) == THREE(["5h", "3h", "2c"])
    # When a pair is unavoidable, the lowest kicker.
    assert low(["Ks", "Kd", "2h"]) == THREE(["Ks", "Kd", "2c"])
    # And the lowest hand is lower than the hand the wild makes for the high pot.
    assert low(["3c", "4d", "2s"]) < make_wild_evaluator(3, "deuces")(["3c", "4d", "2s"])


def test_five_card_low_hand_with_wilds() -> None:
    low = make_wild_evaluator(5, "deuces", low=True)
    assert low(["Kh", "9d", "5c", "3s", "2h"]) == FIVE(["Kh", "9d", "5c", "3s", "2d"])
    assert low(["7d", "5c", "4h", "2s", "2c"]) == FIVE(["7d", "5c", "4h", "3s", "2d"])
    # With suit tie-break the lowest suits: one wild deuce plays as the 2c, the other as the 3c.
    low_tb = make_wild_evaluator(5, "deuces", low=True, suit_tiebreak=True)
    assert low_tb(["7d", "5c", "4h", "2s", "2c"]) == FIVE_TB(["7d", "5c", "4h", "3c", "2c"])


# --- bad input ----------------------------------------------------------------------------------

BAD_HANDS = {
    3: [["2s", "2s", "As"], ["2s", "As"], ["2s", "As", "Kd", "Qd"], ["2s", "As", "Xx"], None],
    5: [
        ["2s", "2s", "As", "Ks", "Qs"],
        ["2s", "As", "Ks", "Qs"],
        ["2s", "As", "Ks", "Qs", "Js", "Ts"],
        ["2s", "As", "Ks", "Qs", "1s"],
        ["As", "As", "Ks", "Qs", "Js"],
        [["2s"], "As", "Ks", "Qs", "Js"],
        None,
    ],
}


@pytest.mark.parametrize("n", [3, 5])
@pytest.mark.parametrize("suit_tiebreak", [False, True])
def test_bad_hands_raise_invalid_card(n: int, suit_tiebreak: bool) -> None:
    evaluate = make_wild_evaluator(n, "deuces", suit_tiebreak=suit_tiebreak)
    for hand in BAD_HANDS[n]:
        with pytest.raises(InvalidCard):
            evaluate(hand)  # type: ignore[arg-type]
    two = make_wild_evaluator(2, "deuces", straights_and_flushes=False)
    for hand in (["2s", "2s"], ["2s"], ["2s", "Ah", "Kd"], ["2s", "Zz"]):
        with pytest.raises(InvalidCard):
            two(hand)
