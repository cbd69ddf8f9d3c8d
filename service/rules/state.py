"""The table's state and `evolve`, the only function that changes it.

`evolve(state, event)` applies one event in place and returns the state; `replay(events)` folds
a log from the empty table. Commands (commands.py) only read a state and return events, so the
live state and a replay of the log are the same by construction; the tests check it anyway.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from . import events as ev
from .ruleset import Ruleset, ruleset_from_dict
from .serial import from_data, to_data

# Seat statuses, as the API shows them.
ACTIVE = "active"  # dealt into the current game (or into the next one when none is running)
WAITING = "waiting"  # seated but joins at the next game (joined mid-game, busted, short)
SITTING_OUT = "sitting_out"  # chose to sit out: no antes, no cards
LEFT = "left"  # gone, cashed out

# Hand phases, in the order a hand goes through them (passing and drawing when the rules say).
PASSING = "passing"
DECLARING = "declaring"
DRAWING = "drawing"
BETTING = "betting"  # the betting round of draw guts, after the draw
SHOWDOWN = "showdown"
TIMED_PHASES = (PASSING, DECLARING, DRAWING, BETTING)  # phases that wait for players

# The betting round's actions (fixed limit); a bet or a raise makes everyone else act again.
BET_ACTIONS = ("check", "bet", "call", "raise", "fold")
AGGRESSIVE = ("bet", "raise")


@dataclass
class Seat:
    """A seated player and their chips on the table."""

    seat: int
    player_id: str
    stack: int
    status: str
    joined: int = 0  # the table version of the event that seated this player


@dataclass
class Hand:
    """The hand in play: its cards, declarations and deadline."""

    number: int
    game: int
    phase: str
    button: int
    order: list[int]
    cards: dict[int, tuple[str, ...]]
    kitty: tuple[str, ...]
    antes: dict[int, int]
    decisions: dict[int, str]
    decided_by: dict[int, str]
    turn: int
    deadline: str
    seed: str
    commitment: str
    client_seed: str
    stacked: bool
    dealt_at: str
    client_seeds: dict[int, str] = field(default_factory=dict)  # players' seeds, by seat
    passes: dict[int, str] = field(default_factory=dict)
    community: tuple[str, ...] = ()
    discards: list[str] = field(default_factory=list)
    drawers: list[int] = field(default_factory=list)
    drawn: dict[int, int] = field(default_factory=dict)
    bettors: list[int] = field(default_factory=list)  # in-players of the betting round
    bets: dict[int, int] = field(default_factory=dict)  # chips each put in this round
    folded: list[int] = field(default_factory=list)
    bet_to: int = 0  # what each player still in must have put in
    raises: int = 0
    acted: list[int] = field(default_factory=list)  # acted since the last bet or raise
    bet_turn: int | None = None  # whose turn it is to act in the betting round

    def in_seats(self) -> list[int]:
        """Seats that declared anything but out, in declaring order."""
        return [s for s in self.order if self.decisions.get(s, "out") != "out"]

    def drawing_turn(self) -> int | None:
        """The in-player whose turn it is to draw, if any."""
        pending = [s for s in self.drawers if s not in self.drawn]
        return pending[0] if pending else None

    def still_in(self) -> list[int]:
        """Bettors who have not folded, in betting order."""
        return [s for s in self.bettors if s not in self.folded]

    def to_call(self, seat: int) -> int:
        """What `seat` must put in to match the bet."""
        return self.bet_to - self.bets.get(seat, 0)

    def turn_after(self, seat: int, action: str) -> int | None:
        """Who acts after `seat` does `action` in the betting round; None when the round is
        over: one player is left, or everyone still in has acted since the last bet or raise
        (and so has called it). A bet or a raise reopens the round for everyone else."""
        folded = [*self.folded, seat] if action == "fold" else self.folded
        acted = [seat] if action in AGGRESSIVE else [*self.acted, seat]
        still_in = [s for s in self.bettors if s not in folded]
        if len(still_in) <= 1 or all(s in acted for s in still_in):
            return None
        at = self.bettors.index(seat)
        following = self.bettors[at + 1 :] + self.bettors[:at]
        return next(s for s in following if s in still_in)

    def on_turn(self) -> int | None:
        """The seat whose turn it is to declare (sequential declaring), if any."""
        return self.order[self.turn] if self.turn < len(self.order) else None

    def undecided(self) -> list[int]:
        """Seats dealt in that have not declared yet, in declaring order."""
        return [s for s in self.order if s not in self.decisions]


@dataclass
class TableState:
    """Everything about one table that the rules need to decide the next command."""

    table_id: str = ""
    tenant: str = "default"  # the casino the table belongs to
    rules: Ruleset = field(default_factory=Ruleset)
    created_at: str = ""
    version: int = 0
    seats: dict[int, Seat] = field(default_factory=dict)
    button: int | None = None
    game: int = 0
    game_running: bool = False
    hands_dealt: int = 0
    pot: int = 0
    low_pot: int = 0
    reserve: int = 0
    side_pot: int = 0
    bought_in: int = 0
    cashed_out: int = 0
    raked: int = 0  # the rake the house has taken
    game_paid: dict[int, int] = field(default_factory=dict)  # paid into the pots this game
    ended: bool = False  # the table was ended: every seat cashed out, no command any more
    hand: Hand | None = None
    deck: tuple[str, ...] = ()
    last_winners: tuple[int, ...] = ()
    last_matched: tuple[int, ...] = ()
    last_all_out: bool = False
    antes_in_pot: bool = False  # a voided hand's antes stay in the pot: the redeal takes none
    grace_until: str | None = None
    sealed_hands: list[int] = field(default_factory=list)  # voided before their reveal
    next_seed: str = ""  # secret: the committed seed of the next hand
    next_commitment: str = ""  # public: SHA-256 of next_seed
    client_seeds: dict[int, str] = field(default_factory=dict)  # chosen for the next deal

    @property
    def exists(self) -> bool:
        """Whether the table has been created."""
        return self.version > 0

    def chips_on_table(self) -> int:
        """Stacks + pots + reserve + side pot + the rake taken: always bought in minus cashed
        out (chip conservation)."""
        stacks = sum(s.stack for s in self.seats.values())
        return stacks + self.pot + self.low_pot + self.reserve + self.side_pot + self.raked

    def seated(self) -> list[Seat]:
        """Seats held by a player who has not left, by seat number."""
        return [s for _, s in sorted(self.seats.items()) if s.status != LEFT]

    def to_data(self) -> dict[str, object]:
        """The state as JSON-ready data (the snapshot the store keeps)."""
        data: dict[str, object] = to_data(self)
        return data

    @staticmethod
    def from_data(data: dict[str, object]) -> TableState:
        """Rebuild a state from `to_data`'s output."""
        return from_data(TableState, data)


