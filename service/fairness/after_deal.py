"""Following the cards after the deal: passes (pass the trash), community cards and draws, and
what each seat can hold when its hand is shown at the end."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .deck import FULL_DECK, derive_deck
from .history import is_int
from .report import Check, describe


class _Held:
    """What one seat can hold after cards changed hands, as far as the history shows.

    The seat holds every card of `added`, at least `keep` cards of `pool`, and, when `unsure`,
    cards this history does not show. A hand known card for card is `pool` = the hand,
    `keep` = its size, nothing added, not unsure.
    """

    def __init__(self, hand: list[str]) -> None:
        self.pool = list(hand)
        self.keep = len(hand)
        self.added: list[str] = []
        self.unsure = False

    def _merge(self) -> None:
        self.pool += self.added
        self.keep += len(self.added)
        self.added = []

    def remove(self, cards: list[str] | None, count: int) -> bool:
        """Take out `cards` (None: `count` cards this history does not show). False when the
        seat cannot have held a named card."""
        self._merge()
        if cards is None:
            self.keep = max(0, self.keep - count)
            return True
        ok = True
        for card in cards:
            if card in self.pool:
                self.pool.remove(card)
                self.keep = max(0, self.keep - 1)
            elif not self.unsure:
                ok = False
        return ok

    def add(self, cards: list[str] | None) -> None:
        """Put in `cards` (None: cards this history does not show)."""
        if cards is None:
            self.unsure = True
        else:
            self.added += cards

    def compare(self, name: str, shown: list[str]) -> Check:
        """Whether `shown` (the hand turned up at the end) is a hand this seat can hold."""
        rest = list(shown)
        missing = [card for card in self.added if card not in rest]
        for card in self.added:
            if card in rest:
                rest.remove(card)
        from_pool = [card for card in rest if card in self.pool]
        strangers = [card for card in rest if card not in self.pool]
        ok = (
            not missing
            and len(set(shown)) == len(shown)
            and len(from_pool) >= self.keep
            and (self.unsure or not strangers)
        )
        if ok:
            return Check(name, True, describe(shown))
        if not self.unsure and len(self.pool) == self.keep:
            held = sorted(self.pool + self.added)
            return Check(
                name, False, f"history has {describe(shown)}, the seat held {describe(held)}"
            )
        need = f"all of {describe(self.added)} and " if self.added else ""
        return Check(
            name,
            False,
            f"history has {describe(shown)}; the seat held {need}at least {self.keep} of "
            f"{describe(self.pool)}",
        )


class AfterDeal:
    """Follows the cards after the deal: passes (pass the trash), community cards and draws.

    As the service plays them: every seat passes one card to the next seat of `order` (the last
    to the first), all at once; community cards come off the top of the undealt deck when the
    declarations are revealed; then each drawer in turn discards and draws as many from the
    top of the deck. When the deck runs short, the discards made since the last reshuffle are
    put under it, ordered by their positions in the deck derived from the same seed with the
    context ``draw_context(k)`` (k = draws made before this one; ``deck.draw_context``).
    """

    def __init__(
        self,
        history: dict[str, Any],
        order: list[int],
        hands: dict[str, list[str]],
        rest: list[str],
        seed: bytes,
        draw_context: Callable[[int], bytes],
    ) -> None:
        self.checks: list[Check] = []
        self.held = {str(seat): _Held(hands[str(seat)]) for seat in order}
        self._history = history
        self._seed = seed
        self._draw_context = draw_context
        self._events = [e for e in history.get("events", []) if isinstance(e, dict)]
        self._passes(order, hands)
        deck = self._community(list(rest))
        self._draws(deck)

    def _event_types(self) -> set[str]:
        return {str(e.get("type")) for e in self._events}

    def _passes(self, order: list[int], hands: dict[str, list[str]]) -> None:
        passes = self._history.get("passes") or {}
        if not isinstance(passes, dict) or not passes:
            return
        moved = "cards_passed" in self._event_types() or (
            not self._events and len(passes) == len(order)
        )
        cards: dict[str, str | None] = {}
        for seat in order:
            entry = passes.get(str(seat))
            card = entry.get("card") if isinstance(entry, dict) else None
            cards[str(seat)] = card if card in FULL_DECK else None
            if card is not None:
                held = card in hands[str(seat)]
                detail = card if held else f"{card} is not among the cards dealt to seat {seat}"
                self.checks.append(Check(f"passed by seat {seat}", held, detail))
        if not moved:
            return
        for i, seat in enumerate(order):
            gave, got = cards[str(seat)], cards[str(order[i - 1])]  # from the seat before
            self.held[str(seat)].remove([gave] if gave else None, 1)
            self.held[str(seat)].add([got] if got else None)

    def _community(self, deck: list[str]) -> list[str]:
        community = self._history.get("community")
        if community is None:
            community = [
                e.get("data", {}).get("card")
                for e in self._events
                if e.get("type") == "community_card_dealt"
            ]
        if not community:
            return deck
        self.checks.append(_as_dealt("community cards", list(community), deck[: len(community)]))
        return deck[len(community) :]

    def _draw_entries(self) -> list[tuple[str, dict[str, Any], str]]:
        """(seat, data, label) per draw, in the order drawn."""
        found = [
            (str(e.get("data", {}).get("seat")), e.get("data", {}), f"event {e.get('version')}")
            for e in self._events
            if e.get("type") == "cards_drawn"
        ]
        if found or not isinstance(self._history.get("draws"), dict):
            return found
        return [(str(s), d, "") for s, d in self._history["draws"].items() if isinstance(d, dict)]

    def _draws(self, deck: list[str]) -> None:
        stock = _Stock(deck, self._seed, self._draw_context)
        unchecked: list[str] = []
        for k, (seat, data, label) in enumerate(self._draw_entries()):
            discards, drawn, count = _draw_counts(data)
            expected, reshuffled = stock.take(count, k)
            if drawn is not None:
                if expected is None:
                    unchecked.append(f"seat {seat}")
                else:
                    self.checks.append(_as_dealt(f"drawn by seat {seat}", drawn, expected))
            if isinstance(data.get("deck"), list) and stock.cards is not None:
                same = data["deck"] == stock.cards
                name = f"{label} cards_drawn: deck".strip()
                detail = f"{len(stock.cards)} cards" if same else "differs from the derived deck"
                self.checks.append(Check(name, same, detail))
            stock.discard(discards, reshuffled)
            self._exchange(seat, discards, count, drawn if drawn is not None else expected)
        if unchecked:
            self.checks.append(
                Check(
                    "draws",
                    True,
                    "not compared for " + ", ".join(unchecked) + ": they drew after the deck was "
                    "reshuffled from discards this history does not show",
                )
            )

    def _exchange(
        self, seat: str, discards: list[str] | None, count: int | None, got: list[str] | None
    ) -> None:
        """The seat's draw: `discards` (or `count` cards not shown) out, `got` in."""
        held = self.held.get(seat)
        if held is None:
            return
        if not held.remove(discards, count or 0):
            self.checks.append(
                Check(
                    f"discarded by seat {seat}",
                    False,
                    f"{describe(discards or [])} were not all in the seat's hand",
                )
            )
        held.add(got)


