"""The table's events: frozen, versioned facts. Commands decide them; `evolve` applies them.

Each event class has a `TYPE` (its name in the log) and a `VERSION`. Events hold everything
needed to replay without re-deciding: a deal records the cards it dealt, a resolve the chips it
moved. Some fields are secret while a hand is live (cards, seed, undisclosed decisions); what a
viewer may see is decided in `views.py`, never by leaving things out of the log.

Times are ISO 8601 strings in UTC with milliseconds (`2026-11-22T15:00:00.000Z`). Player
protection's events (reality checks, away, sessions ended) are in protection_events.py; those of
the steps some rulesets add to a hand (pass the trash, community cards, the draw, the betting
round) in variant_events.py, and this module names them too (`ev.CardsDrawn`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from .event_base import Event as Event
from .protection_events import (
    PlayerAway,
    PlayerBack,
    ProtectionSet,
    RealityCheck,
    RealityCheckAnswered,
    SessionEnded,
)
from .serial import from_data, to_data
from .variant_events import BetMade as BetMade
from .variant_events import CardPassed as CardPassed
from .variant_events import CardsDrawn as CardsDrawn
from .variant_events import CardsPassed as CardsPassed
from .variant_events import CommunityCardDealt as CommunityCardDealt

Cards = tuple[str, ...]


@dataclass(frozen=True)
class TableCreated(Event):
    """A table opened with a fully resolved ruleset (as `Ruleset.to_dict`).

    `next_seed` (secret) is the seed of the table's first hand, fixed now; `next_commitment`
    (public, its SHA-256) lets anyone hold the house to it before any client seed is chosen.
    `tenant` is the casino the table belongs to (whose operator opened it).
    """

    TYPE: ClassVar[str] = "table_created"
    table_id: str
    rules: dict[str, Any]
    at: str
    next_seed: str = ""
    next_commitment: str = ""
    tenant: str = "default"


@dataclass(frozen=True)
class PlayerSeated(Event):
    """A player sat down at `seat` and bought `buy_in` chips; `transaction_id` names the
    casino wallet's confirmed debit that paid for them ("" when the casino funded the chips
    itself): the seat is wallet-funded, and its cash-outs are credited to the wallet."""

    TYPE: ClassVar[str] = "player_seated"
    seat: int
    player_id: str
    buy_in: int
    at: str
    transaction_id: str = ""


@dataclass(frozen=True)
class ChipsAdded(Event):
    """A seated player topped up their stack by `amount` chips (`transaction_id`: the wallet's
    confirmed debit that paid for them, as for a seat)."""

    TYPE: ClassVar[str] = "chips_added"
    seat: int
    amount: int
    at: str
    transaction_id: str = ""


@dataclass(frozen=True)
class PlayerSatOut(Event):
    """A player chose to sit out: no antes, no cards, until they sit in again."""

    TYPE: ClassVar[str] = "player_sat_out"
    seat: int
    at: str


@dataclass(frozen=True)
class PlayerSatIn(Event):
    """A sitting-out player came back; they are dealt in from the next game."""

    TYPE: ClassVar[str] = "player_sat_in"
    seat: int
    at: str


@dataclass(frozen=True)
class PlayerLeft(Event):
    """A player left the table and was paid out `cash_out` chips (their whole stack)."""

    TYPE: ClassVar[str] = "player_left"
    seat: int
    cash_out: int
    at: str


@dataclass(frozen=True)
class ClientSeedSet(Event):
    """The player at `seat` chose `client_seed` as their part of the deck of hand `hand` (the
    next one to be dealt), replacing any seed they chose for it before. The deal of that hand
    mixes it in (when the seat is dealt in) and drops it either way: a seed counts for one
    deal, which is always one whose server seed was committed before the seed was chosen.
    The seed is the seat's own until that deal; then anyone may see it."""

    TYPE: ClassVar[str] = "client_seed_set"
    seat: int
    client_seed: str
    hand: int
    at: str


@dataclass(frozen=True)
class HandDealt(Event):
    """A hand was dealt: antes collected, cards dealt from a deck derived from `seed`.

    `order` is the declaring order (button's left first, dealer last). `removed` names seats
    taken out of the game at this deal and why ("cannot_ante", "cannot_cover", "loss_limit":
    the ante would take the player past their 24 h loss limit). `deck` is what is left of the
    deck after the deal (carried over when the rules say so). `seed` is secret until the hand
    is over; `commitment` (its SHA-256) is public from the deal on. `stacked`
    marks a sandbox deal whose cards were fixed by the caller. `stacks` are the players'
    stacks before the antes, `players` who held each seat. The hand's seed is the one
    committed before (by the table's creation or the previous deal); `next_seed` and
    `next_commitment` commit the following hand's seed, before its client seed is known.
    `client_seeds` are the seeds the dealt-in players chose for this hand (`ClientSeedSet`),
    mixed into the deck's context with the operator's `client_seed` (context v2).
    """

    TYPE: ClassVar[str] = "hand_dealt"
    hand: int
    game: int
    new_game: bool
    button: int
    order: tuple[int, ...]
    antes: dict[int, int]
    removed: dict[int, str]
    cards: dict[int, Cards]
    kitty: Cards
    deck: Cards
    reshuffled: bool
    seed: str
    commitment: str
    client_seed: str
    stacked: bool
    deadline: str
    at: str
    stacks: dict[int, int] = field(default_factory=dict)  # each player's stack before the ante
    players: dict[int, str] = field(default_factory=dict)  # who sat where
    next_seed: str = ""  # secret: the seed of the following hand, committed now
    next_commitment: str = ""  # its SHA-256, public
    deck_context: str = ""  # the context the deck was derived with (see cards.hand_context)
    client_seeds: dict[int, str] = field(default_factory=dict)  # players' seeds mixed in, by seat


