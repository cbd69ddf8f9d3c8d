"""Hand-evaluation throughput: ours (3- and 5-card, string and int paths) against treys and
pokerkit, all on the same pre-generated random hands.

Run from the repository root with either of::

    .venv/bin/python -m tests.bench.bench_eval
    .venv/bin/python tests/bench/bench_eval.py [--hands 200000] [--repeats 3]

Each rate is the best of ``--repeats`` timed passes over all hands (a plain ``for`` loop calling
the evaluator once per hand; passes of all evaluators are interleaved; inputs are converted to
each library's card type beforehand, so only evaluation is timed).

Goals: our 3-card rate >= 5x treys' 5-card rate, and our 5-card rate >= 1.0x treys.
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from service.rules.cards import FULL_DECK  # noqa: E402
from service.rules.ranking import encode, make_evaluator, make_int_evaluator  # noqa: E402

OURS_3_STR = "ours 3-card, strings"
OURS_3_INT = "ours 3-card, ints"
OURS_5_STR = "ours 5-card, strings"
OURS_5_INT = "ours 5-card, ints"
TREYS = "treys 5-card, Evaluator.evaluate"
POKERKIT = "pokerkit 5-card, StandardHighHand"


def loop(evaluate: Callable[[Any], Any], data: Sequence[Any]) -> Callable[[], None]:
    """One timed pass: call ``evaluate`` once per hand."""

    def run() -> None:
        for hand in data:
            evaluate(hand)

    return run


def best_rates(runs: dict[str, Callable[[], None]], count: int, repeats: int) -> dict[str, float]:
    """Evaluations per second of each run's fastest pass.

    The passes are interleaved (every run once per round), so a slow patch on a shared machine
    hits all evaluators alike instead of skewing the ratios.
    """
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(repeats):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            best[name] = min(best[name], time.perf_counter() - start)
    return {name: count / seconds for name, seconds in best.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--hands", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args(argv)
    n, repeats = args.hands, args.repeats

    rng = random.Random(args.seed)
    hands5 = [tuple(rng.sample(FULL_DECK, 5)) for _ in range(n)]
    hands3 = [hand[:3] for hand in hands5]
    encoded5 = [encode(hand) for hand in hands5]
    encoded3 = [hand[:3] for hand in encoded5]

    runs: dict[str, Callable[[], None]] = {}
    notes: dict[str, str] = {}
    t0 = time.perf_counter()
    ev3, int3 = make_evaluator(3), make_int_evaluator(3)
    ev5, int5 = make_evaluator(5), make_int_evaluator(5)
    notes["ours: table build"] = f"{(time.perf_counter() - t0) * 1000:.0f} ms (3- and 5-card)"
    runs[OURS_3_STR] = loop(ev3, hands3)
    runs[OURS_3_INT] = loop(int3, encoded3)
    runs[OURS_5_STR] = loop(ev5, hands5)
    runs[OURS_5_INT] = loop(int5, encoded5)

    try:
        from treys import Card as TreysCard
        from treys import Evaluator as TreysEvaluator
    except ImportError:
        notes["treys"] = "not installed"
    else:
        evaluate = TreysEvaluator().evaluate
        split = [
            ([TreysCard.new(c) for c in hand[:2]], [TreysCard.new(c) for c in hand[2:]])
            for hand in hands5
        ]

        def run_treys() -> None:
            for hole, board in split:
                evaluate(hole, board)

        runs[TREYS] = run_treys
        # Sanity: both rank the first hands in the same order (treys: lower is better).
        pairs = sorted(
            (ev5(hand), -evaluate(hole, board))
            for hand, (hole, board) in zip(hands5[:2000], split[:2000], strict=True)
        )
        agree = all((a[0] < b[0]) == (a[1] < b[1]) for a, b in itertools.pairwise(pairs))
        notes["treys agreement (2,000 hands)"] = "same order" if agree else "DIFFERENT ORDER"

    try:
        import pokerkit
    except ImportError:
        notes["pokerkit"] = "not installed"
    else:
        parsed = [tuple(pokerkit.Card.parse("".join(hand))) for hand in hands5]
        runs[POKERKIT] = loop(pokerkit.StandardHighHand, parsed)
        notes["pokerkit"] = "hands given as pokerkit Card tuples (parsed beforehand)"

    rates = best_rates(runs, n, repeats)
    treys_rate = rates.get(TREYS)

    print(f"{n:,} random hands, best of {repeats}, Python {sys.version.split()[0]}")
    print(f"{'evaluator':<36} {'hands/s':>14} {'x treys':>8}")
    for name, rate in rates.items():
        times = f"{rate / treys_rate:.2f}" if treys_rate else "-"
        print(f"{name:<36} {rate:>14,.0f} {times:>8}")
    for name, note in notes.items():
        print(f"  {name}: {note}")

    if treys_rate is None:
        print("goals: cannot check without treys")
        return 0
    goals = [
        ("3-card (ints) >= 5x treys", rates[OURS_3_INT] / treys_rate, 5.0),
        ("3-card (strings) >= 5x treys", rates[OURS_3_STR] / treys_rate, 5.0),
        ("5-card (ints) >= 1x treys", rates[OURS_5_INT] / treys_rate, 1.0),
        ("5-card (strings) >= 1x treys", rates[OURS_5_STR] / treys_rate, 1.0),
    ]
    print("goals:")
    for label, ratio, target in goals:
        print(f"  {label:<30} {ratio:6.2f}x  {'MET' if ratio >= target else 'NOT MET'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
