"""Tables played fast, through `Tables` (the command path below HTTP), for the archive's
fault tests and benchmarks."""

from __future__ import annotations

from service.rules.decide import CreateTable, Deal, Declare, Resolve, SeatPlayer
from service.rules.ruleset import resolve_ruleset
from service.tables import Tables


def new_table(tables: Tables, table_id: str, players: int = 4, tenant: str = "default") -> None:
    """A three-card table (every hand antes) with `players` seated with a deep stack."""
    rules = resolve_ruleset("three-card", {"ante_rule": "every_hand"})
    tables.execute(
        table_id,
        CreateTable(table_id, rules, b"s" * 32, tenant),
        create=True,
    )
    for i in range(players):
        tables.execute(table_id, SeatPlayer(f"p{i}", 10**9))


def play(tables: Tables, table_id: str, hands: int, first: int = 0) -> None:
    """`hands` complete hands (deal, every seat dealt in declares, resolve); every other seat
    is in."""
    run = tables.execute
    for hand in range(first, first + hands):
        dealt = run(table_id, Deal((hand % 251).to_bytes() * 32)).state
        assert dealt is not None and dealt.hand is not None
        for seat in list(dealt.hand.order):
            decision = "in" if (hand + seat) % 2 == 0 else "out"
            run(table_id, Declare(seat, decision))
        run(table_id, Resolve())
