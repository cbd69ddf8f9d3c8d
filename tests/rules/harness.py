"""A small driver for rules tests: commands decide, events evolve, invariants are checked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from service.rules import commands, ledger
from service.rules import events as ev
from service.rules.ruleset import resolve_ruleset
from service.rules.state import TableState, evolve

START = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def check_ledger(state: TableState, book: ledger.Book, entries: list[ledger.Entry]) -> None:
    """The ledger agrees with the state: each seat's balance (its last entry's, and the sum of
    its entries' amounts) is its stack, the book's pots are the state's, and the players'
    amounts plus the pots and the rake are what was bought in minus what was cashed out."""
    balances: dict[str, int] = {}
    sums: dict[str, int] = {}
    for entry in entries:
        if entry.player_id is not None:
            balances[entry.player_id] = entry.balance_after
            sums[entry.player_id] = sums.get(entry.player_id, 0) + entry.amount
    for seat in state.seats.values():
        assert balances.get(seat.player_id, 0) == seat.stack, (seat, balances)
        assert sums.get(seat.player_id, 0) == seat.stack, (seat, sums)
        assert book.stacks[seat.seat] == seat.stack
    pots = state.pot + state.low_pot + state.reserve + state.side_pot
    assert book.pots == pots
    players = sum(e.amount for e in entries if e.player_id is not None)
    assert players + book.pots + book.rake == state.bought_in - state.cashed_out
    assert (book.bought_in, book.cashed_out) == (state.bought_in, state.cashed_out)


class Table:
    """One table in memory, with its log; every event is checked for chip conservation."""

    def __init__(
        self,
        preset: str = "three-card",
        players: int = 3,
        buy_in: int | Sequence[int] = 100,
        **overrides: Any,
    ) -> None:
        self.state = TableState()
        self.log: list[ev.Event] = []
        self.book = ledger.Book()
        self.entries: list[ledger.Entry] = []
        self.now = START
        self.seed_counter = 0
        count = players if isinstance(buy_in, int) else len(buy_in)
        if count > 6:
            overrides.setdefault("seats", count)
        rules = resolve_ruleset(preset, overrides)
        self.apply(commands.create_table("t1", rules, self.now))
        buy_ins = [buy_in] * players if isinstance(buy_in, int) else list(buy_in)
        for i, amount in enumerate(buy_ins):
            self.apply(commands.seat_player(self.state, f"p{i}", amount, self.now))

    def apply(self, events: list[ev.Event]) -> list[ev.Event]:
        for event in events:
            evolve(self.state, event)
            self.log.append(event)
            s = self.state
            assert s.chips_on_table() == s.bought_in - s.cashed_out, event
            assert min([s.pot, s.reserve, s.side_pot, *(x.stack for x in s.seats.values())]) >= 0
            self.book, made = ledger.step(self.book, s.version, event)
            self.entries.extend(made)
            check_ledger(s, self.book, self.entries)
        return events

    def tick(self, seconds: float = 1.0) -> None:
        self.now += timedelta(seconds=seconds)

    def deal(self, stacked: Mapping[str, Sequence[str]] | None = None) -> ev.HandDealt:
        self.seed_counter += 1
        seed = self.seed_counter.to_bytes(32, "big")
        (dealt,) = self.apply(commands.deal(self.state, seed, self.now, stacked=stacked))
        assert isinstance(dealt, ev.HandDealt)
        return dealt

    def declare(self, decisions: Mapping[int, str]) -> None:
        """Declare for the given seats, in the hand's declaring order."""
        hand = self.state.hand
        assert hand is not None
        for seat in hand.order:
            if seat in decisions and seat not in hand.decisions:
                self.apply(commands.declare(self.state, seat, decisions[seat], self.now))

    def resolve(self) -> ev.HandResolved:
        (resolved,) = self.apply(commands.resolve(self.state, self.now))
        assert isinstance(resolved, ev.HandResolved)
        return resolved

    def play(
        self, hands: Mapping[int, str | Sequence[str]], decisions: Mapping[int, str]
    ) -> ev.HandResolved:
        """Deal with the given cards (a string "As Kd Qh" or a list), declare, resolve."""
        stacked = {str(s): (c.split() if isinstance(c, str) else list(c)) for s, c in hands.items()}
        self.deal(stacked)
        self.declare(decisions)
        return self.resolve()

    def stacks(self) -> dict[int, int]:
        return {s.seat: s.stack for s in self.state.seated()}
