"""Cards, card parsing and the seeded, reproducible deck shuffle.

A card is a two-character string: a rank from ``RANKS`` ("23456789TJQKA", deuce low, ace high)
followed by a suit from ``SUITS`` ("shdc"). Parsing is strict: "As" is a card, "AS", "as",
"10s" and "A♠" are not. When suits break ties they rank spades > hearts > diamonds > clubs.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable, Iterator, Mapping
from itertools import chain
from typing import Final, TypeAlias

from service.rules.errors import InvalidCard

__all__ = [
    "FULL_DECK",
    "RANKS",
    "SUITS",
    "Card",
    "deck_context",
    "draw_context",
    "hand_context",
    "netstring",
    "parse_card",
    "parse_cards",
    "seed_commitment",
    "shuffled_deck",
]

Card: TypeAlias = str
"""A validated two-character card string such as "As" or "Td"."""

RANKS: Final = "23456789TJQKA"
"""Card ranks from lowest (deuce) to highest (ace)."""

SUITS: Final = "shdc"
"""Card suits from highest to lowest for suit tie-breaks: spades, hearts, diamonds, clubs."""

FULL_DECK: Final[tuple[Card, ...]] = tuple(rank + suit for rank in RANKS for suit in SUITS)
"""The 52 cards in canonical order: by rank from deuce to ace, and within a rank in ``SUITS``
order, i.e. ("2s", "2h", "2d", "2c", "3s", ..., "Ad", "Ac"). The shuffle starts from this order."""

_VALID: Final = frozenset(FULL_DECK)

_CARD_HINT: Final = f"a rank from {RANKS} followed by a suit from {SUITS}, e.g. 'As' or 'Td'"


def parse_card(text: str, field: str | None = None) -> Card:
    """Validate one card string and return it.

    The check is exact: two characters, upper-case rank, lower-case suit ("Ts" for ten, never
    "10s"). Raises ``InvalidCard`` (with ``field`` attached, if given) naming the bad text.
    """
    if isinstance(text, str) and text in _VALID:
        return text
    raise InvalidCard(f"invalid card {text!r}: expected {_CARD_HINT}", field)


def parse_cards(texts: Iterable[str], field: str | None = None) -> tuple[Card, ...]:
    """Validate a collection of card strings: each must be a card and none may repeat.

    Returns the cards as a tuple in the given order. Raises ``InvalidCard`` naming the first bad
    or duplicated card. A bare string ("AsKd") is rejected rather than split into characters.
    """
    if isinstance(texts, str | bytes):
        raise InvalidCard(f"expected a list of cards, got the string {texts!r}", field)
    try:
        items = tuple(texts)
    except TypeError:
        raise InvalidCard(f"expected a list of cards, got {type(texts).__name__}", field) from None
    seen: set[str] = set()
    for text in items:
        card = parse_card(text, field)
        if card in seen:
            raise InvalidCard(f"duplicate card {card!r}", field)
        seen.add(card)
    return items


# --- seeded shuffle ---------------------------------------------------------------------------

_TWO_32: Final = 1 << 32
_DRAWS: Final = len(FULL_DECK) - 1  # 51 draws: i = 51, 50, ..., 1
_WORDS_PER_BLOCK: Final = 8  # one HMAC-SHA256 output = 32 bytes = 8 big-endian uint32 words
# Enough blocks for one word per draw (7 blocks, 56 words); more are made only on rejections.
_FIRST_BLOCKS: Final = -(-_DRAWS // _WORDS_PER_BLOCK)
_unpack_first: Final = struct.Struct(f">{_FIRST_BLOCKS * _WORDS_PER_BLOCK}I").unpack
_unpack_block: Final = struct.Struct(f">{_WORDS_PER_BLOCK}I").unpack

# Per draw, in draw order: (i, m = i + 1, limit). A word v is accepted iff v < limit, where
# limit = 2**32 - (2**32 % m) is the largest multiple of m that is at most 2**32.
_STEPS: Final[tuple[tuple[int, int, int], ...]] = tuple(
    (i, i + 1, _TWO_32 - _TWO_32 % (i + 1)) for i in range(_DRAWS, 0, -1)
)

# HMAC (RFC 2104) built from hashlib states: the padded key (and the message prefix) is hashed
# once per deck and the states are copied per block; that is about a third faster than the hmac
# module's objects. Checked against the hmac module in tests/rules/test_cards.py.
_IPAD: Final = bytes(b ^ 0x36 for b in range(256))
_OPAD: Final = bytes(b ^ 0x5C for b in range(256))
_SHA256_BLOCK: Final = 64


class _BlockSource:
    """The blocks HMAC-SHA256(seed, context + b"|" + counter) and the uint32 words they hold."""

    __slots__ = ("_inner", "_outer")

    def __init__(self, seed: bytes, context: bytes) -> None:
        key = hashlib.sha256(seed).digest() if len(seed) > _SHA256_BLOCK else seed
        key = key.ljust(_SHA256_BLOCK, b"\0")
        self._inner = hashlib.sha256(key.translate(_IPAD))
        self._inner.update(context + b"|")  # every message starts with this prefix
        self._outer = hashlib.sha256(key.translate(_OPAD))

    def block(self, counter: int) -> bytes:
        inner = self._inner.copy()
        inner.update(counter.to_bytes(8, "big"))
        outer = self._outer.copy()
        outer.update(inner.digest())
        return outer.digest()

    def first_words(self) -> tuple[int, ...]:
        return _unpack_first(b"".join(map(self.block, range(_FIRST_BLOCKS))))

    def words_from(self, counter: int) -> Iterator[int]:
        while True:
            yield from _unpack_block(self.block(counter))
            counter += 1


def shuffled_deck(seed: bytes, context: bytes = b"") -> list[Card]:
    """Return the 52 cards in the order fixed by ``seed`` and ``context``.

    The same seed and context always give the same deck. The algorithm, exactly:

    1. Byte stream. Block ``n`` (``n`` = 0, 1, 2, ...) is
       ``HMAC-SHA256(key=seed, msg=context + b"|" + n.to_bytes(8, "big"))``, i.e. the context
       bytes, one ASCII "|" (0x7C), then the counter as an 8-byte big-endian unsigned integer.
       The stream is block 0, block 1, block 2, ... concatenated (32 bytes per block).
    2. Words. The stream is read 4 bytes at a time, in order, each 4 bytes being one big-endian
       unsigned 32-bit integer ``v``. Every word is consumed exactly once, including rejected ones.
    3. Shuffle. Start from ``FULL_DECK`` (2s 2h 2d 2c 3s ... Ad Ac, indices 0..51). For
       ``i`` = 51, 50, ..., 1: let ``m = i + 1`` and ``limit = 2**32 - (2**32 % m)``; read words
       until one has ``v < limit`` (discarding the others); set ``j = v % m`` and swap the cards
       at indices ``i`` and ``j`` (``j == i`` leaves the deck unchanged). When ``m`` is a power
       of two, ``limit`` is ``2**32`` and no word is rejected.
    4. The result is the deck after the step with ``i = 1``; cards are dealt from index 0 up.

    The rejection in step 3 makes every ``j`` in ``0..i`` equally likely, so every one of the
    52! orders is equally likely for a uniformly random seed.
    """
    if not isinstance(seed, bytes | bytearray) or not isinstance(context, bytes | bytearray):
        raise TypeError("seed and context must be bytes")
    source = _BlockSource(bytes(seed), bytes(context))
    words = source.first_words()
    deck = list(FULL_DECK)
    # Fast path: one word per draw (some word is rejected in only about 1 deck in 7 million).
    for (i, m, limit), v in zip(_STEPS, words, strict=False):
        if v >= limit:
            break
        j = v % m
        deck[i], deck[j] = deck[j], deck[i]
    else:
        return deck

    # Slow path from the draw whose word was rejected: the same procedure, word by word.
    done = _DRAWS - i  # draws completed; words[done] was the rejected word
    stream = chain(words[done + 1 :], source.words_from(_FIRST_BLOCKS))
    for i, m, limit in _STEPS[done:]:
        v = next(stream)
        while v >= limit:
            v = next(stream)
        j = v % m
        deck[i], deck[j] = deck[j], deck[i]
    return deck


def deck_context(table_id: str, hand: int, client_seed: str = "") -> bytes:
    """The shuffle context for one hand: ``f"guts-v1|{table_id}|{hand}|{client_seed}"`` in UTF-8.

    Binding the table, the hand number and an optional player-supplied seed into the context
    gives every hand its own deck from one server seed.
    """
    return f"guts-v1|{table_id}|{hand}|{client_seed}".encode()


def netstring(text: str) -> str:
    """``<length>:<text>,`` where the length is the decimal number of UTF-8 bytes of `text`.

    A field written this way says where it ends, whatever it holds (``|``, ``:``, ``,``), so
    a sequence of them reads back one way only."""
    return f"{len(text.encode())}:{text},"


def _player_fields(client_seeds: Mapping[int, str]) -> str:
    return "".join(netstring(str(s)) + netstring(client_seeds[s]) for s in sorted(client_seeds))


def hand_context(
    table_id: str, hand: int, client_seed: str = "", client_seeds: Mapping[int, str] | None = None
) -> bytes:
    """The deck context of a hand: `deck_context` (v1) when no player set a seed for it, else
    v2, which mixes every seat's seed in: ``"guts-v2|"`` followed by netstrings of the table
    id, the hand number, the operator's client seed, then, for each seat with a seed in
    ascending seat order, the seat number and its seed. Netstrings keep the text unambiguous
    (a seed may hold ``|``); the seat order makes it canonical."""
    if not client_seeds:
        return deck_context(table_id, hand, client_seed)
    fields = netstring(table_id) + netstring(str(hand)) + netstring(client_seed)
    return f"guts-v2|{fields}{_player_fields(client_seeds)}".encode()


def draw_context(
    table_id: str,
    hand: int,
    draws_before: int,
    client_seed: str = "",
    client_seeds: Mapping[int, str] | None = None,
) -> bytes:
    """The context of the deck that orders discards shuffled back for a draw, `draws_before`
    draws into the hand: ``guts-v1-draw|<table_id>|<hand>|<k>`` (v1), or, when players set
    seeds for the hand, ``"guts-v2-draw|"`` and netstrings of the table id, the hand number,
    k, the operator's client seed and each seat's number and seed, as in `hand_context`."""
    if not client_seeds:
        return f"guts-v1-draw|{table_id}|{hand}|{draws_before}".encode()
    fields = netstring(table_id) + netstring(str(hand)) + netstring(str(draws_before))
    fields += netstring(client_seed) + _player_fields(client_seeds)
    return f"guts-v2-draw|{fields}".encode()


def seed_commitment(seed: bytes) -> str:
    """The published commitment to a seed: the lower-case hex SHA-256 of the seed bytes."""
    return hashlib.sha256(seed).hexdigest()
