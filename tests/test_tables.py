"""The application service with two processes' worth of `Tables` on one store."""

from __future__ import annotations

from service.eventlog.memory import InMemoryEventStore
from service.rules import commands
from service.rules.ruleset import resolve_ruleset
from service.tables import Tables


def _ok(state, events):
    return 200, {"version": state.version}


def test_a_process_with_a_stale_snapshot_decides_again_on_the_current_one():
    store = InMemoryEventStore()
    first, second = Tables(store), Tables(store)
    rules = resolve_ruleset("three-card")
    first.execute("t", lambda s, n: commands.create_table("t", rules, n), _ok, create=True)
    for i in range(2):
        first.execute("t", lambda s, n, i=i: commands.seat_player(s, f"p{i}", 10, n), _ok)
    # The second process deals: the first one's cached snapshot has no hand in play.
    second.execute("t", lambda s, n: commands.deal(s, b"x" * 32, n), _ok)
    result = first.execute("t", lambda s, n: commands.declare(s, 1, "in", n), _ok)
    assert result.status == 200 and result.state.hand.decisions == {1: "in"}
    # ... and a stale snapshot that would accept a command is caught by the version check.
    second.execute("t", lambda s, n: commands.declare(s, 0, "out", n), _ok)
    assert store.load("t").version == first.load("t").version


def test_a_refusal_is_decided_on_the_current_snapshot():
    store = InMemoryEventStore()
    first, second = Tables(store), Tables(store)
    rules = resolve_ruleset("three-card")
    first.execute("t", lambda s, n: commands.create_table("t", rules, n), _ok, create=True)
    first.execute("t", lambda s, n: commands.seat_player(s, "p0", 10, n), _ok)
    second.execute("t", lambda s, n: commands.seat_player(s, "p1", 10, n), _ok)
    # The first process's snapshot has one player and would refuse to deal; the table has two.
    dealt = first.execute("t", lambda s, n: commands.deal(s, b"x" * 32, n), _ok)
    assert dealt.state.hand is not None
