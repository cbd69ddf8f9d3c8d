"""Tables played fast, through `Tables` (the command path below HTTP), for the archive's
fault tests and benchmarks."""

from __future__ import annotations

from typing import Any

from service.rules import commands
from service.rules.ruleset import resolve_ruleset
from service.tables import Tables


def _ok(state: Any, events: Any) -> tuple[int, Any]:
    return 200, {"version": state.version}


def new_table(tables: Tables, table_id: str, players: int = 4, tenant: str = "default") -> None:
    """A three-card table (every hand antes) with `players` seated with a deep stack."""
    rules = resolve_ruleset("three-card", {"ante_rule": "every_hand"})
    tables.execute(
        table_id,
        lambda s, n: commands.create_table(table_id, rules, n, b"s" * 32, tenant),
        _ok,
        create=True,
    )
    for i in range(players):
        tables.execute(table_id, lambda s, n, i=i: commands.seat_player(s, f"p{i}", 10**9, n), _ok)


def play(tables: Tables, table_id: str, hands: int, first: int = 0) -> None:
    """`hands` complete hands (deal, every seat dealt in declares, resolve); every other seat
    is in."""
    run = tables.execute
    for hand in range(first, first + hands):
        dealt = run(
            table_id,
            lambda s, n, h=hand: commands.deal(s, (h % 251).to_bytes() * 32, n),
            lambda state, events: (201, list(state.hand.order)),
        )
        for seat in dealt.body:
            decision = "in" if (hand + seat) % 2 == 0 else "out"
            run(table_id, lambda s, n, a=seat, d=decision: commands.declare(s, a, d, n), _ok)
        run(table_id, lambda s, n: commands.resolve(s, n), _ok)