def _as_dealt(name: str, shown: list[str], expected: list[str]) -> Check:
    """Whether the cards the history shows are those the seed deals."""
    same = shown == expected
    detail = describe(shown)
    if not same:
        detail = f"history has {detail}, the seed deals {describe(expected)}"
    return Check(name, same, detail)


def _draw_counts(data: dict[str, Any]) -> tuple[list[str] | None, list[str] | None, int | None]:
    """(the cards discarded, the cards drawn, how many were drawn) as one draw's record shows
    them: None for what it does not show."""
    discarded, drawn = data.get("discarded"), data.get("drawn")
    discards = discarded if isinstance(discarded, list) else None
    shown_drawn = drawn if isinstance(drawn, list) else None
    count = len(drawn) if isinstance(drawn, list) else drawn if is_int(drawn) else None
    if count is None and discards is not None:
        count = len(discards)
    return discards, shown_drawn, count


class _Stock:
    """The undealt deck through the draws, as far as the history lets it be known: `cards`
    (None once a draw's count is unknown, or the deck was reshuffled from unknown discards),
    and `discards`, the discards since the last reshuffle (None once one of them is unknown),
    which go under the deck when it runs short."""

    def __init__(self, cards: list[str], seed: bytes, draw_context: Callable[[int], bytes]) -> None:
        self.cards: list[str] | None = cards
        self.discards: list[str] | None = []
        self._seed = seed
        self._draw_context = draw_context

    def take(self, count: int | None, k: int) -> tuple[list[str] | None, bool]:
        """(the cards draw `k` takes off the top, when known; whether the deck ran short and
        the discards were put under it first)."""
        if count is None:
            self.cards = None
            return None, False
        if self.cards is None:
            return None, False
        reshuffled = len(self.cards) < count
        if reshuffled:
            if self.discards is None:
                self.cards = None
                return None, True
            deck = derive_deck(self._seed, self._draw_context(k))
            rank = {card: i for i, card in enumerate(deck)}
            self.cards = self.cards + sorted(self.discards, key=rank.__getitem__)
        taken, self.cards = self.cards[:count], self.cards[count:]
        return taken, reshuffled

    def discard(self, discards: list[str] | None, reshuffled: bool) -> None:
        """A draw's discards join the pile (a new pile if the deck was just reshuffled)."""
        if reshuffled:
            self.discards = list(discards) if discards is not None else None
        elif self.discards is not None:
            self.discards = self.discards + discards if discards is not None else None
