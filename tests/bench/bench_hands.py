"""Complete hands per second in-process: the real rules path, no I/O.

A 6-seat `three-card` table plays hand after hand: deal (seeded shuffle) -> 6 declarations ->
resolve, each command verified, its events appended to a list and folded into the state by
`evolve`. Players top up when short so the table never stops. Run on purpose:

    .venv/bin/python -m tests.bench.bench_hands

Then the cost of money: the same hands with a 5% rake, and with the rake and the ledger (each
event folded by `service.rules.ledger.step`, as the ledger's projection does), in alternating
rounds, each against the plain hands of the same round.
"""

from __future__ import annotations

import hashlib
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from service.rules import commands, ledger
from service.rules.ruleset import resolve_ruleset
from service.rules.state import TableState, evolve

SEATS = 6


def _table(**rules: Any) -> tuple[TableState, list, datetime]:
    state, log = TableState(), []
    now = datetime(2026, 11, 22, tzinfo=UTC)
    for event in commands.create_table("bench", resolve_ruleset("three-card", rules), now):
        log.append(evolve(state, event) and event)
    for i in range(SEATS):
        for event in commands.seat_player(state, f"p{i}", 10**9, now):
            log.append(evolve(state, event) and event)
    return state, log, now


def play(hands: int, book: ledger.Book | None = None, **rules: Any) -> tuple[float, int]:
    """Play `hands` complete hands (with `book`, folding every event into the ledger too);
    returns (seconds, events appended)."""
    state, log, now = _table(**rules)
    if book is not None:
        for version, event in enumerate(log, start=1):
            ledger.step(book, version, event)
        log = _Ledgered(book, log)
    seeds = [hashlib.sha256(i.to_bytes(8, "big")).digest() for i in range(hands)]
    step = timedelta(milliseconds=1)
    started = time.perf_counter()
    for i in range(hands):
        now += step
        for event in commands.deal(state, seeds[i], now):
            evolve(state, event)
            log.append(event)
        hand = state.hand
        assert hand is not None
        for n, seat in enumerate(list(hand.order)):
            decision = "in" if (i + n) % 3 == 0 else "out"
            for event in commands.declare(state, seat, decision, now):
                evolve(state, event)
                log.append(event)
        for event in commands.resolve(state, now):
            evolve(state, event)
            log.append(event)
    return time.perf_counter() - started, len(log)


class _Ledgered(list):  # type: ignore[type-arg]
    """The log, folding each appended event into the ledger's book as it goes."""

    def __init__(self, book: ledger.Book, log: list) -> None:  # type: ignore[type-arg]
        super().__init__(log)
        self.book = book

    def append(self, event: Any) -> None:
        super().append(event)
        ledger.step(self.book, len(self), event)


def main() -> None:
    play(500)  # warm up: ranking tables, caches
    best = min((play(10_000) for _ in range(3)), key=lambda r: r[0])
    seconds, events = best
    rate = 10_000 / seconds
    print(f"complete 6-seat three-card hands: {rate:,.0f}/s ({events / seconds:,.0f} events/s)")
    print(f"goal >= 5,000 hands/s on one core: {'MET' if rate >= 5000 else 'NOT MET'}")
    ratios: dict[str, list[float]] = {"rake": [], "rake+ledger": []}
    for _ in range(3):
        plain = 5_000 / play(5_000)[0]
        raked = 5_000 / play(5_000, rake_percent=5)[0]
        both = 5_000 / play(5_000, ledger.Book(), rake_percent=5)[0]
        print(f"  round: plain {plain:,.0f}/s, rake {raked:,.0f}/s, rake+ledger {both:,.0f}/s")
        ratios["rake"].append(raked / plain)
        ratios["rake+ledger"].append(both / plain)
    for name, values in ratios.items():
        print(f"{name} / plain (median of 3 rounds): {sorted(values)[1]:.2f}")


if __name__ == "__main__":
    main()
