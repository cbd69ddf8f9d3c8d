"""Showdown and settlement: who wins what, who matches what, where the pot goes next.

Let P be the pot in play. Nobody in: P carries over (with the wimp rule the best hand pays a
penalty). One in: they take P unseen (with a kitty they must beat it). Two or more: the best
hand wins P (ties split, odd chips from the button's left), and losers match P (all of them, or
only the lowest). Caps, reserve and short stacks then bound what moves.

With a betting round, P includes the bets, and only the in-players who did not fold contest
it; the folders lost and match too. They match the pot as it was declared (P without the
bets, `match_basis: declared`) or P itself (`after_betting`). A fold counts as the lowest
hand, so with `match: lowest_loser` the folders are the ones who pay when anyone folded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import combinations

from . import events as ev
from .ranking import low_strength
from .ruleset import Ruleset
from .state import LEFT, SITTING_OUT, TableState
from .times import iso, later
from .wild import make_wild_evaluator

Score = Callable[[Sequence[str]], int]

NOBODY_IN = "nobody_in"
UNCONTESTED = "uncontested"
SHOWDOWN = "showdown"
KITTY_WINS = "kitty_wins"
ALL_TIED = "all_tied"
BEATS_KITTY = "beats_kitty"  # a lone in-player beat the kitty: they win, nobody matches
OTHERS_FOLDED = "others_folded"  # every other in-player folded: the last takes P unseen
RAKED = (SHOWDOWN, ALL_TIED)
"""The outcomes whose pot is won at a showdown of two or more in-players: only they are raked
(an uncontested pot, a lone player against the kitty, a pot the others folded to, are not)."""


def rake_of(rules: Ruleset, outcome: str, pot_won: int) -> int:
    """The house's share of `pot_won`, the whole pot before it is split: `rake_percent` of
    it, rounded down, at most `rake_cap` (0: no cap), for a pot decided at a showdown."""
    if outcome not in RAKED or not rules.rake_basis_points:
        return 0
    rake = pot_won * rules.rake_basis_points // 10_000
    return min(rake, rules.rake_cap) if rules.rake_cap else rake


def evaluator_for(rules: Ruleset, low: bool = False) -> Callable[[Sequence[str]], int]:
    """The hand-strength function the ruleset plays with (higher is better); wild cards
    become what makes the best hand (with `low`, the lowest)."""
    return make_wild_evaluator(
        rules.cards,
        rules.wild,
        straights_and_flushes=rules.straights_and_flushes,
        ace_low_straight=rules.ace_low_straight,
        suit_tiebreak=rules.suit_tiebreak,
        low=low,
    )


def scorer(rules: Ruleset, community: Sequence[str], low: bool = False) -> Score:
    """How a hand scores at the showdown, higher is better.

    With a community card a player plays the best `cards`-card hand of their cards and it
    (for the low pot, the lowest hand). Low scores are negated strengths (`low_strength`), so
    the best low hand has the highest score too.
    """
    strength = evaluator_for(rules, low)
    if not community:
        return (lambda cards: low_strength(strength(cards))) if low else strength
    size = rules.cards

    def best(cards: Sequence[str]) -> int:
        values = [strength(c) for c in combinations((*cards, *community), size)]
        return low_strength(min(values)) if low else max(values)

    return best


def split(amount: int, winners: Sequence[int]) -> dict[int, int]:
    """`amount` shared equally; indivisible chips go one each in `winners`' order."""
    share, odd = divmod(amount, len(winners))
    return {seat: share + (1 if i < odd else 0) for i, seat in enumerate(winners)}


def _next_button(state: TableState, game_over: bool) -> int:
    hand = state.hand
    assert hand is not None
    if state.rules.button_moves == "game" and not game_over:
        return hand.button
    size = state.rules.seats
    for step in range(1, size + 1):
        seat = state.seats.get((hand.button + step) % size)
        if seat is not None and seat.status not in (SITTING_OUT, LEFT):
            return seat.seat
    return hand.button


@dataclass
class _Contest:
    """One pot's showdown among its contenders: who wins, who loses, who must match."""

    outcome: str
    winners: tuple[int, ...] = ()
    losers: list[int] = field(default_factory=list)
    shown: dict[int, tuple[str, ...]] = field(default_factory=dict)


def _contest(state: TableState, contenders: tuple[int, ...], score: Score) -> _Contest:
    hand = state.hand
    assert hand is not None
    rules = state.rules
    if not contenders:
        return _Contest(NOBODY_IN)
    if len(contenders) == 1 and not rules.kitty:
        return _Contest(UNCONTESTED, winners=contenders)
    scores = {s: score(hand.cards[s]) for s in contenders}
    shown = {s: hand.cards[s] for s in contenders}
    best = max(scores.values())
    if rules.kitty and score(hand.kitty) >= best:  # a tie with the kitty is a loss
        result = _Contest(KITTY_WINS, losers=list(contenders), shown=shown)
    else:
        winners = tuple(s for s in contenders if scores[s] == best)
        losers = [s for s in contenders if scores[s] != best]
        if losers:
            outcome = SHOWDOWN
        elif rules.kitty and len(winners) == 1:
            outcome = BEATS_KITTY
        else:
            outcome = ALL_TIED
        result = _Contest(outcome, winners, losers, shown)
    if result.losers and rules.match == "lowest_loser":
        lowest = min(scores[s] for s in result.losers)
        result.losers = [s for s in result.losers if scores[s] == lowest]
    return result


