"""The collusion report: pairs of players who shared tables, scored on what two players
working together in Guts would leave behind (docs/rules.md, "Collusion": two players who
consistently go in and out together can steer the pot). Read from the archive's hand rows;
run as an RQ job.

The method, for every pair of players dealt into at least `min_hands` of the same resolved
hands (voided hands are left out):

1. **Going in together.** Each player's rate of going in over all their hands in the period
   (`rate_a`, `rate_b`). If the two decided independently, they would both be in at a shared
   hand with probability `p = rate_a * rate_b`; over `n` shared hands the count `k` of hands
   where both were in would be about `n * p`. The report gives `together` = `(k - n p) /
   sqrt(n p (1 - p))`, the binomial z-score of the excess (0 when `p` is 0 or 1).
2. **Chips between them.** At each shared hand, what a player paid into the pot at its end
   (match, wimp) is taken as going to the hand's winners in proportion to what each won. The
   report gives the chips that went from each to the other, their `net` (positive: from `b`
   to `a`) and `one_sided` = `|net| / gross` (0 when nothing moved): chip dumping moves chips
   one way.
3. **Timing.** At shared hands where both declared themselves (not the deadline), how far apart
   their declarations came, after the deal: `in_step` is the share of those hands where the
   two declared within `SYNC_S` (1 s) of each other, `median_gap_s` the median gap.

`score` = `max(together, 0) + 2 * one_sided + 2 * in_step`: a z-score above about 3 is
unusual on its own; a one-sided flow and declarations in step each add up to 2. The pairs come
sorted by score, the highest first; the score ranks pairs for an auditor to look at, it does
not prove anything.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import combinations
from typing import Any

SYNC_S = 1.0
"""Two declarations this close (seconds) are in step."""
TOP = 50
"""At most this many pairs are reported."""


@dataclass(frozen=True)
class HandFacts:
    """What the report reads of one resolved hand."""

    players: Sequence[str]
    ins: Sequence[str]
    won: Mapping[str, int]
    paid: Mapping[str, int]
    declared_after: Mapping[str, float]


@dataclass
class _Pair:
    hands: int = 0
    both_in: int = 0
    expected_terms: list[float] = field(default_factory=list)
    a_to_b: float = 0.0
    b_to_a: float = 0.0
    gaps: list[float] = field(default_factory=list)


def score_pairs(hands: Iterable[HandFacts], min_hands: int = 20) -> dict[str, Any]:
    """The report over `hands` (see the module doc for the method)."""
    hands = list(hands)
    dealt: dict[str, int] = defaultdict(int)
    went_in: dict[str, int] = defaultdict(int)
    for hand in hands:
        for player in set(hand.players):
            dealt[player] += 1
        for player in set(hand.ins):
            went_in[player] += 1
    rate = {player: went_in[player] / n for player, n in dealt.items()}
    pairs: dict[tuple[str, str], _Pair] = defaultdict(_Pair)
    for hand in hands:
        ins = set(hand.ins)
        flows = _flows(hand.won, hand.paid)
        for a, b in combinations(sorted(set(hand.players)), 2):
            pair = pairs[(a, b)]
            pair.hands += 1
            pair.both_in += a in ins and b in ins
            pair.expected_terms.append(rate[a] * rate[b])
            pair.a_to_b += flows.get((a, b), 0.0)
            pair.b_to_a += flows.get((b, a), 0.0)
            if a in hand.declared_after and b in hand.declared_after:
                pair.gaps.append(abs(hand.declared_after[a] - hand.declared_after[b]))
    rows = [_row(a, b, pair) for (a, b), pair in pairs.items() if pair.hands >= min_hands]
    rows.sort(key=lambda row: (-row["score"], row["players"]))
    return {
        "method": "binomial excess of going in together, one-sided chip flow, declarations "
        f"in step (within {SYNC_S:g} s): see service/archive/collusion.py",
        "hands": len(hands),
        "players": len(dealt),
        "pairs_scored": len(rows),
        "min_hands": min_hands,
        "pairs": rows[:TOP],
    }


def _flows(won: Mapping[str, int], paid: Mapping[str, int]) -> dict[tuple[str, str], float]:
    """(from, to) -> chips: each payer's chips shared among the winners as they won."""
    total = sum(won.values())
    if total <= 0:
        return {}
    return {
        (payer, winner): amount * share / total
        for payer, amount in paid.items()
        for winner, share in won.items()
        if payer != winner and amount > 0 and share > 0
    }


def _row(a: str, b: str, pair: _Pair) -> dict[str, Any]:
    n, k = pair.hands, pair.both_in
    p = sum(pair.expected_terms) / n
    together = 0.0 if p <= 0 or p >= 1 else (k - n * p) / math.sqrt(n * p * (1 - p))
    gross = pair.a_to_b + pair.b_to_a
    net = pair.b_to_a - pair.a_to_b
    one_sided = abs(net) / gross if gross > 0 else 0.0
    in_step = sum(gap < SYNC_S for gap in pair.gaps) / len(pair.gaps) if pair.gaps else 0.0
    score = max(together, 0.0) + 2 * one_sided + 2 * in_step
    return {
        "players": [a, b],
        "score": round(score, 3),
        "hands_together": n,
        "both_in": k,
        "both_in_expected": round(n * p, 2),
        "together": round(together, 3),
        "chips_a_to_b": round(pair.a_to_b),
        "chips_b_to_a": round(pair.b_to_a),
        "net": round(net),
        "one_sided": round(one_sided, 3),
        "timed_hands": len(pair.gaps),
        "in_step": round(in_step, 3),
        "median_gap_s": round(statistics.median(pair.gaps), 3) if pair.gaps else None,
    }


def facts(
    pool: Any, tenant: str | None, start: datetime | None, end: datetime | None
) -> list[HandFacts]:
    """The resolved hands of `tenant` (None: every tenant) that ended in [start, end)."""
    where, args = ["outcome <> 'voided'"], []
    for clause, value in (
        ("tenant = %s", tenant),
        ("ended_at >= %s", start),
        ("ended_at < %s", end),
    ):
        if value is not None:
            where.append(clause)
            args.append(value)
    sql = (
        "SELECT players, in_players, won, paid, declared_after FROM archive_hands WHERE "
        + " AND ".join(where)
    )
    with pool.connection() as conn:
        rows = conn.execute(sql.encode(), args).fetchall()
    return [HandFacts(*row) for row in rows]
