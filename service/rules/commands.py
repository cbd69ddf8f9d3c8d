"""Commands: each reads a state and returns the events it decides; none changes the state.

Every command `x` has `verify_x(...)`, which raises a `RuleViolation` saying why not, and
`can_x(...)`, its yes/no form, so the API and clients ask the rules instead of repeating them.
Randomness (the deck seed) and time (`now`) are arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from . import events as ev
from .cards import deck_context, parse_cards, seed_commitment, shuffled_deck
from .errors import GutsError, InvalidCard, NotYourTurn, RuleViolation, UnknownSeat
from .ruleset import MAX_CHIPS, Ruleset
from .settlement import settle
from .state import ACTIVE, DECLARING, LEFT, SHOWDOWN, SITTING_OUT, WAITING, TableState
from .times import iso, later, parse_iso

DECISIONS = ("in", "out")


class InvalidCommand(GutsError):
    """A command whose arguments are malformed (not a state problem): a 422, not a 409."""


def _can(verify: Callable[..., Any], *args: Any) -> bool:
    try:
        verify(*args)
    except GutsError:
        return False
    return True


def _require_table(state: TableState) -> None:
    if not state.exists:
        raise RuleViolation("the table does not exist")


def _amount(value: int, name: str, minimum: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= MAX_CHIPS:
        raise InvalidCommand(f"{name} must be a whole number from {minimum} to {MAX_CHIPS}", name)


# --- table and seats --------------------------------------------------------------------------


def create_table(table_id: str, rules: Ruleset, now: datetime) -> list[ev.Event]:
    """Open a table with a resolved ruleset."""
    return [ev.TableCreated(table_id=table_id, rules=rules.to_dict(), at=iso(now))]


def _seat_holder(state: TableState, seat: int) -> Any:
    holder = state.seats.get(seat)
    if holder is None or holder.status == LEFT:
        raise UnknownSeat(f"seat {seat} is empty")
    return holder


def free_seat(state: TableState) -> int | None:
    """The lowest empty seat, or None when the table is full."""
    for seat in range(state.rules.seats):
        holder = state.seats.get(seat)
        if holder is None or holder.status == LEFT:
            return seat
    return None


def verify_seat_player(state: TableState, player_id: str, buy_in: int, seat: int | None) -> int:
    """Check a player may sit down; returns the seat they would take."""
    _require_table(state)
    _amount(buy_in, "buy_in")
    for holder in state.seated():
        if holder.player_id == player_id:
            raise RuleViolation(f"player {player_id!r} is already seated at seat {holder.seat}")
    if seat is None:
        found = free_seat(state)
        if found is None:
            raise RuleViolation(f"the table is full ({state.rules.seats} seats)")
        return found
    if not 0 <= seat < state.rules.seats:
        raise InvalidCommand(f"seat must be from 0 to {state.rules.seats - 1}", "seat")
    taken = state.seats.get(seat)
    if taken is not None and taken.status != LEFT:
        raise RuleViolation(f"seat {seat} is taken")
    return seat


def seat_player(
    state: TableState, player_id: str, buy_in: int, now: datetime, seat: int | None = None
) -> list[ev.Event]:
    """Seat a player with `buy_in` chips; mid-game they wait for the next game."""
    chosen = verify_seat_player(state, player_id, buy_in, seat)
    return [ev.PlayerSeated(seat=chosen, player_id=player_id, buy_in=buy_in, at=iso(now))]


def _in_live_hand(state: TableState, seat: int) -> bool:
    return state.hand is not None and seat in state.hand.order


def verify_top_up(state: TableState, seat: int, amount: int) -> None:
    """A player may add chips, but not while dealt into a live hand."""
    _require_table(state)
    _amount(amount, "amount")
    _seat_holder(state, seat)
    if _in_live_hand(state, seat):
        raise RuleViolation(f"seat {seat} is in hand {state.hands_dealt}; top up after it")


def top_up(state: TableState, seat: int, amount: int, now: datetime) -> list[ev.Event]:
    """Add `amount` chips to a seated player's stack."""
    verify_top_up(state, seat, amount)
    return [ev.ChipsAdded(seat=seat, amount=amount, at=iso(now))]


def verify_sit_out(state: TableState, seat: int) -> None:
    """A player may sit out unless already out or dealt into a live hand."""
    _require_table(state)
    if _seat_holder(state, seat).status == SITTING_OUT:
        raise RuleViolation(f"seat {seat} is already sitting out")
    if _in_live_hand(state, seat):
        raise RuleViolation(f"seat {seat} is in hand {state.hands_dealt}; sit out after it")


def sit_out(state: TableState, seat: int, now: datetime) -> list[ev.Event]:
    """Sit a player out: no antes and no cards until they sit in."""
    verify_sit_out(state, seat)
    return [ev.PlayerSatOut(seat=seat, at=iso(now))]


