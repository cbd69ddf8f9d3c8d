"""Hand names come from the rules: every class of every ranking (2, 3 and 5 cards, with and
without straights and flushes, the ace low or not, suit tie-break, wild cards, the low pot) is
named from the strength its evaluator gives."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest

from service.rules.cards import FULL_DECK
from service.rules.hand_names import name_hand, shown_hand_names
from service.rules.ranking import CATEGORIES, category, make_evaluator
from service.rules.ruleset import Ruleset
from service.rules.wild import make_wild_evaluator

# (n_cards, straights_and_flushes, ace_low_straight): every ranking the evaluators have.
RANKINGS = [(2, False, False), (3, True, True), (3, True, False), (3, False, True), (5, True, True)]
RANKINGS += [(5, True, False)]

# One hand per class and hand size, with its name.
EXAMPLES: dict[int, dict[str, tuple[tuple[str, ...], str]]] = {
    2: {
        "high_card": (("Ks", "9d"), "king high"),
        "pair": (("7s", "7d"), "pair of sevens"),
    },
    3: {
        "high_card": (("As", "9d", "4h"), "ace high"),
        "pair": (("Ts", "Td", "4h"), "pair of tens"),
        "flush": (("Qs", "9s", "4s"), "flush, queen high"),
        "straight": (("9s", "Td", "Jh"), "straight, jack high"),
        "three_of_a_kind": (("Ks", "Kd", "Kh"), "three of a kind, kings"),
        "straight_flush": (("4h", "5h", "6h"), "straight flush, six high"),
    },
    5: {
        "high_card": (("As", "9d", "4h", "3c", "7s"), "ace high"),
        "pair": (("6s", "6d", "4h", "3c", "Ts"), "pair of sixes"),
        "two_pair": (("Ks", "Kd", "4h", "4c", "Ts"), "two pair, kings and fours"),
        "three_of_a_kind": (("9s", "9d", "9h", "4c", "Ts"), "three of a kind, nines"),
        "straight": (("8s", "9d", "Th", "Jc", "Qs"), "straight, queen high"),
        "flush": (("Js", "9s", "4s", "3s", "7s"), "flush, jack high"),
        "full_house": (("Ks", "Kd", "Kh", "4c", "4s"), "full house, kings full of fours"),
        "four_of_a_kind": (("5s", "5d", "5h", "5c", "Ts"), "four of a kind, fives"),
        "straight_flush": (("8d", "9d", "Td", "Jd", "Qd"), "straight flush, queen high"),
    },
}


def _classes(n_cards: int, straights_and_flushes: bool) -> Sequence[str]:
    names = CATEGORIES[n_cards]
    if straights_and_flushes:
        return names
    return [n for n in names if n not in ("flush", "straight", "straight_flush")]


@pytest.mark.parametrize("suit_tiebreak", [False, True])
@pytest.mark.parametrize(("n_cards", "sf", "ace_low"), RANKINGS)
def test_every_class_of_every_ranking_is_named(
    n_cards: int, sf: bool, ace_low: bool, suit_tiebreak: bool
) -> None:
    evaluate = make_evaluator(
        n_cards, straights_and_flushes=sf, ace_low_straight=ace_low, suit_tiebreak=suit_tiebreak
    )
    classes = _classes(n_cards, sf)
    for name in classes:
        cards, text = EXAMPLES[n_cards][name]
        named = name_hand(n_cards, evaluate(cards), suit_tiebreak)
        assert (named.category, named.text) == (name, text)
        assert named.to_dict() == {"category": name, "ranks": list(named.ranks), "text": text}
    if not sf:
        # Without straights and flushes, those hands are named by what they still are.
        cards = ("Qs", "Js", "Ts")[:n_cards]
        assert name_hand(n_cards, evaluate(cards), suit_tiebreak).text == "queen high"


@pytest.mark.parametrize(("n_cards", "sf", "ace_low"), [r for r in RANKINGS if r[0] < 5])
def test_every_small_hand_is_named_as_its_category(n_cards: int, sf: bool, ace_low: bool) -> None:
    evaluate = make_evaluator(n_cards, straights_and_flushes=sf, ace_low_straight=ace_low)
    seen = set()
    for cards in itertools.combinations(FULL_DECK, n_cards):
        strength = evaluate(cards)
        named = name_hand(n_cards, strength)
        assert named.category == category(n_cards, strength)
        # The ranks that name a hand are ranks it holds.
        assert set(named.ranks) <= {card[0] for card in cards}
        seen.add(named.category)
    assert seen == set(_classes(n_cards, sf))


@pytest.mark.parametrize(
    ("cards", "ace_low", "text"),
    [
        (("As", "2d", "3h"), True, "straight, three high"),
        (("As", "2d", "3h"), False, "ace high"),
        (("As", "Kd", "Qh"), True, "straight, ace high"),
    ],
)
def test_three_card_straights_name_their_top_card(
    cards: tuple[str, ...], ace_low: bool, text: str
) -> None:
    evaluate = make_evaluator(3, ace_low_straight=ace_low)
    assert name_hand(3, evaluate(cards)).text == text


@pytest.mark.parametrize(
    ("cards", "ace_low", "text"),
    [
        (("As", "2d", "3h", "4c", "5s"), True, "straight, five high"),
        (("As", "2d", "3h", "4c", "5s"), False, "ace high"),
        (("Ah", "Kh", "Qh", "Jh", "Th"), True, "royal flush"),
        (("Ah", "2h", "3h", "4h", "5h"), True, "straight flush, five high"),
    ],
)
def test_five_card_straights_and_the_royal_flush(
    cards: tuple[str, ...], ace_low: bool, text: str
) -> None:
    evaluate = make_evaluator(5, ace_low_straight=ace_low)
    assert name_hand(5, evaluate(cards)).text == text


@pytest.mark.parametrize(
    ("n_cards", "wild", "cards", "high", "low"),
    [
        (2, "deuces", ("2s", "9d"), "pair of nines", "nine high"),
        (3, "deuces", ("2s", "Kd", "Kh"), "three of a kind, kings", "pair of kings"),
        (3, "one_eyed_jacks", ("Js", "Qh", "Kh"), "straight flush, ace high", "king high"),
        (5, "deuces", ("2c", "Ks", "Kd", "4h", "4c"), "full house, kings full of fours", ""),
    ],
)
def test_a_wild_hand_is_named_as_the_hand_it_plays_as(
    n_cards: int, wild: str, cards: tuple[str, ...], high: str, low: str
) -> None:
    sf = n_cards != 2
    best = make_wild_evaluator(n_cards, wild, straights_and_flushes=sf)
    assert name_hand(n_cards, best(cards)).text == high
    if low:
        lowest = make_wild_evaluator(n_cards, wild, straights_and_flushes=sf, low=True)
        assert name_hand(n_cards, lowest(cards)).text == low


def test_a_strength_no_evaluator_makes_is_refused() -> None:
    with pytest.raises(ValueError, match="not a 3-card hand strength"):
        name_hand(3, 99 << 20)
    with pytest.raises(ValueError, match="n_cards"):
        name_hand(4, 0)


def test_shown_hands_are_named_with_the_community_card_and_the_low_pot() -> None:
    rules = Ruleset(hi_lo=True, community_cards=1)
    shown = {0: ("7s", "7d", "2c"), 1: ("As", "Kd", "9h")}
    names = shown_hand_names(rules, shown, community=("7h",), low_seats=(1,))
    assert names["0"] == {
        "high": {"category": "three_of_a_kind", "ranks": ["7"], "text": "three of a kind, sevens"}
    }
    assert names["1"]["high"]["text"] == "ace high"
    # The lowest three of its cards and the community card: K-9-7.
    assert names["1"]["low"]["text"] == "king high"
