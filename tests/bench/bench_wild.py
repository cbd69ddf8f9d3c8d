"""Wild-card evaluation throughput (service/rules/wild.py) against the base evaluators.

Run from the repository root with either of::

    .venv/bin/python -m tests.bench.bench_wild
    .venv/bin/python tests/bench/bench_wild.py [--hands 100000] [--repeats 3]

Reports:

* the 2/3-card precompute (the table of every hand holding a wild) per option combination, timed
  after the base evaluator's own tables exist, so only the wild work is counted;
* evaluations per second (best of ``--repeats`` interleaved passes, a plain loop calling the
  evaluator once per hand) for 3- and 5-card hands: the base evaluator, the wild evaluator on
  hands without wilds (the price of the wild check), on hands holding wilds, and on random deals
  (about 21% of 3-card and 34% of 5-card deals hold a deuce);
* 5-card hands with wilds seen for the first time (a search, no memo hit), per number of wilds,
  with and without suit tie-break: one pass over distinct hands.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from service.rules.cards import FULL_DECK  # noqa: E402
from service.rules.ranking import Evaluator, make_evaluator, make_int_evaluator  # noqa: E402
from service.rules.wild import WILD_CARDS, make_wild_evaluator  # noqa: E402

Hand = tuple[str, ...]


def loop(evaluate: Evaluator, hands: Sequence[Hand]) -> Callable[[], None]:
    def run() -> None:
        for hand in hands:
            evaluate(hand)

    return run


def best_rates(runs: dict[str, tuple[Callable[[], None], int]], repeats: int) -> dict[str, float]:
    """Evaluations per second of each run's fastest pass (passes interleaved)."""
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(repeats):
        for name, (run, _count) in runs.items():
            start = time.perf_counter()
            run()
            best[name] = min(best[name], time.perf_counter() - start)
    return {name: runs[name][1] / seconds for name, seconds in best.items()}


def deal_with_wilds(rng: random.Random, n: int, wild: str, k: int) -> Hand:
    """A random ``n``-card hand holding exactly ``k`` of ``wild``'s wild cards."""
    wilds = sorted(WILD_CARDS[wild])
    pool = [card for card in FULL_DECK if card not in WILD_CARDS[wild]]
    hand = rng.sample(pool, n - k) + rng.sample(wilds, k)
    rng.shuffle(hand)
    return tuple(hand)


def precompute_times() -> list[tuple[str, float]]:
    rows = []
    for n, sf_options in ((2, (False,)), (3, (True, False))):
        for wild in ("deuces", "one_eyed_jacks"):
            for sf in sf_options:
                for tb in (False, True):
                    for low in (False, True):
                        make_evaluator(n, straights_and_flushes=sf, suit_tiebreak=tb)
                        make_int_evaluator(n, straights_and_flushes=sf, suit_tiebreak=tb)
                        start = time.perf_counter()
                        make_wild_evaluator(
                            n, wild, straights_and_flushes=sf, suit_tiebreak=tb, low=low
                        )
                        label = (
                            f"{n}-card {wild:<14} straights={'on ' if sf else 'off'} "
                            f"tiebreak={'on ' if tb else 'off'} {'low ' if low else 'high'}"
                        )
                        rows.append((label, time.perf_counter() - start))
    return rows


def distinct_hands(rng: random.Random, wild: str, k: int, count: int) -> list[Hand]:
    """Up to ``count`` 5-card hands with ``k`` wilds, no two with the same natural cards."""
    seen: set[frozenset[str]] = set()
    hands = []
    for _ in range(count * 3):
        hand = deal_with_wilds(rng, 5, wild, k)
        naturals = frozenset(hand) - WILD_CARDS[wild]
        if naturals not in seen:
            seen.add(naturals)
            hands.append(hand)
            if len(hands) >= count:
                break
    return hands


