"""The deck: the canonical order, the deck context, the seeded shuffle and the deal.

These are steps 2 to 5 of docs/fairness.md, written with the standard library only.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterator, Mapping, Sequence

RANKS = "23456789TJQKA"
SUITS = "shdc"
FULL_DECK: tuple[str, ...] = tuple(rank + suit for rank in RANKS for suit in SUITS)
"""The canonical starting order of the shuffle: 2s 2h 2d 2c 3s 3h ... Ad Ac (52 cards)."""

CONTEXT_FORMAT = "guts-v1|{table_id}|{hand}|{client_seed}"
"""The deck context of a hand without players' seeds (UTF-8 encoded before use); with them,
the context is v2 (``deck_context``)."""

_TWO_32 = 1 << 32


def _block(seed: bytes, context: bytes, counter: int) -> bytes:
    """Block ``counter`` of the stream: HMAC-SHA256(seed, context | "|" | counter as u64 BE)."""
    return hmac.new(seed, context + b"|" + counter.to_bytes(8, "big"), hashlib.sha256).digest()


def _words(seed: bytes, context: bytes) -> Iterator[int]:
    """The stream's 4-byte big-endian unsigned words, block 0 first; it never ends."""
    counter = 0
    while True:
        block = _block(seed, context, counter)
        for offset in range(0, len(block), 4):
            yield int.from_bytes(block[offset : offset + 4], "big")
        counter += 1


def derive_deck(seed: bytes, context: bytes) -> list[str]:
    """The 52 cards in the order that ``seed`` and ``context`` fix; index 0 is dealt first.

    Fisher-Yates from the end of ``FULL_DECK``: for ``i`` = 51, 50, ..., 1, read words until one
    is below ``2**32 - 2**32 % (i + 1)`` (the rejected ones are consumed too), and swap the cards
    at ``i`` and ``word % (i + 1)``.
    """
    deck = list(FULL_DECK)
    words = _words(bytes(seed), bytes(context))
    for i in range(len(deck) - 1, 0, -1):
        m = i + 1
        limit = _TWO_32 - _TWO_32 % m
        word = next(words)
        while word >= limit:
            word = next(words)
        j = word % m
        deck[i], deck[j] = deck[j], deck[i]
    return deck


def netstring(text: str) -> str:
    """``<length>:<text>,``: the length is the number of UTF-8 bytes of ``text``, in decimal."""
    return f"{len(text.encode())}:{text},"


def _player_fields(client_seeds: Mapping[str, str]) -> str:
    """Each seat's number and seed as netstrings, in ascending seat order."""
    seats = sorted(client_seeds, key=int)
    return "".join(netstring(str(int(s))) + netstring(client_seeds[s]) for s in seats)


def deck_context(
    table_id: str,
    hand: int,
    client_seed: str = "",
    client_seeds: Mapping[str, str] | None = None,
) -> bytes:
    """The shuffle context of one hand, in UTF-8. Without players' seeds (v1):
    ``guts-v1|<table_id>|<hand>|<client_seed>``. With them (v2, ``client_seeds`` maps seat
    numbers to seeds): ``guts-v2|`` followed by the netstrings of the table id, the hand
    number, the operator's client seed, then each seat's number and seed by ascending seat."""
    if not client_seeds:
        return CONTEXT_FORMAT.format(table_id=table_id, hand=hand, client_seed=client_seed).encode()
    fields = netstring(table_id) + netstring(str(hand)) + netstring(client_seed)
    return ("guts-v2|" + fields + _player_fields(client_seeds)).encode()


def draw_context(
    table_id: str,
    hand: int,
    draws_before: int,
    client_seed: str = "",
    client_seeds: Mapping[str, str] | None = None,
) -> bytes:
    """The context of the deck that orders discards shuffled back ``draws_before`` draws into
    a hand: ``guts-v1-draw|<table_id>|<hand>|<k>`` (v1), or ``guts-v2-draw|`` and the
    netstrings of the table id, the hand number, k, the operator's client seed and each
    seat's number and seed (v2)."""
    if not client_seeds:
        return f"guts-v1-draw|{table_id}|{hand}|{draws_before}".encode()
    fields = netstring(table_id) + netstring(str(hand)) + netstring(str(draws_before))
    fields += netstring(client_seed) + _player_fields(client_seeds)
    return ("guts-v2-draw|" + fields).encode()


def deal_cards(
    deck: Sequence[str], order: Sequence[int | str], cards: int, kitty: bool
) -> tuple[dict[str, list[str]], list[str]]:
    """Deal ``cards`` cards one at a time from the top (index 0) of ``deck``: each round gives
    one card to every seat of ``order`` in turn and then one to the kitty (when ``kitty``).

    Returns the hands by position (the seat as a string, or ``"kitty"``) and the undealt rest.
    """
    positions = [str(seat) for seat in order] + (["kitty"] if kitty else [])
    hands: dict[str, list[str]] = {position: [] for position in positions}
    top = 0
    for _ in range(cards):
        for position in positions:
            hands[position].append(deck[top])
            top += 1
    return hands, list(deck[top:])