def verify_sit_in(state: TableState, seat: int) -> None:
    """Only a sitting-out player can sit in."""
    _require_table(state)
    if _seat_holder(state, seat).status != SITTING_OUT:
        raise RuleViolation(f"seat {seat} is not sitting out")


def sit_in(state: TableState, seat: int, now: datetime) -> list[ev.Event]:
    """Bring a player back; mid-game they wait for the next game."""
    verify_sit_in(state, seat)
    return [ev.PlayerSatIn(seat=seat, at=iso(now))]


def verify_leave(state: TableState, seat: int) -> None:
    """A player may leave and cash out, but not in the middle of a hand they are dealt into."""
    _require_table(state)
    _seat_holder(state, seat)
    if _in_live_hand(state, seat):
        raise RuleViolation(f"seat {seat} is in hand {state.hands_dealt}; leave after it")


def leave(state: TableState, seat: int, now: datetime) -> list[ev.Event]:
    """The player leaves with their whole stack."""
    verify_leave(state, seat)
    return [ev.PlayerLeft(seat=seat, cash_out=state.seats[seat].stack, at=iso(now))]


# --- dealing ----------------------------------------------------------------------------------


def _ante_due(state: TableState, seat: int, new_game: bool) -> int:
    rules = state.rules
    if state.antes_in_pot:
        return 0
    if new_game or (rules.ante_after_all_out and state.last_all_out):
        return rules.ante
    if rules.ante_rule == "every_hand":
        skips = rules.winner_skips_ante and seat in state.last_winners
        return 0 if skips else rules.ante
    if rules.ante_rule == "unless_matched":
        return 0 if seat in state.last_matched else rules.ante
    return 0


def match_owed(rules: Ruleset, pot: int) -> int:
    """What a losing in-player must pay for a pot of `pot` chips under the cap rules."""
    if rules.cap_mode in ("cap", "max_match"):
        return min(pot, rules.cap_amount)
    return pot


class _Lineup:
    """Who is dealt into the next hand, what they ante and who is taken out of the game."""

    def __init__(self, state: TableState, now: datetime, new_game: bool) -> None:
        self.new_game = new_game
        wanted = (ACTIVE, WAITING) if new_game else (ACTIVE,)
        candidates = [s for s in state.seated() if s.status in wanted]
        self.removed: dict[int, str] = {}
        self.antes: dict[int, int] = {}
        for holder in candidates:
            due = _ante_due(state, holder.seat, new_game)
            if holder.stack < max(due, 1):
                self.removed[holder.seat] = "cannot_ante"
            else:
                self.antes[holder.seat] = due
        self.short: list[int] = []
        if state.rules.short_stack == "cover":
            owed = match_owed(state.rules, state.pot + sum(self.antes.values()))
            self.short = [s for s, due in self.antes.items() if state.seats[s].stack < due + owed]
            for s in self.short:
                del self.antes[s]
                self.removed[s] = "cannot_cover"
        self.players = sorted(self.antes)
        # Waiting players who are not dealt in are not "removed": they keep waiting.
        self.removed = {s: r for s, r in self.removed.items() if state.seats[s].status == ACTIVE}


def _lineup(state: TableState, now: datetime) -> _Lineup:
    lineup = _Lineup(state, now, new_game=not state.game_running)
    if lineup.short and state.grace_until and now < parse_iso(state.grace_until):
        seats = ", ".join(str(s) for s in lineup.short)
        raise RuleViolation(
            f"seat(s) {seats} cannot cover the pot; they have until {state.grace_until} to top up"
        )
    if len(lineup.players) < 2 and not lineup.new_game:
        # The game cannot go on with fewer than two players: a new game starts around the
        # pot that is there, and everyone seated and willing is dealt in.
        lineup = _Lineup(state, now, new_game=True)
    if len(lineup.players) < 2:
        raise RuleViolation("at least two players who can pay the ante are needed to deal")
    return lineup


def verify_deal(state: TableState, now: datetime) -> None:
    """A hand can be dealt when none is in play and two or more players can take part."""
    _require_table(state)
    if state.hand is not None:
        raise RuleViolation(f"hand {state.hand.number} is still in play (phase {state.hand.phase})")
    _lineup(state, now)


def _clockwise(seats: Sequence[int], after: int, size: int) -> list[int]:
    return sorted(seats, key=lambda s: (s - after - 1) % size)