def first_sight_costs(rng: random.Random, count: int) -> list[tuple[str, float, float, int]]:
    """Microseconds per 5-card hand with k wilds never seen before (a search each, no LRU hit).

    Two passes over different distinct hands on a fresh evaluator: the first with every memo
    cold, the second after it (without suit tie-break the second mostly hits the shape memo).
    """
    rows = []
    for wild, ks in (("deuces", (1, 2, 3, 4)), ("one_eyed_jacks", (1, 2))):
        for tb in (False, True):
            for low in (False, True):
                evaluate = make_wild_evaluator(5, wild, suit_tiebreak=tb, low=low)
                for k in ks:
                    # 4 deuces leave 48 possible hands: 24 per pass.
                    limit = count if k <= 2 else min(count // 20, 24) if k == 4 else count // 10
                    hands = distinct_hands(rng, wild, k, 2 * limit)
                    passes = []
                    for part in (hands[: len(hands) // 2], hands[len(hands) // 2 :]):
                        start = time.perf_counter()
                        loop(evaluate, part)()
                        passes.append((time.perf_counter() - start) / len(part) * 1e6)
                    label = (
                        f"{wild:<14} k={k} tiebreak={'on ' if tb else 'off'} "
                        f"{'low ' if low else 'high'}"
                    )
                    rows.append((label, passes[0], passes[1], len(hands) // 2))
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--hands", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--first-sight", type=int, default=2_000, help="5-card hands, k <= 2")
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args(argv)
    n, repeats = args.hands, args.repeats
    rng = random.Random(args.seed)
    began = time.perf_counter()

    print(f"Python {sys.version.split()[0]}")
    print("precompute (2/3-card table of every hand holding a wild), ms:")
    rows = precompute_times()
    for label, seconds in rows:
        print(f"  {label:<60} {seconds * 1000:8.1f}")
    print(f"  {'total':<60} {sum(s for _, s in rows) * 1000:8.1f}")

    print("\n5-card hands with wilds seen for the first time (a search each), us per hand:")
    print(f"  {'':<46} {'cold':>8} {'2nd pass':>9} {'hands/pass':>11}")
    for label, cold, second, count in first_sight_costs(rng, args.first_sight):
        print(f"  {label:<46} {cold:>8,.1f} {second:>9,.1f} {count:>11,}")

    runs: dict[str, tuple[Callable[[], None], int]] = {}
    deuces = WILD_CARDS["deuces"]
    for size in (3, 5):
        base = make_evaluator(size)
        wild = make_wild_evaluator(size, "deuces")
        tiebreak = make_wild_evaluator(size, "deuces", suit_tiebreak=True)
        deals = [tuple(rng.sample(FULL_DECK, size)) for _ in range(n)]
        natural = [hand for hand in deals if deuces.isdisjoint(hand)]
        # Hands with wilds as dealt (mostly one wild); for 5 cards a pool of 5,000 distinct-ish
        # hands cycled, so passes after the first hit the memo.
        holding = [hand for hand in deals if not deuces.isdisjoint(hand)]
        if size == 5:
            holding = (holding[:5_000] * (n // 5_000 + 1))[:n]
        share = 100 * (len(deals) - len(natural)) / len(deals)
        runs[f"{size}-card base evaluator, random deals"] = (loop(base, deals), len(deals))
        runs[f"{size}-card deuces wild, hands without wilds"] = (loop(wild, natural), len(natural))
        runs[f"{size}-card deuces wild, hands with wilds"] = (loop(wild, holding), len(holding))
        runs[f"{size}-card deuces wild, random deals ({share:.0f}% wild)"] = (
            loop(wild, deals),
            len(deals),
        )
        runs[f"{size}-card deuces wild + tiebreak, hands with wilds"] = (
            loop(tiebreak, holding),
            len(holding),
        )
        runs[f"{size}-card deuces wild + tiebreak, random deals"] = (loop(tiebreak, deals), n)

    rates = best_rates(runs, repeats)
    print(f"\n{n:,} random deals per size, best of {repeats}; evaluations/s:")
    for name, rate in rates.items():
        print(f"  {name:<60} {rate:>12,.0f}")
    print("  (5-card 'hands with wilds': 5,000 hands cycled, so memo hits after the first pass)")

    print(f"\ntotal {time.perf_counter() - began:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