def _table_created(state: TableState, e: ev.TableCreated) -> None:
    state.table_id = e.table_id
    state.tenant = e.tenant
    state.rules = ruleset_from_dict(e.rules)
    state.created_at = e.at
    state.next_seed, state.next_commitment = e.next_seed, e.next_commitment


def _player_seated(state: TableState, e: ev.PlayerSeated) -> None:
    status = WAITING if state.game_running else ACTIVE
    state.seats[e.seat] = Seat(e.seat, e.player_id, e.buy_in, status, joined=state.version + 1)
    state.bought_in += e.buy_in
    state.game_paid.pop(e.seat, None)  # a new player: what the seat paid before is not theirs


def _chips_added(state: TableState, e: ev.ChipsAdded) -> None:
    state.seats[e.seat].stack += e.amount
    state.bought_in += e.amount


def _sat_out(state: TableState, e: ev.PlayerSatOut) -> None:
    state.seats[e.seat].status = SITTING_OUT


def _sat_in(state: TableState, e: ev.PlayerSatIn) -> None:
    state.seats[e.seat].status = WAITING if state.game_running else ACTIVE


def _left(state: TableState, e: ev.PlayerLeft) -> None:
    seat = state.seats[e.seat]
    seat.stack -= e.cash_out
    seat.status = LEFT
    state.cashed_out += e.cash_out
    state.client_seeds.pop(e.seat, None)  # the seat's next holder brings their own
    state.game_paid.pop(e.seat, None)  # who leaves gives up their share of the pots


def _client_seed_set(state: TableState, e: ev.ClientSeedSet) -> None:
    state.client_seeds[e.seat] = e.client_seed