def _check_stacked(
    rules: Ruleset, stacked: Mapping[str, Sequence[str]], players: Sequence[int]
) -> dict[str, tuple[str, ...]]:
    fixed: dict[str, tuple[str, ...]] = {}
    seen: set[str] = set()
    for key, texts in stacked.items():
        field = f"stacked_deck.{key}"
        if key == "kitty":
            if not rules.kitty:
                raise InvalidCard("this table has no kitty", field)
        elif key != "next":
            if not key.isdigit() or int(key) not in players:
                raise InvalidCard(f"seat {key} is not dealt into this hand", field)
        cards = parse_cards(texts, field)
        if key != "next" and len(cards) != rules.cards:
            raise InvalidCard(f"a hand has exactly {rules.cards} cards", field)
        for card in cards:
            if card in seen:
                raise InvalidCard(f"card {card} appears twice", field)
            seen.add(card)
        fixed[key] = cards
    return fixed


def deal_from(
    deck: Sequence[str],
    order: Sequence[int],
    cards: int,
    kitty: bool,
    fixed: Mapping[str, Sequence[str]] | None = None,
) -> tuple[dict[str, tuple[str, ...]], tuple[str, ...]]:
    """Deal `cards` cards one at a time from the top of `deck` to each seat of `order` (and the
    kitty, last in each round); hands in `fixed` are already complete and are skipped.
    Returns each hand by position ("0", "3", "kitty") and the rest of the deck."""
    positions = [str(s) for s in order] + (["kitty"] if kitty else [])
    fixed = fixed or {}
    dealt: dict[str, list[str]] = {p: list(fixed.get(p, ())) for p in positions}
    top = 0
    for _ in range(cards):
        for p in positions:
            if len(dealt[p]) < cards:
                dealt[p].append(deck[top])
                top += 1
    return {p: tuple(hand) for p, hand in dealt.items()}, tuple(deck[top:])


def deal(
    state: TableState,
    seed: bytes,
    now: datetime,
    client_seed: str = "",
    stacked: Mapping[str, Sequence[str]] | None = None,
) -> list[ev.Event]:
    """Collect antes and deal the next hand from the deck that `seed` derives.

    Cards go out one at a time, from the button's left, with the kitty (when on) dealt last in
    each round. `stacked` (sandbox only; the API decides who may) fixes seats', the kitty's and
    the next cards off the deck; every other card comes from the shuffled deck as usual.
    """
    verify_deal(state, now)
    rules = state.rules
    lineup = _lineup(state, now)
    players = lineup.players
    button = state.button if state.button is not None else players[0]
    order = _clockwise(players, button, rules.seats)
    hand_no = state.hands_dealt + 1
    fixed = _check_stacked(rules, stacked or {}, players)
    needed = (len(order) + (1 if rules.kitty else 0)) * rules.cards
    if rules.deck == "carry_over" and len(state.deck) >= needed and not fixed:
        deck, reshuffled = list(state.deck), False
    else:
        deck = shuffled_deck(seed, deck_context(state.table_id, hand_no, client_seed))
        reshuffled = True
    if fixed:
        taken = {card for cards in fixed.values() for card in cards}
        deck = list(fixed.get("next", ())) + [c for c in deck if c not in taken]
    dealt, rest = deal_from(deck, order, rules.cards, rules.kitty, fixed)
    new_game = lineup.new_game
    return [
        ev.HandDealt(
            hand=hand_no,
            game=state.game + 1 if new_game else state.game,
            new_game=new_game,
            button=button,
            order=tuple(order),
            antes={s: lineup.antes[s] for s in order if lineup.antes[s]},
            removed=lineup.removed,
            cards={s: dealt[str(s)] for s in order},
            kitty=dealt.get("kitty", ()),
            deck=rest,
            reshuffled=reshuffled,
            seed=seed.hex(),
            commitment=seed_commitment(seed),
            client_seed=client_seed,
            stacked=bool(fixed),
            deadline=later(now, rules.decision_timeout_s),
            at=iso(now),
        )
    ]


# --- declaring --------------------------------------------------------------------------------


def _require_declaring(state: TableState) -> Any:
    _require_table(state)
    hand = state.hand
    if hand is None:
        raise RuleViolation("no hand is in play")
    if hand.phase != DECLARING:
        raise RuleViolation(f"declarations for hand {hand.number} are complete")
    return hand


def verify_declare(state: TableState, seat: int, decision: str, now: datetime) -> None:
    """Why `seat` may not declare `decision` now, if it may not."""
    if decision not in DECISIONS:
        raise InvalidCommand("decision must be one of: in, out", "decision")
    hand = _require_declaring(state)
    if seat not in hand.order:
        raise RuleViolation(f"seat {seat} is not dealt into hand {hand.number}")
    if seat in hand.decisions:
        raise RuleViolation(f"seat {seat} has already declared in hand {hand.number}")
    if state.rules.declare == "sequential" and hand.on_turn() != seat:
        raise NotYourTurn(f"it is seat {hand.on_turn()}'s turn to declare")
    if now >= parse_iso(hand.deadline):
        raise RuleViolation(f"the deadline to declare passed at {hand.deadline}")


