"""Cards: strict parsing, and the seeded shuffle checked against an independent reimplementation
and for uniformity."""

from __future__ import annotations

import hashlib
import hmac
import math
from collections import Counter
from collections.abc import Callable
from statistics import NormalDist

import pytest

from service.rules import cards
from service.rules.cards import (
    FULL_DECK,
    RANKS,
    SUITS,
    deck_context,
    parse_card,
    parse_cards,
    seed_commitment,
    shuffled_deck,
)
from service.rules.errors import InvalidCard

# --- the deck and parsing -----------------------------------------------------------------------


def test_full_deck_is_52_distinct_cards_in_rank_then_suit_order() -> None:
    assert RANKS == "23456789TJQKA"
    assert SUITS == "shdc"
    assert len(FULL_DECK) == 52
    assert len(set(FULL_DECK)) == 52
    assert FULL_DECK[:5] == ("2s", "2h", "2d", "2c", "3s")
    assert FULL_DECK[-1] == "Ac"


@pytest.mark.parametrize("card", FULL_DECK)
def test_parse_card_accepts_every_card(card: str) -> None:
    assert parse_card(card) == card


@pytest.mark.parametrize(
    "text", ["1s", "AS", "as", "Ax", "", "A", "Ass", "10s", "Ts ", " Ts", "A♠", "sA", "XX"]
)
def test_parse_card_rejects_bad_text_and_names_it(text: str) -> None:
    with pytest.raises(InvalidCard) as info:
        parse_card(text)
    assert repr(text) in info.value.detail


@pytest.mark.parametrize("value", [None, 5, b"As", ("A", "s")])
def test_parse_card_rejects_non_strings(value: object) -> None:
    with pytest.raises(InvalidCard):
        parse_card(value)  # type: ignore[arg-type]


def test_parse_card_attaches_the_field() -> None:
    with pytest.raises(InvalidCard) as info:
        parse_card("Zz", field="cards.0")
    assert info.value.field == "cards.0"


def test_parse_cards_returns_a_tuple_in_order() -> None:
    assert parse_cards(["As", "Td", "2c"]) == ("As", "Td", "2c")
    assert parse_cards(iter(["Kh"])) == ("Kh",)
    assert parse_cards([]) == ()


def test_parse_cards_rejects_a_duplicate_and_names_it() -> None:
    with pytest.raises(InvalidCard) as info:
        parse_cards(["As", "Kd", "As"], field="hand")
    assert "'As'" in info.value.detail
    assert "duplicate" in info.value.detail
    assert info.value.field == "hand"


@pytest.mark.parametrize("bad", [["As", "AS"], ["As", "1s"], ["Ass"], ["", "Kd"]])
def test_parse_cards_rejects_any_bad_card(bad: list[str]) -> None:
    with pytest.raises(InvalidCard):
        parse_cards(bad)


@pytest.mark.parametrize("value", ["AsKd", b"AsKd", None, 7])
def test_parse_cards_rejects_a_bare_string_or_non_iterable(value: object) -> None:
    with pytest.raises(InvalidCard):
        parse_cards(value)  # type: ignore[arg-type]


# --- an independent reimplementation of the documented shuffle ----------------------------------