class _Ledger:
    """Stacks as settlement moves chips; nobody pays more than they have on the table."""

    def __init__(self, state: TableState) -> None:
        assert state.hand is not None
        self.stacks = {s: state.seats[s].stack for s in state.hand.order}

    def pay(self, seat: int, amount: int) -> int:
        paid = min(amount, self.stacks[seat])
        self.stacks[seat] -= paid
        return paid


def _pot_limits(rules: Ruleset, pot: int) -> tuple[int, int]:
    """(what a winner takes, what a loser pays) for a pot of `pot` under the cap rules."""
    owed = pot if rules.cap_mode in ("none", "reserve") else min(pot, rules.cap_amount)
    take = min(pot, rules.cap_amount) if rules.cap_mode == "cap" else pot
    return take, owed


def settle(state: TableState, now: datetime) -> ev.HandResolved:
    """The `HandResolved` event for the hand in play (its declarations are complete)."""
    if state.rules.hi_lo:
        return _settle_hi_lo(state, now)
    hand = state.hand
    assert hand is not None
    rules = state.rules
    score = scorer(rules, hand.community)
    pot_in_play = state.pot
    ledger = _Ledger(state)
    in_seats = tuple(hand.in_seats())
    take_limit, owed = _pot_limits(rules, pot_in_play)
    if rules.match_basis == "declared":
        owed = _pot_limits(rules, pot_in_play - sum(hand.bets.values()))[1]
    contest = _with_folds(
        _contest(state, tuple(s for s in in_seats if s not in hand.folded), score),
        hand.folded,
        rules,
    )
    shown, wimp = _wimp_penalties(state, contest, score, ledger)
    matched = {s: ledger.pay(s, owed) for s in contest.losers}
    won: dict[int, int] = {}
    taken = side_taken = rake = 0
    if contest.winners:
        taken, side_taken = take_limit, state.side_pot
        rake = rake_of(rules, contest.outcome, taken + side_taken)
        won = split(taken + side_taken - rake, contest.winners)
    pot, reserve, side_pot = _pots_after(
        state, pot_in_play - taken + sum(matched.values()), side_taken, sum(wimp.values())
    )
    game_over = pot + state.low_pot + reserve + side_pot == 0
    for s, amount in won.items():
        ledger.stacks[s] += amount
    return ev.HandResolved(
        hand=hand.number,
        outcome=contest.outcome,
        pot_in_play=pot_in_play,
        reserve_before=state.reserve,
        side_pot_before=state.side_pot,
        in_seats=in_seats,
        winners=contest.winners,
        won=won,
        matched=matched,
        wimp=wimp,
        shown=shown,
        kitty_shown=hand.kitty if rules.kitty and in_seats else (),
        pot=pot,
        reserve=reserve,
        side_pot=side_pot,
        game_over=game_over,
        button=_next_button(state, game_over),
        removed=_removed(state, ledger, game_over),
        grace_until=_grace(state, now, game_over),
        at=iso(now),
        bets=dict(hand.bets),
        folded=tuple(hand.folded),
        rake=rake,
    )


def _wimp_penalties(
    state: TableState, contest: _Contest, score: Score, ledger: _Ledger
) -> tuple[dict[int, tuple[str, ...]], dict[int, int]]:
    """(the hands shown, the wimp penalty each seat paid): when nobody went in and the rules
    have a wimp penalty, every hand is shown and the best hand(s) pay it."""
    hand = state.hand
    assert hand is not None
    rules = state.rules
    if contest.outcome != NOBODY_IN or not rules.wimp_penalty:
        return contest.shown, {}
    scores = {s: score(hand.cards[s]) for s in hand.order}
    best = max(scores.values())
    wimp = {
        s: ledger.pay(s, rules.wimp_penalty * rules.ante) for s in hand.order if scores[s] == best
    }
    return {s: hand.cards[s] for s in hand.order}, wimp


def _pots_after(
    state: TableState, pot: int, side_taken: int, wimp_paid: int
) -> tuple[int, int, int]:
    """(pot, reserve, side pot) once the hand is settled: `pot` is the pot less what the
    winners took plus what the losers matched, `side_taken` what the winners took of the side
    pot; the wimp penalties go where the rules say, and with a reserve the pot above the cap
    goes into it."""
    rules = state.rules
    side_pot = state.side_pot - side_taken
    if rules.wimp_into == "side_pot":
        side_pot += wimp_paid
    else:
        pot += wimp_paid
    reserve = state.reserve
    if rules.cap_mode == "reserve":
        total = pot + reserve
        pot = min(total, rules.cap_amount)
        reserve = total - pot
    return pot, reserve, side_pot