@dataclass(frozen=True)
class DecisionMade(Event):
    """`seat` declared `decision` ("in" / "out").

    `by` says who decided: "player", "platform" (the deadline passed: out, cards mucked),
    "auto_in" (the dealer, when everyone before them was out) or "forfeit" (out at once: the
    player went away, or their session ended, before declaring; protection.py). With
    simultaneous declaring the decision is secret until the reveal. `deadline` is the next
    deadline, for sequential turns.
    """

    TYPE: ClassVar[str] = "decision_made"
    hand: int
    seat: int
    decision: str
    by: str
    deadline: str | None
    at: str


@dataclass(frozen=True)
class DeclarationsRevealed(Event):
    """Every decision of the hand, shown to all at once. The hand then waits for its showdown,
    or, in a draw game, the drawing starts with `deadline` for the first in-player."""

    TYPE: ClassVar[str] = "declarations_revealed"
    hand: int
    decisions: dict[int, str]
    at: str
    deadline: str | None = None


@dataclass(frozen=True)
class PotResult:
    """How one pot settled (the low pot of a hi-lo hand)."""

    outcome: str
    pot_in_play: int
    contenders: tuple[int, ...]
    winners: tuple[int, ...]
    won: dict[int, int]
    matched: dict[int, int]
    pot: int
    rake: int = 0  # the house's share, taken before the pot was paid


@dataclass(frozen=True)
class HandResolved(Event):
    """The showdown and settlement of a hand.

    `outcome` is one of "nobody_in", "uncontested", "showdown", "kitty_wins", "beats_kitty"
    (a lone in-player beat the kitty), "all_tied", "others_folded" (in the betting round every
    other in-player folded: the last one takes the pot unseen, the folders match). Version 2
    added "beats_kitty"; version 1 called it "all_tied" (the codec upcasts such events).
    `pot_in_play` is P, the pot the hand was played for (with a betting round, the bets
    included: `bets` are each seat's chips bet this hand, `folded` the in-players who folded,
    who lost and match), and `reserve_before` and
    `side_pot_before` the reserve and side pot at the showdown. `won` are chips each winner took
    (from pot and side pot), `matched` the chips each loser paid in, `wimp` the wimp penalty
    paid; `pot`, `reserve` and `side_pot` are the amounts after settlement. `shown` are the
    hands turned face up (never a lone winner's, never a mucked hand). `removed` are seats out of
    the game because they have nothing left. `grace_until` is when players who cannot cover the
    next match must have topped up (cover rule), or None. In a hi-lo hand these fields
    describe the high pot and `low` the low pot.
    """

    TYPE: ClassVar[str] = "hand_resolved"
    VERSION: ClassVar[int] = 2
    hand: int
    outcome: str
    pot_in_play: int
    reserve_before: int
    side_pot_before: int
    in_seats: tuple[int, ...]
    winners: tuple[int, ...]
    won: dict[int, int]
    matched: dict[int, int]
    wimp: dict[int, int]
    shown: dict[int, Cards]
    kitty_shown: Cards
    pot: int
    reserve: int
    side_pot: int
    game_over: bool
    button: int
    removed: dict[int, str]
    grace_until: str | None
    at: str
    low: PotResult | None = None
    bets: dict[int, int] = field(default_factory=dict)
    folded: tuple[int, ...] = ()
    rake: int = 0  # the house's share of the (high) pot, taken before it was paid (`won`)


@dataclass(frozen=True)
class PlayersOutOfGame(Event):
    """Between hands: `seats` sit out the rest of the game (their top-up grace ended while they
    still could not cover the pot); they join again at the next game."""

    TYPE: ClassVar[str] = "players_out_of_game"
    seats: dict[int, str]
    at: str


@dataclass(frozen=True)
class HandVoided(Event):
    """The operator voided the hand (a misdeal): cards return, antes stay in the pot."""

    TYPE: ClassVar[str] = "hand_voided"
    hand: int
    reason: str
    at: str


@dataclass(frozen=True)
class TableEnded(Event):
    """The operator ended the table (between hands): the chips left in the pot, low pot,
    reserve and side pot went back to the players of the current game (`refunds`, by seat;
    see `service.rules.ending`), then every seated player was paid out their whole stack
    (`cash_outs`, by seat; `players` says who held each seat). No command is taken after."""

    TYPE: ClassVar[str] = "table_ended"
    refunds: dict[int, int]
    cash_outs: dict[int, int]
    players: dict[int, str]
    at: str


EVENT_TYPES: dict[str, type[Event]] = {
    cls.TYPE: cls
    for cls in (
        TableCreated,
        PlayerSeated,
        ChipsAdded,
        PlayerSatOut,
        PlayerSatIn,
        PlayerLeft,
        ClientSeedSet,
        HandDealt,
        DecisionMade,
        DeclarationsRevealed,
        CardPassed,
        CardsPassed,
        CommunityCardDealt,
        CardsDrawn,
        BetMade,
        HandResolved,
        PlayersOutOfGame,
        HandVoided,
        TableEnded,
        ProtectionSet,
        RealityCheck,
        RealityCheckAnswered,
        PlayerAway,
        PlayerBack,
        SessionEnded,
    )
}


def event_to_data(event: Event) -> dict[str, Any]:
    """The event as JSON-ready data: `{"type", "v", "data"}`."""
    return {"type": event.TYPE, "v": event.VERSION, "data": to_data(event)}


def event_from_data(record: dict[str, Any]) -> Event:
    """Rebuild an event written by `event_to_data` (older versions are upcast by the codec)."""
    cls = EVENT_TYPES[record["type"]]
    return from_data(cls, record["data"])