def can_declare(state: TableState, seat: int, decision: str, now: datetime) -> bool:
    """Whether `seat` may declare `decision` now."""
    return _can(verify_declare, state, seat, decision, now)


def _after_decision(state: TableState, decided: dict[int, str], now: datetime) -> list[ev.Event]:
    """The events that follow once `decided` are recorded: auto-in, reveal."""
    hand = state.hand
    assert hand is not None
    out: list[ev.Event] = []
    if state.rules.declare == "sequential" and state.rules.dealer_auto_in:
        dealer = hand.order[-1]
        before = hand.order[:-1]
        if dealer not in decided and all(decided.get(s) == "out" for s in before):
            out.append(
                ev.DecisionMade(
                    hand=hand.number,
                    seat=dealer,
                    decision="in",
                    by="auto_in",
                    deadline=None,
                    at=iso(now),
                )
            )
            decided = {**decided, dealer: "in"}
    if len(decided) == len(hand.order):
        revealed = {s: decided[s] for s in hand.order}
        out.append(ev.DeclarationsRevealed(hand=hand.number, decisions=revealed, at=iso(now)))
    return out


def declare(state: TableState, seat: int, decision: str, now: datetime) -> list[ev.Event]:
    """Record `seat`'s decision; reveal all decisions when it was the last one."""
    verify_declare(state, seat, decision, now)
    hand = state.hand
    assert hand is not None
    sequential = state.rules.declare == "sequential"
    deadline = later(now, state.rules.decision_timeout_s) if sequential else None
    first = ev.DecisionMade(
        hand=hand.number,
        seat=seat,
        decision=decision,
        by="player",
        deadline=deadline,
        at=iso(now),
    )
    return [first, *_after_decision(state, {**hand.decisions, seat: decision}, now)]


def verify_close_declarations(state: TableState, now: datetime) -> None:
    """Declarations can be closed by the platform only once the deadline has passed."""
    hand = _require_declaring(state)
    if now < parse_iso(hand.deadline):
        raise RuleViolation(f"the deadline {hand.deadline} has not passed yet")


def close_declarations(state: TableState, now: datetime) -> list[ev.Event]:
    """At the deadline, undecided seats are out (decided by the platform, cards mucked).

    Simultaneous: every undecided seat. Sequential: the seat on turn, and the next seat's
    turn starts with a fresh deadline.
    """
    verify_close_declarations(state, now)
    hand = state.hand
    assert hand is not None
    sequential = state.rules.declare == "sequential"
    late = [hand.order[hand.turn]] if sequential else hand.undecided()
    deadline = later(now, state.rules.decision_timeout_s) if sequential else None
    out: list[ev.Event] = [
        ev.DecisionMade(
            hand=hand.number,
            seat=s,
            decision="out",
            by="platform",
            deadline=deadline,
            at=iso(now),
        )
        for s in late
    ]
    decided = {**hand.decisions, **{s: "out" for s in late}}
    return [*out, *_after_decision(state, decided, now)]


# --- showdown ---------------------------------------------------------------------------------


def verify_resolve(state: TableState) -> None:
    """A hand can be resolved once its declarations are complete."""
    _require_table(state)
    if state.hand is None:
        raise RuleViolation("no hand is in play")
    if state.hand.phase != SHOWDOWN:
        waiting = ", ".join(str(s) for s in state.hand.undecided())
        raise RuleViolation(
            f"declarations for hand {state.hand.number} are not complete (waiting for seat(s) "
            f"{waiting})"
        )


def can_resolve(state: TableState) -> bool:
    """Whether the hand in play can be resolved now."""
    return _can(verify_resolve, state)


def resolve(state: TableState, now: datetime) -> list[ev.Event]:
    """Showdown and settlement of the hand in play."""
    verify_resolve(state)
    return [settle(state, now)]


def verify_void(state: TableState) -> None:
    """Only a hand in play can be voided."""
    _require_table(state)
    if state.hand is None:
        raise RuleViolation("no hand is in play")


def void_hand(state: TableState, reason: str, now: datetime) -> list[ev.Event]:
    """Void the hand in play (a misdeal): cards return, antes stay in the pot."""
    verify_void(state)
    assert state.hand is not None
    return [ev.HandVoided(hand=state.hand.number, reason=reason[:200], at=iso(now))]


__all__ = [
    "DECISIONS",
    "InvalidCommand",
    "can_declare",
    "can_resolve",
    "close_declarations",
    "create_table",
    "deal",
    "declare",
    "free_seat",
    "leave",
    "match_owed",
    "resolve",
    "seat_player",
    "sit_in",
    "sit_out",
    "top_up",
    "verify_close_declarations",
    "verify_deal",
    "verify_declare",
    "verify_leave",
    "verify_resolve",
    "verify_seat_player",
    "verify_sit_in",
    "verify_sit_out",
    "verify_top_up",
    "verify_void",
    "void_hand",
]
