"""The table's state as data: the seats, the hand in play and the table, and the words for
seat statuses, phases and betting actions.

Only ``evolve`` (service/rules/state.py) changes a state; everything else reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .ruleset import Ruleset
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
    wallet: bool = False  # the chips came from the casino's wallet (a confirmed debit)
    # Player protection (protection.py): the session since `since`, the chips brought
    # (`put_in`: buy-in and top-ups; the session's net result is stack - put_in), its limits,
    # reality checks made, and why the player is dealt out of new hands, if they are.
    since: str = ""
    put_in: int = 0
    reality_check_minutes: int | None = None
    session_limit_minutes: int | None = None
    checks: int = 0
    check_pending: bool = False  # a reality check waits for the player's answer
    away: bool = False
    missed: int = 0  # deadlines missed in a row
    leaving: str = ""  # why the session ended ("": it has not); cashed out when no hand holds it

    @property
    def dealt_out(self) -> bool:
        """Whether the player is kept out of new hands: away, a reality check unanswered, or
        their session ended."""
        return self.away or self.check_pending or bool(self.leaving)


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