def _dealt(state: TableState, e: ev.HandDealt) -> None:
    if e.new_game:
        state.game = e.game
        state.game_running = True
        state.game_paid = {}
    for s in e.removed:
        state.seats[s].status = WAITING
    for s in e.order:
        state.seats[s].status = ACTIVE
    hi_lo = state.rules.hi_lo
    for s, amount in e.antes.items():
        state.seats[s].stack -= amount
        _paid(state, s, amount)
        low = amount // 2 if hi_lo else 0  # hi-lo: the odd chip goes to the high pot
        state.low_pot += low
        state.pot += amount - low
    state.antes_in_pot = False
    state.next_seed, state.next_commitment = e.next_seed, e.next_commitment
    state.client_seeds = {}  # every seed chosen for this deal is spent, used or not
    state.button = e.button
    state.hands_dealt = e.hand
    state.deck = e.deck
    state.grace_until = None
    state.hand = Hand(
        number=e.hand,
        game=e.game,
        phase=PASSING if state.rules.pass_the_trash else DECLARING,
        button=e.button,
        order=list(e.order),
        cards=dict(e.cards),
        kitty=e.kitty,
        antes=dict(e.antes),
        decisions={},
        decided_by={},
        turn=0,
        deadline=e.deadline,
        seed=e.seed,
        commitment=e.commitment,
        client_seed=e.client_seed,
        stacked=e.stacked,
        dealt_at=e.at,
        client_seeds=dict(e.client_seeds),
    )


def _decided(state: TableState, e: ev.DecisionMade) -> None:
    hand = state.hand
    assert hand is not None
    hand.decisions[e.seat] = e.decision
    hand.decided_by[e.seat] = e.by
    if state.rules.declare == "sequential":
        hand.turn += 1
    if e.deadline is not None:
        hand.deadline = e.deadline


def _revealed(state: TableState, e: ev.DeclarationsRevealed) -> None:
    hand = state.hand
    assert hand is not None
    if e.deadline is None:
        hand.phase = SHOWDOWN
    else:
        hand.phase = DRAWING
        hand.drawers = hand.in_seats()
        hand.deadline = e.deadline


def _card_passed(state: TableState, e: ev.CardPassed) -> None:
    assert state.hand is not None
    state.hand.passes[e.seat] = e.card


def _cards_passed(state: TableState, e: ev.CardsPassed) -> None:
    hand = state.hand
    assert hand is not None
    order = hand.order
    kept = {s: [c for c in hand.cards[s] if c != hand.passes[s]] for s in order}
    for i, seat in enumerate(order):
        left = order[(i + 1) % len(order)]
        kept[left].append(hand.passes[seat])
    hand.cards = {s: tuple(kept[s]) for s in order}
    hand.phase = DECLARING
    hand.deadline = e.deadline


def _community(state: TableState, e: ev.CommunityCardDealt) -> None:
    assert state.hand is not None
    state.hand.community = (*state.hand.community, e.card)
    state.deck = state.deck[1:]


def _drawn(state: TableState, e: ev.CardsDrawn) -> None:
    hand = state.hand
    assert hand is not None
    held = list(hand.cards[e.seat])
    for card in e.discarded:
        held.remove(card)
    hand.cards[e.seat] = (*held, *e.drawn)
    hand.discards = list(e.discarded) if e.reshuffled else [*hand.discards, *e.discarded]
    hand.drawn[e.seat] = len(e.drawn)
    state.deck = e.deck
    if hand.drawing_turn() is None:
        hand.phase = SHOWDOWN
        if starts_betting(state.rules, hand):
            assert e.deadline is not None
            hand.phase, hand.deadline = BETTING, e.deadline
            hand.bettors = hand.in_seats()
            hand.bet_turn = hand.bettors[0]
    elif e.deadline is not None:
        hand.deadline = e.deadline


def starts_betting(rules: Ruleset, hand: Hand) -> bool:
    """Whether a betting round follows the draw: the rules have one and two or more are in
    (a lone in-player against the kitty has nobody to bet against)."""
    return rules.betting_round and len(hand.in_seats()) >= 2


def _bet(state: TableState, e: ev.BetMade) -> None:
    hand = state.hand
    assert hand is not None
    following = hand.turn_after(e.seat, e.action)
    state.seats[e.seat].stack -= e.amount
    state.pot += e.amount
    _paid(state, e.seat, e.amount)
    if e.amount:
        hand.bets[e.seat] = hand.bets.get(e.seat, 0) + e.amount
    hand.bet_to, hand.raises = e.bet_to, e.raises
    if e.action == "fold":
        hand.folded.append(e.seat)
    hand.acted = [e.seat] if e.action in AGGRESSIVE else [*hand.acted, e.seat]
    hand.bet_turn = following
    if following is None:
        hand.phase = SHOWDOWN
    else:
        assert e.deadline is not None
        hand.deadline = e.deadline


