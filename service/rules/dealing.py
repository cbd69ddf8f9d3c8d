"""Dealing: who is dealt in and what they ante, the seeded deck, and voiding a hand."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from . import events as ev
from .cards import hand_context, parse_cards, seed_commitment, shuffled_deck
from .client_seeds import seeds_for_deal, verify_operator_seed
from .errors import InvalidCard, RuleViolation
from .guards import require_table
from .limits import Allowance, can_ante
from .ruleset import Ruleset
from .state import ACTIVE, WAITING, TableState
from .times import iso, later, parse_iso

Allowances = Mapping[str, Allowance]
"""Players' loss-limit allowances, by player id (a player without a limit is not in it)."""
LOSS_LIMIT = "loss_limit"
"""Why a player is not dealt in when their ante would take them past their loss limit."""


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


def _most_owed(state: TableState, antes: list[int]) -> int:
    """The most a player could have to match after this hand (hi-lo: both pots, as "both")."""
    if not state.rules.hi_lo:
        return match_owed(state.rules, state.pot + sum(antes))
    low = sum(a // 2 for a in antes)  # each ante's odd chip goes to the high pot
    high = sum(antes) - low
    return match_owed(state.rules, state.pot + high) + match_owed(state.rules, state.low_pot + low)


class _Lineup:
    """Who is dealt into the next hand, what they ante and who is taken out of the game."""

    def __init__(
        self, state: TableState, new_game: bool, allowances: Allowances | None = None
    ) -> None:
        self.new_game = new_game
        wanted = (ACTIVE, WAITING) if new_game else (ACTIVE,)
        # Away, a reality check unanswered, a session ended: dealt out (protection.py).
        candidates = [s for s in state.seated() if s.status in wanted and not s.dealt_out]
        self.removed: dict[int, str] = {}
        self.antes: dict[int, int] = {}
        allowances = allowances or {}
        for holder in candidates:
            due = _ante_due(state, holder.seat, new_game)
            if holder.stack < max(due, 1):
                self.removed[holder.seat] = "cannot_ante"
            elif not can_ante(due, allowances.get(holder.player_id)):
                self.removed[holder.seat] = LOSS_LIMIT
            else:
                self.antes[holder.seat] = due
        self.short: list[int] = []
        if state.rules.short_stack == "cover":
            owed = _most_owed(state, list(self.antes.values()))
            self.short = [s for s, due in self.antes.items() if state.seats[s].stack < due + owed]
            for s in self.short:
                del self.antes[s]
                self.removed[s] = "cannot_cover"
        self.players = sorted(self.antes)
        # Waiting players who are not dealt in are not "removed": they keep waiting.
        self.removed = {s: r for s, r in self.removed.items() if state.seats[s].status == ACTIVE}


def short_of_cover(state: TableState) -> list[int]:
    """Seats in the game that cannot cover what they could owe in the next hand (cover rule)."""
    if state.rules.short_stack != "cover" or not state.game_running:
        return []
    return list(_Lineup(state, new_game=False).short)


def verify_enforce_cover(state: TableState, now: datetime) -> None:
    """The cover grace can be enforced between hands, once it is over, on short seats."""
    require_table(state)
    if state.hand is not None:
        raise RuleViolation("a hand is in play")
    if state.grace_until is None or now < parse_iso(state.grace_until):
        raise RuleViolation("no top-up grace has ended")
    if not short_of_cover(state):
        raise RuleViolation("every player in the game can cover the pot")


def enforce_cover(state: TableState, now: datetime) -> list[ev.Event]:
    """When the top-up grace ends, players who still cannot cover sit out the rest of the game."""
    verify_enforce_cover(state, now)
    removed = {s: "cannot_cover" for s in short_of_cover(state)}
    return [ev.PlayersOutOfGame(seats=removed, at=iso(now))]


def _lineup(state: TableState, now: datetime, allowances: Allowances | None = None) -> _Lineup:
    lineup = _Lineup(state, new_game=not state.game_running, allowances=allowances)
    if lineup.short and state.grace_until and now < parse_iso(state.grace_until):
        seats = ", ".join(str(s) for s in lineup.short)
        raise RuleViolation(
            f"seat(s) {seats} cannot cover the pot; they have until {state.grace_until} to top up"
        )
    if len(lineup.players) < 2 and not lineup.new_game:
        # The game cannot go on with fewer than two players: a new game starts around the
        # pot that is there, and everyone seated and willing is dealt in.
        lineup = _Lineup(state, new_game=True, allowances=allowances)
    if len(lineup.players) < 2:
        raise RuleViolation("at least two players who can pay the ante are needed to deal")
    return lineup


def verify_deal(
    state: TableState, now: datetime, client_seed: str = "", allowances: Allowances | None = None
) -> None:
    """A hand can be dealt when none is in play and two or more players can take part; the
    operator's `client_seed` only when no player dealt in chose a seed for the hand. A player
    whose ante would take them past their loss limit (`allowances`, by player id) is not dealt
    in: they wait for the next game (removed as "loss_limit")."""
    require_table(state)
    if state.hand is not None:
        raise RuleViolation(f"hand {state.hand.number} is still in play (phase {state.hand.phase})")
    lineup = _lineup(state, now, allowances)
    verify_operator_seed(client_seed, seeds_for_deal(state, lineup.players))


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


def _hand_seeds(
    state: TableState, hand_no: int, players: Sequence[int], client_seed: str, seed: bytes
) -> tuple[bytes, dict[int, str], bytes]:
    """The seeds of hand `hand_no`: its server seed (the one committed before; `seed` only when
    none was), the client seeds its `players` chose, and the deck context that mixes those and
    the operator's `client_seed` in."""
    player_seeds = seeds_for_deal(state, players)
    context = hand_context(state.table_id, hand_no, client_seed, player_seeds)
    return bytes.fromhex(state.next_seed) if state.next_seed else seed, player_seeds, context


def _deal_cards(
    state: TableState,
    order: Sequence[int],
    seed: bytes,
    context: bytes,
    fixed: Mapping[str, Sequence[str]],
) -> tuple[dict[str, tuple[str, ...]], tuple[str, ...], bool]:
    """Deal the hand (`deal_from`): each hand by position, the rest of the deck, and whether
    the deck was shuffled for this hand. With `deck: carry_over` the hand is dealt from what is
    left of the last deck while that holds enough for it, else from the deck `seed` and
    `context` shuffle. Stacked cards (`fixed`) are taken out of the deck, and the stacked
    "next" cards put on top of its rest."""
    rules = state.rules
    needed = (len(order) + (1 if rules.kitty else 0)) * rules.cards
    needed += rules.community_cards + rules.draw
    if rules.deck == "carry_over" and len(state.deck) >= needed and not fixed:
        deck, reshuffled = list(state.deck), False
    else:
        deck = shuffled_deck(seed, context)
        reshuffled = True
    if fixed:
        taken = {card for cards in fixed.values() for card in cards}
        deck = [c for c in deck if c not in taken]
    dealt, rest = deal_from(deck, order, rules.cards, rules.kitty, fixed)
    return dealt, (*fixed.get("next", ()), *rest), reshuffled


def deal(
    state: TableState,
    seed: bytes,
    now: datetime,
    client_seed: str = "",
    stacked: Mapping[str, Sequence[str]] | None = None,
    next_seed: bytes = b"",
    allowances: Allowances | None = None,
) -> list[ev.Event]:
    """Collect antes and deal the next hand from the deck its seed derives.

    The hand's seed is the one the table committed to before (`state.next_seed`); `seed` is
    used only when nothing was committed. `next_seed` is committed for the following hand, so
    the house's part of every deck is fixed before the client seeds that complete it are
    known: the operator's `client_seed`, or the seeds the players dealt in chose for this
    hand (`client_seeds`), mixed in with the v2 context (then the operator gives none).

    Cards go out one at a time, from the button's left, with the kitty (when on) dealt last in
    each round. `stacked` (sandbox only; the API decides who may) fixes seats', the kitty's and
    the next cards off the deck; every other card comes from the shuffled deck as usual.
    """
    verify_deal(state, now, client_seed, allowances)
    rules = state.rules
    lineup = _lineup(state, now, allowances)
    players = lineup.players
    button = state.button if state.button is not None else players[0]
    order = _clockwise(players, button, rules.seats)
    hand_no = state.hands_dealt + 1
    seed, player_seeds, context = _hand_seeds(state, hand_no, players, client_seed, seed)
    fixed = _check_stacked(rules, stacked or {}, players)
    dealt, rest, reshuffled = _deal_cards(state, order, seed, context, fixed)
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
            stacks={s: state.seats[s].stack for s in order},
            players={s: state.seats[s].player_id for s in order},
            next_seed=next_seed.hex(),
            deck_context=context.decode(),
            next_commitment=seed_commitment(next_seed) if next_seed else "",
            client_seeds=player_seeds,
        )
    ]


def verify_void(state: TableState) -> None:
    """Only a hand in play can be voided."""
    require_table(state)
    if state.hand is None:
        raise RuleViolation("no hand is in play")


def void_hand(state: TableState, reason: str, now: datetime) -> list[ev.Event]:
    """Void the hand in play (a misdeal): cards return, antes stay in the pot."""
    verify_void(state)
    assert state.hand is not None
    return [ev.HandVoided(hand=state.hand.number, reason=reason[:200], at=iso(now))]