def _with_folds(contest: _Contest, folded: Sequence[int], rules: Ruleset) -> _Contest:
    """The contest among those who did not fold, with the folders as losers (a fold is the
    lowest hand: with `lowest_loser`, only folders pay)."""
    if not folded:
        return contest
    contest.losers = list(folded) if rules.match == "lowest_loser" else [*contest.losers, *folded]
    if contest.outcome == UNCONTESTED:
        contest.outcome = OTHERS_FOLDED
    elif contest.outcome == ALL_TIED:
        contest.outcome = SHOWDOWN  # the tied winners split P; the folders lost
    return contest


def _removed(state: TableState, ledger: _Ledger, game_over: bool) -> dict[int, str]:
    """Players left with nothing are out of the game (they wait for the next one)."""
    return {s: "no_chips" for s, stack in ledger.stacks.items() if stack == 0 and not game_over}


def _grace(state: TableState, now: datetime, game_over: bool) -> str | None:
    cover = state.rules.short_stack == "cover"
    return later(now, state.rules.cover_grace_s) if cover and not game_over else None


def _settle_hi_lo(state: TableState, now: datetime) -> ev.HandResolved:
    """Hi-lo: the high pot and the low pot each settle as their own Guts pot among the players
    who declared for it ("both" contends in each, and matches each pot they lose)."""
    hand = state.hand
    assert hand is not None
    rules = state.rules
    ledger = _Ledger(state)
    results: dict[bool, tuple[_Contest, dict[int, int], dict[int, int], int, int, int]] = {}
    for low, pot_in_play in ((False, state.pot), (True, state.low_pot)):
        sides = ("low", "both") if low else ("high", "both")
        contenders = tuple(s for s in hand.order if hand.decisions.get(s) in sides)
        contest = _contest(state, contenders, scorer(rules, hand.community, low))
        take, owed = _pot_limits(rules, pot_in_play)
        matched = {s: ledger.pay(s, owed) for s in contest.losers}
        rake = rake_of(rules, contest.outcome, take) if contest.winners else 0
        won = split(take - rake, contest.winners) if contest.winners else {}
        after = pot_in_play - (take if contest.winners else 0) + sum(matched.values())
        results[low] = (contest, won, matched, after, pot_in_play, rake)
    high, won, matched, pot, pot_in_play, rake = results[False]
    low_contest, low_won, low_matched, low_pot, low_in_play, low_rake = results[True]
    for amounts in (won, low_won):
        for s, amount in amounts.items():
            ledger.stacks[s] += amount
    game_over = pot + low_pot + state.reserve + state.side_pot == 0
    low_contenders = tuple(s for s in hand.order if hand.decisions.get(s) in ("low", "both"))
    return ev.HandResolved(
        hand=hand.number,
        outcome=high.outcome,
        pot_in_play=pot_in_play,
        reserve_before=state.reserve,
        side_pot_before=state.side_pot,
        in_seats=tuple(hand.in_seats()),
        winners=high.winners,
        won=won,
        matched=matched,
        wimp={},
        shown={**high.shown, **low_contest.shown},
        kitty_shown=(),
        pot=pot,
        reserve=state.reserve,
        side_pot=state.side_pot,
        game_over=game_over,
        button=_next_button(state, game_over),
        removed=_removed(state, ledger, game_over),
        grace_until=_grace(state, now, game_over),
        at=iso(now),
        low=ev.PotResult(
            outcome=low_contest.outcome,
            pot_in_play=low_in_play,
            contenders=low_contenders,
            winners=low_contest.winners,
            won=low_won,
            matched=low_matched,
            pot=low_pot,
            rake=low_rake,
        ),
        rake=rake,
    )


def most_owed(state: TableState, seat: int, decision: str = "in") -> int:
    """The most `seat` could lose in the hand in play by declaring `decision` (not "out"):
    the match as the rules and caps would set it for the pot(s) they contend (hi-lo: "high",
    "low" or "both"), plus, with a betting round, the most they could bet (a bet and every
    raise) and, when losers match the pot after the betting, every other player's most
    too. Never more than their stack: settlement takes no more than a player has."""
    rules = state.rules
    hand = state.hand
    assert hand is not None
    stack = state.seats[seat].stack
    if rules.hi_lo:
        owed = 0
        if decision in ("high", "both"):
            owed += _pot_limits(rules, state.pot)[1]
        if decision in ("low", "both"):
            owed += _pot_limits(rules, state.low_pot)[1]
        return min(owed, stack)
    pot, bets = state.pot, 0
    if rules.betting_round:
        bets = (1 + rules.max_raises) * rules.bet_amount
        if rules.match_basis == "after_betting":
            pot += bets * len(hand.order)
    return min(_pot_limits(rules, pot)[1] + bets, stack)
