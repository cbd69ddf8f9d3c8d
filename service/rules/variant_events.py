"""The events of the steps some rulesets add to a hand (docs/rules.md): pass the trash
(`pass_the_trash`), community cards (`community_cards`), the draw (`draw`) and the betting round
(`betting_round`). `service.rules.events` names them too, beside the other events of a table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .event_base import Event

Cards = tuple[str, ...]


@dataclass(frozen=True)
class CardPassed(Event):
    """Pass the trash: `seat` chose `card` to pass to the next player on the left (secret:
    the passes happen all at once, when everyone has chosen). `by` is "player" or
    "platform" (the deadline passed: the seat's lowest card)."""

    TYPE: ClassVar[str] = "card_passed"
    hand: int
    seat: int
    card: str
    by: str
    at: str
    to_seat: int = -1  # the receiver: the next seat on the left


@dataclass(frozen=True)
class CardsPassed(Event):
    """Every chosen card moved to the next seat on the left at once; declaring starts and
    must be done by `deadline`."""

    TYPE: ClassVar[str] = "cards_passed"
    hand: int
    deadline: str
    at: str


@dataclass(frozen=True)
class CommunityCardDealt(Event):
    """A community card turned face up after the reveal; every in-player may use it."""

    TYPE: ClassVar[str] = "community_card_dealt"
    hand: int
    card: str
    at: str


@dataclass(frozen=True)
class CardsDrawn(Event):
    """Draw: `seat` discarded `discarded` and drew `drawn` (secret to others; the counts are
    public). `deck` is the deck after the draw; `reshuffled` says the discards were shuffled
    into a new deck because the deck ran short. `deadline` is the next drawer's, if any."""

    TYPE: ClassVar[str] = "cards_drawn"
    hand: int
    seat: int
    discarded: Cards
    drawn: Cards
    deck: Cards
    reshuffled: bool
    by: str
    deadline: str | None
    at: str


@dataclass(frozen=True)
class BetMade(Event):
    """The betting round (draw guts, `betting_round`): `seat` acted with `action` ("check", "bet",
    "call", "raise", "fold") and put `amount` chips into the pot (0 for a check or a fold).
    `bet_to` is what every player still in must have put in after this action, `raises` the
    raises made so far. `by` is "player" or "platform" (the deadline passed: a check when
    nothing was owed, else a fold). `deadline` is the next player's, or None when the round
    ended with this action. Bets are public: nothing here is secret."""

    TYPE: ClassVar[str] = "bet_made"
    hand: int
    seat: int
    action: str
    amount: int
    bet_to: int
    raises: int
    by: str
    deadline: str | None
    at: str