def _standard_limit(m: int) -> int:
    # The largest multiple of m that is at most 2**32.
    return (2**32 // m) * m


def reference_shuffle(
    seed: bytes, context: bytes, limit: Callable[[int], int] = _standard_limit
) -> list[str]:
    """Straight from the docstring: HMAC blocks -> bytes -> uint32 words -> Fisher-Yates."""
    stream = b""
    position = 0
    counter = 0

    def next_word() -> int:
        nonlocal stream, position, counter
        while len(stream) < position + 4:
            message = context + b"|" + counter.to_bytes(8, "big")
            stream += hmac.new(seed, message, "sha256").digest()
            counter += 1
        word = int.from_bytes(stream[position : position + 4], "big")
        position += 4
        return word

    deck = [rank + suit for rank in "23456789TJQKA" for suit in "shdc"]
    for i in range(51, 0, -1):
        m = i + 1
        while True:
            value = next_word()
            if value < limit(m):
                break
        j = value % m
        deck[i], deck[j] = deck[j], deck[i]
    return deck


def test_golden_vector_matches_the_reference_implementation() -> None:
    seed, context = b"\x00" * 32, b"guts-v1|t|1|"
    golden = reference_shuffle(seed, context)[:5]
    assert shuffled_deck(seed, context)[:5] == golden
    assert deck_context("t", 1) == context


@pytest.mark.parametrize(
    ("seed", "context"),
    [
        (b"\x00" * 32, b""),
        (b"", b"empty seed"),
        (b"k", b"guts-v1|table-9|12|alice"),
        (b"\xff" * 64, b"block-sized key"),
        (bytes(range(200)), b"key longer than a SHA-256 block is hashed first"),
        (hashlib.sha256(b"x").digest(), "unicode context ♠".encode()),
    ],
)
def test_whole_deck_matches_the_reference_implementation(seed: bytes, context: bytes) -> None:
    assert shuffled_deck(seed, context) == reference_shuffle(seed, context)


def test_rejection_path_matches_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    # Real rejections are about 1 deck in 7 million, so make them common: accept only words
    # below the largest multiple of m that is at most 2**31 (about half of all words). This
    # drives the slow path, including HMAC blocks beyond the first seven.
    def strict_limit(m: int) -> int:
        return (2**31 // m) * m

    strict_steps = tuple((i, i + 1, strict_limit(i + 1)) for i in range(51, 0, -1))
    monkeypatch.setattr(cards, "_STEPS", strict_steps)
    for n in range(20):
        seed = hashlib.sha256(b"reject %d" % n).digest()
        assert shuffled_deck(seed, b"ctx") == reference_shuffle(seed, b"ctx", strict_limit)


def test_shuffled_deck_is_a_permutation_of_the_full_deck() -> None:
    for n in range(50):
        deck = shuffled_deck(hashlib.sha256(b"%d" % n).digest(), b"perm")
        assert sorted(deck) == sorted(FULL_DECK)
        assert len(deck) == 52


def test_shuffled_deck_is_deterministic_for_a_seed_and_context() -> None:
    seed = b"same seed"
    assert shuffled_deck(seed, b"ctx") == shuffled_deck(seed, b"ctx")
    assert shuffled_deck(bytearray(seed), b"ctx") == shuffled_deck(seed, b"ctx")  # type: ignore[arg-type]
    assert shuffled_deck(seed) == shuffled_deck(seed, b"")


def test_shuffled_deck_differs_for_other_seeds_and_contexts() -> None:
    base = shuffled_deck(b"seed-a", b"ctx")
    assert shuffled_deck(b"seed-b", b"ctx") != base
    assert shuffled_deck(b"seed-a", b"ctx2") != base
    assert shuffled_deck(b"seed-a", b"") != base
    decks = {tuple(shuffled_deck(b"seed", deck_context("t", hand))) for hand in range(1, 101)}
    assert len(decks) == 100


def test_shuffled_deck_rejects_non_bytes() -> None:
    with pytest.raises(TypeError):
        shuffled_deck("seed")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        shuffled_deck(b"seed", "ctx")  # type: ignore[arg-type]


def test_deck_context_binds_table_hand_and_client_seed() -> None:
    assert deck_context("t1", 7) == b"guts-v1|t1|7|"
    assert deck_context("t1", 7, "lucky") == b"guts-v1|t1|7|lucky"
    assert deck_context("tablé", 1, "♠") == "guts-v1|tablé|1|♠".encode()


def test_seed_commitment_is_the_sha256_hex_of_the_seed() -> None:
    assert seed_commitment(b"") == (
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )
    assert seed_commitment(b"abc") == hashlib.sha256(b"abc").hexdigest()


# --- uniformity ---------------------------------------------------------------------------------


def chi_square_critical(df: int, alpha: float) -> float:
    """Upper ``alpha`` point of chi-square(df), by the Wilson-Hilferty cube approximation
    (chi2/df is close to normal after a cube root; relative error well under 1% for df >= 50)."""
    z = NormalDist().inv_cdf(1 - alpha)
    h = 2 / (9 * df)
    return df * (1 - h + z * math.sqrt(h)) ** 3


def test_wilson_hilferty_matches_published_table_values() -> None:
    # Published chi-square tables (e.g. NIST/SEMATECH e-Handbook, section 1.3.6.7.4):
    # chi2(50) upper 1% = 76.154, chi2(100) upper 1% = 135.807.
    assert chi_square_critical(50, 0.01) == pytest.approx(76.154, rel=2e-3)
    assert chi_square_critical(100, 0.01) == pytest.approx(135.807, rel=2e-3)


@pytest.mark.slow
def test_card_positions_are_uniform_over_100000_decks() -> None:
    decks = 100_000
    positions = range(52)
    counts: Counter[tuple[str, int]] = Counter()
    for n in range(decks):
        deck = shuffled_deck(hashlib.sha256(b"%d" % n).digest(), b"chi-square")
        counts.update(zip(deck, positions, strict=True))

    expected = decks / 52
    per_card = {
        card: sum((counts[card, p] - expected) ** 2 for p in positions) / expected
        for card in FULL_DECK
    }
    # Each card's position is multinomial over 52 slots: chi-square with 51 degrees of freedom.
    # 52 such tests at family-wise level 1% (Bonferroni): each at 0.01 / 52.
    per_card_limit = chi_square_critical(51, 0.01 / 52)
    worst = max(per_card, key=per_card.__getitem__)
    assert per_card[worst] < per_card_limit, (worst, per_card[worst], per_card_limit)

    # All 52 x 52 cells together: a sum of random permutation matrices has a covariance that is
    # isotropic on the 51**2-dimensional doubly-centred subspace, so the Pearson total is
    # (52/51) * chi-square(51**2); rescale and test at the 1% level.
    total = sum(per_card.values()) * 51 / 52
    assert total < chi_square_critical(51 * 51, 0.01)
