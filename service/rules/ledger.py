"""The ledger: every chip movement of a table, derived from its events.

`step(book, version, event)` folds one event: it returns the ledger entries the event makes
and updates a small `Book` (each seat's player and stack, the chips in the pots, the house's
rake, the bets of the hand in play), so a projection can follow a table event by event without
its full `TableState`. The entries equal what `evolve` does to the stacks, event for event.

Sign convention: `amount` is the change of the player's stack at the table, so `ante`,
`match`, `wimp`, `bet` and `cash_out` are negative and `buy_in`, `top_up`, `win` and `refund`
positive, and `balance_after` is the stack after the movement. The house's `rake` entry has
no player (`player_id` None), a positive amount, and `balance_after` the table's rake total.
Zero movements make no entry.

Ids: `tx_id` is `<table_id>:<version>:<seat or "house">:<kind>` (plus `:low` for the low pot
of a hi-lo hand), so the same movement always has the same id; `round_id` is
`<table_id>:<hand>` for a hand's movements (antes, bets, settlement, a voided hand's bets going
back) and None for buy-ins, top-ups and cash-outs, which happen between hands.

A voided hand gives its bets back (kind `refund`); its antes stay in the pot, as the state does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from . import events as ev
from .wallet import credit_id

BUY_IN = "buy_in"
TOP_UP = "top_up"
ANTE = "ante"
MATCH = "match"
WIMP = "wimp"
BET = "bet"  # the betting round's chips (an addition to the contract's kinds)
WIN = "win"
RAKE = "rake"
REFUND = "refund"
CASH_OUT = "cash_out"
KINDS = (BUY_IN, TOP_UP, ANTE, MATCH, WIMP, BET, WIN, RAKE, REFUND, CASH_OUT)
PAID_IN = (ANTE, MATCH, WIMP, BET)
"""What a player pays into the pots: their net loss counts it (docs/rules.md, responsible
gaming)."""
PAID_OUT = (WIN, REFUND)
"""What the pots pay a player back: their net loss counts it against what they paid in."""
HOUSE = "house"


@dataclass(frozen=True)
class Entry:
    """One chip movement (see the module doc for the signs and ids)."""

    tx_id: str
    round_id: str | None
    table_id: str
    hand: int | None
    player_id: str | None
    kind: str
    amount: int
    balance_after: int
    at: str
    version: int
    transaction_id: str | None = None  # the casino wallet's transaction that moved the money


@dataclass
class Book:
    """What the ledger carries from event to event: enough to derive the next entries and to
    check them against the state (`stacks` are the stacks, `pots` the chips in the pot, low
    pot, reserve and side pot, `rake` the house's total)."""

    table_id: str = ""
    players: dict[int, str] = field(default_factory=dict)
    stacks: dict[int, int] = field(default_factory=dict)
    pots: int = 0
    rake: int = 0
    bought_in: int = 0
    cashed_out: int = 0
    hand: int | None = None
    bets: dict[int, int] = field(default_factory=dict)  # chips bet in the hand in play
    wallet: dict[int, bool] = field(default_factory=dict)  # the wallet-funded seats


class _Moves:
    """Entries of one event, each with the running balance of its seat."""

    def __init__(self, book: Book, version: int, at: str, hand: int | None) -> None:
        self.book, self.version, self.at, self.hand = book, version, at, hand
        self.entries: list[Entry] = []

    def move(self, seat: int, kind: str, amount: int, pot: str = "", tx: str = "") -> None:
        """`amount` chips onto (positive) or off (negative) the stack at `seat` (`tx`: the
        wallet's transaction that moved them, if any)."""
        if amount == 0:
            return
        book = self.book
        book.stacks[seat] = book.stacks.get(seat, 0) + amount
        self._add(str(seat), book.players.get(seat), kind, amount, book.stacks[seat], pot, tx)

    def cash_out(self, seat: int, amount: int) -> None:
        """The seat's player is paid `amount`: to the wallet (a credit) if it funded them."""
        book = self.book
        tx = credit_id(book.table_id, self.version, seat) if book.wallet.get(seat) else ""
        book.cashed_out += amount
        self.move(seat, CASH_OUT, -amount, tx=tx)

    def house(self, amount: int, pot: str = "") -> None:
        """The house takes `amount` chips of rake (from a pot: the caller sets the pots, as
        the event says they are after it)."""
        if amount == 0:
            return
        self.book.rake += amount
        self._add(HOUSE, None, RAKE, amount, self.book.rake, pot)

    def _add(
        self,
        who: str,
        player: str | None,
        kind: str,
        amount: int,
        after: int,
        pot: str,
        tx: str = "",
    ) -> None:
        book = self.book
        suffix = f":{pot}" if pot else ""
        self.entries.append(
            Entry(
                tx_id=f"{book.table_id}:{self.version}:{who}:{kind}{suffix}",
                round_id=f"{book.table_id}:{self.hand}" if self.hand is not None else None,
                table_id=book.table_id,
                hand=self.hand,
                player_id=player,
                kind=kind,
                amount=amount,
                balance_after=after,
                at=self.at,
                version=self.version,
                transaction_id=tx or None,
            )
        )


def _created(book: Book, moves: _Moves, e: ev.TableCreated) -> None:
    book.table_id = e.table_id


def _seated(book: Book, moves: _Moves, e: ev.PlayerSeated) -> None:
    book.players[e.seat] = e.player_id
    book.stacks[e.seat] = 0
    book.wallet[e.seat] = bool(e.transaction_id)
    book.bought_in += e.buy_in
    moves.move(e.seat, BUY_IN, e.buy_in, tx=e.transaction_id)


def _chips_added(book: Book, moves: _Moves, e: ev.ChipsAdded) -> None:
    book.bought_in += e.amount
    moves.move(e.seat, TOP_UP, e.amount, tx=e.transaction_id)


def _left(book: Book, moves: _Moves, e: ev.PlayerLeft) -> None:
    moves.cash_out(e.seat, e.cash_out)


def _dealt(book: Book, moves: _Moves, e: ev.HandDealt) -> None:
    book.hand, book.bets = e.hand, {}
    moves.hand = e.hand
    for seat, amount in e.antes.items():
        book.pots += amount
        moves.move(seat, ANTE, -amount)


def _bet(book: Book, moves: _Moves, e: ev.BetMade) -> None:
    if e.amount:
        book.bets[e.seat] = book.bets.get(e.seat, 0) + e.amount
        book.pots += e.amount
    moves.move(e.seat, BET, -e.amount)


def _voided(book: Book, moves: _Moves, e: ev.HandVoided) -> None:
    for seat, amount in book.bets.items():  # bets go back to who made them; antes stay
        book.pots -= amount
        moves.move(seat, REFUND, amount)
    book.hand, book.bets = None, {}


def _resolved(book: Book, moves: _Moves, e: ev.HandResolved) -> None:
    moves.house(e.rake)
    _settled(moves, e.won, e.matched, e.wimp, "")
    low_pot = 0
    if e.low is not None:
        moves.house(e.low.rake, "low")
        _settled(moves, e.low.won, e.low.matched, {}, "low")
        low_pot = e.low.pot
    book.pots = e.pot + low_pot + e.reserve + e.side_pot
    book.hand, book.bets = None, {}


def _settled(
    moves: _Moves,
    won: Mapping[int, int],
    matched: Mapping[int, int],
    wimp: Mapping[int, int],
    pot: str,
) -> None:
    for seat, amount in won.items():
        moves.move(seat, WIN, amount, pot)
    for seat, amount in matched.items():
        moves.move(seat, MATCH, -amount, pot)
    for seat, amount in wimp.items():
        moves.move(seat, WIMP, -amount, pot)


def _ended(book: Book, moves: _Moves, e: ev.TableEnded) -> None:
    for seat, amount in e.refunds.items():
        book.pots -= amount
        moves.move(seat, REFUND, amount)
    for seat, amount in e.cash_outs.items():
        moves.cash_out(seat, amount)


Step = Callable[[Book, _Moves, ev.Event], None]
_STEPS: dict[type[ev.Event], Step] = {
    ev.TableCreated: _created,  # type: ignore[dict-item]
    ev.PlayerSeated: _seated,  # type: ignore[dict-item]
    ev.ChipsAdded: _chips_added,  # type: ignore[dict-item]
    ev.PlayerLeft: _left,  # type: ignore[dict-item]
    ev.HandDealt: _dealt,  # type: ignore[dict-item]
    ev.BetMade: _bet,  # type: ignore[dict-item]
    ev.HandVoided: _voided,  # type: ignore[dict-item]
    ev.HandResolved: _resolved,  # type: ignore[dict-item]
    ev.TableEnded: _ended,  # type: ignore[dict-item]
}
"""One function per event type that moves chips; every other event moves none."""
MONEY_EVENTS = frozenset(kind.TYPE for kind in _STEPS)
"""The types of the events that can make entries (a follower may decode only those)."""


def step(book: Book, version: int, event: ev.Event) -> tuple[Book, list[Entry]]:
    """Fold `event` (at `version`) into `book` (in place, like `evolve`) and return it with the
    entries the event makes, in the order their balances run."""
    apply = _STEPS.get(type(event))
    if apply is None:
        return book, []
    moves = _Moves(book, version, getattr(event, "at", ""), book.hand)
    apply(book, moves, event)
    return book, moves.entries


def fold(
    events: Iterable[tuple[int, ev.Event]], book: Book | None = None
) -> tuple[Book, list[Entry]]:
    """Every entry of `events` (version, event), oldest first, and the book after them."""
    book = book if book is not None else Book()
    entries: list[Entry] = []
    for version, event in events:
        book, made = step(book, version, event)
        entries.extend(made)
    return book, entries


def net_loss(entries: Iterable[Entry]) -> int:
    """What the entries' players paid into the pots minus what the pots paid them back (the
    24 h net loss, given the player's entries of the last 24 hours)."""
    return -sum(e.amount for e in entries if e.kind in PAID_IN or e.kind in PAID_OUT)