def _paid(state: TableState, seat: int, amount: int) -> None:
    """`seat` paid `amount` into the pots (antes, matches, wimp penalties, bets): the share of
    the pots it gets back if the table ends in this game."""
    if amount:
        state.game_paid[seat] = state.game_paid.get(seat, 0) + amount


def _resolved(state: TableState, e: ev.HandResolved) -> None:
    for s, amount in e.won.items():
        state.seats[s].stack += amount
    for s, amount in e.matched.items():
        state.seats[s].stack -= amount
        _paid(state, s, amount)
    for s, amount in e.wimp.items():
        state.seats[s].stack -= amount
        _paid(state, s, amount)
    if e.low is not None:
        for s, amount in e.low.won.items():
            state.seats[s].stack += amount
        for s, amount in e.low.matched.items():
            state.seats[s].stack -= amount
            _paid(state, s, amount)
        state.low_pot = e.low.pot
        state.raked += e.low.rake
    state.raked += e.rake
    for s in e.removed:
        state.seats[s].status = WAITING
    state.pot, state.reserve, state.side_pot = e.pot, e.reserve, e.side_pot
    state.button = e.button
    low_winners = e.low.winners if e.low else ()
    low_matched = e.low.matched if e.low else {}
    state.last_winners = tuple(dict.fromkeys((*e.winners, *low_winners)))
    paid = [s for s, a in (*e.matched.items(), *low_matched.items()) if a > 0]
    state.last_matched = tuple(dict.fromkeys(paid))
    state.last_all_out = not e.in_seats
    state.grace_until = e.grace_until
    if e.game_over:
        state.game_running = False
        for seat in state.seats.values():
            if seat.status == WAITING:
                seat.status = ACTIVE
    state.hand = None


def _out_of_game(state: TableState, e: ev.PlayersOutOfGame) -> None:
    for s in e.seats:
        state.seats[s].status = WAITING
    state.grace_until = None


def _voided(state: TableState, e: ev.HandVoided) -> None:
    hand = state.hand
    assert hand is not None
    if hand.phase in (PASSING, DECLARING):
        state.sealed_hands.append(hand.number)
    for s, amount in hand.bets.items():  # bets go back to who made them; antes stay
        state.seats[s].stack += amount
        state.pot -= amount
        _paid(state, s, -amount)
    state.hand = None
    state.deck = ()  # the cards go back: the next deal shuffles a whole deck
    state.antes_in_pot = True


def _ended(state: TableState, e: ev.TableEnded) -> None:
    for s, amount in e.refunds.items():
        state.seats[s].stack += amount
    state.pot = state.low_pot = state.reserve = state.side_pot = 0
    for s, amount in e.cash_outs.items():
        seat = state.seats[s]
        seat.stack -= amount
        seat.status = LEFT
        state.cashed_out += amount
    state.game_paid, state.client_seeds = {}, {}
    state.game_running, state.grace_until = False, None
    state.ended = True


_APPLY = {
    ev.TableCreated: _table_created,
    ev.PlayerSeated: _player_seated,
    ev.ChipsAdded: _chips_added,
    ev.PlayerSatOut: _sat_out,
    ev.PlayerSatIn: _sat_in,
    ev.PlayerLeft: _left,
    ev.ClientSeedSet: _client_seed_set,
    ev.HandDealt: _dealt,
    ev.DecisionMade: _decided,
    ev.DeclarationsRevealed: _revealed,
    ev.CardPassed: _card_passed,
    ev.CardsPassed: _cards_passed,
    ev.CommunityCardDealt: _community,
    ev.CardsDrawn: _drawn,
    ev.BetMade: _bet,
    ev.HandResolved: _resolved,
    ev.PlayersOutOfGame: _out_of_game,
    ev.HandVoided: _voided,
    ev.TableEnded: _ended,
}


def evolve(state: TableState, event: ev.Event) -> TableState:
    """Apply one event to `state` (in place) and return it; the version counts events."""
    _APPLY[type(event)](state, event)  # type: ignore[operator]
    state.version += 1
    return state


def replay(events: Iterable[ev.Event], state: TableState | None = None) -> TableState:
    """Fold `events` over `state` (default: the empty table)."""
    state = state if state is not None else TableState()
    for event in events:
        evolve(state, event)
    return state
