"""The game's commands as values, and the one call that decides any of them.

Each command is a frozen dataclass holding everything the rules need to decide it: what the
request asked (a seat, a decision, a card), and what the application looked up before
deciding (a player's exclusion or loss-limit allowances, the seeds it drew). The application
service makes the command from the loaded state and calls `decide(state, now, command)`, which
hands it to the command's function in `service.rules.commands` (or, for the clock's
`ActWhenDue`, `service.rules.clock`). Like those, `decide` reads the state and returns the
events; it changes nothing, and does no I/O (time and randomness come in as `now` and seeds).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import assert_never

from . import commands, protection
from . import events as ev
from .clock import act_when_due
from .limits import Allowance
from .protection import SessionLimits
from .ruleset import Ruleset
from .state import TableState


@dataclass(frozen=True)
class CreateTable:
    """Open table `table_id` with `rules` for `tenant`; `first_seed` is committed for its
    first hand."""

    table_id: str
    rules: Ruleset
    first_seed: bytes = b""
    tenant: str = "default"


@dataclass(frozen=True)
class SeatPlayer:
    """Seat `player_id` with `buy_in` chips at `seat` (None: the first free one); a player
    excluded until `excluded_until` (the application's look-up: an exclusion or a time-out)
    cannot sit before then; their session runs under `limits`. `transaction_id`: the casino
    wallet's confirmed debit paying for the chips ("" for none)."""

    player_id: str
    buy_in: int
    seat: int | None = None
    excluded_until: str | None = None
    transaction_id: str = ""
    limits: SessionLimits | None = None


@dataclass(frozen=True)
class TopUp:
    """Add `amount` chips to the stack at `seat` (`transaction_id`: the wallet's confirmed
    debit paying for them; a wallet-funded seat is topped up only so)."""

    seat: int
    amount: int
    transaction_id: str = ""


@dataclass(frozen=True)
class SitOut:
    """The player at `seat` sits out from the next hand."""

    seat: int


@dataclass(frozen=True)
class SitIn:
    """The player at `seat` comes back for the next hand."""

    seat: int


@dataclass(frozen=True)
class Leave:
    """The player at `seat` leaves and cashes out."""

    seat: int


@dataclass(frozen=True)
class SetClientSeed:
    """The player at `seat` chooses their client seed for the next deal."""

    seat: int
    client_seed: str


@dataclass(frozen=True)
class Deal:
    """Deal the next hand: `seed` when the table committed to none, `next_seed` committed
    for the one after; `stacked` (sandbox only) fixes cards; `allowances` are the seated
    players' loss-limit allowances (the application's look-up; a player without a limit is
    not in it)."""

    seed: bytes
    client_seed: str = ""
    stacked: Mapping[str, Sequence[str]] | None = None
    next_seed: bytes = b""
    allowances: Mapping[str, Allowance] = field(default_factory=dict)


@dataclass(frozen=True)
class Declare:
    """The player at `seat` declares `decision` (in or out); `allowance` is their loss-limit
    allowance (None: no limit, or declaring out)."""

    seat: int
    decision: str
    allowance: Allowance | None = None


@dataclass(frozen=True)
class PassCard:
    """The player at `seat` passes `card` on."""

    seat: int
    card: str


@dataclass(frozen=True)
class Draw:
    """The player at `seat` discards `discard` and draws as many."""

    seat: int
    discard: tuple[str, ...]


@dataclass(frozen=True)
class Bet:
    """The player at `seat` acts in the betting round: check, bet, call, raise or fold."""

    seat: int
    action: str


@dataclass(frozen=True)
class CloseAtDeadline:
    """Close the waiting phase whose deadline passed, for the players who let it pass."""


@dataclass(frozen=True)
class Resolve:
    """Showdown and settlement of the hand in play."""


@dataclass(frozen=True)
class VoidHand:
    """Call the hand in play off, for `reason`."""

    reason: str


@dataclass(frozen=True)
class EndTable:
    """End the table between hands: pots back, everyone cashed out."""


@dataclass(frozen=True)
class GoAway:
    """The player at `seat` goes away (`by` "player" or "operator")."""

    seat: int
    by: str


@dataclass(frozen=True)
class ComeBack:
    """The away player at `seat` is back (`by` "player" or "operator")."""

    seat: int
    by: str


@dataclass(frozen=True)
class AnswerRealityCheck:
    """The answer ("continue" or "stop") to the reality check pending at `seat`."""

    seat: int
    answer: str
    by: str


@dataclass(frozen=True)
class EndSession:
    """A time-out or exclusion (`reason`) until `until` started while `player_id` may be
    seated here: their session ends (the application's command, from the limits)."""

    player_id: str
    reason: str
    until: str | None


@dataclass(frozen=True)
class TightenSession:
    """`player_id`'s limits were lowered while they may be seated here: their session runs
    under the stricter ones at once (the application's command, from the limits)."""

    player_id: str
    limits: SessionLimits


@dataclass(frozen=True)
class ActWhenDue:
    """Whatever falls due at `now` (the clock's command: `service.rules.clock`)."""


Command = (
    CreateTable
    | SeatPlayer
    | TopUp
    | SitOut
    | SitIn
    | Leave
    | SetClientSeed
    | Deal
    | Declare
    | PassCard
    | Draw
    | Bet
    | CloseAtDeadline
    | Resolve
    | VoidHand
    | EndTable
    | GoAway
    | ComeBack
    | AnswerRealityCheck
    | EndSession
    | TightenSession
    | ActWhenDue
)
"""Any game command."""


def decide(state: TableState, now: datetime, command: Command) -> list[ev.Event]:
    """The events `command` makes on `state` at `now` (a `RuleViolation` saying why not)."""
    match command:
        case CreateTable(table_id, rules, first_seed, tenant):
            return commands.create_table(table_id, rules, now, first_seed, tenant)
        case SeatPlayer(player_id, buy_in, seat, excluded_until, transaction_id, limits):
            return commands.seat_player(
                state, player_id, buy_in, now, seat, excluded_until, limits, transaction_id
            )
        case TopUp(seat, amount, transaction_id):
            return commands.top_up(state, seat, amount, now, transaction_id)
        case SitOut(seat):
            return commands.sit_out(state, seat, now)
        case SitIn(seat):
            return commands.sit_in(state, seat, now)
        case Leave(seat):
            return commands.leave(state, seat, now)
        case SetClientSeed(seat, client_seed):
            return commands.set_client_seed(state, seat, client_seed, now)
        case Deal(seed, client_seed, stacked, next_seed, allowances):
            return commands.deal(state, seed, now, client_seed, stacked, next_seed, allowances)
        case Declare(seat, decision, allowance):
            return commands.declare(state, seat, decision, now, allowance)
        case PassCard(seat, card):
            return commands.pass_card(state, seat, card, now)
        case Draw(seat, discard):
            return commands.draw(state, seat, discard, now)
        case Bet(seat, action):
            return commands.bet(state, seat, action, now)
        case CloseAtDeadline():
            return commands.close_at_deadline(state, now)
        case Resolve():
            return commands.resolve(state, now)
        case VoidHand(reason):
            return commands.void_hand(state, reason, now)
        case EndTable():
            return commands.end_table(state, now)
        case GoAway(seat, by):
            return protection.go_away(state, seat, by, now)
        case ComeBack(seat, by):
            return protection.come_back(state, seat, by, now)
        case AnswerRealityCheck(seat, answer, by):
            return protection.answer_reality_check(state, seat, answer, by, now)
        case EndSession(player_id, reason, until):
            return protection.end_session_of(state, player_id, reason, until, now)
        case TightenSession(player_id, limits):
            return protection.tighten_session_of(state, player_id, limits, now)
        case ActWhenDue():
            return act_when_due(state, now)
        case _:
            assert_never(command)
