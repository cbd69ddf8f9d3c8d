"""The flow of hands and games: antes, seating, declaring, deadlines, the button, the deck."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from service.rules import commands
from service.rules.cards import FULL_DECK
from service.rules.errors import InvalidCard, NotYourTurn, RuleViolation
from service.rules.state import ACTIVE, LEFT, SITTING_OUT, WAITING

from .harness import Table

TRIPS = "As Ah Ad"
PAIR_K = "Ks Kh 2c"
PAIR_Q = "Qs Qh 3c"


def _contested_hand(t: Table) -> None:
    """Seat 1 wins, seat 2 loses and matches (with the first button at seat 0)."""
    t.play({1: TRIPS, 2: PAIR_K}, {1: "in", 2: "in", 0: "out", 3: "out"})


def test_ante_when_pot_empty_takes_no_ante_mid_game():
    t = Table(players=4)
    assert t.deal().antes == {0: 1, 1: 1, 2: 1, 3: 1}
    t.declare({1: "in", 2: "in", 3: "out", 0: "out"})
    t.resolve()
    assert t.state.game_running
    assert t.deal().antes == {}


def test_every_hand_ante_charges_everyone_each_hand():
    t = Table(players=4, ante_rule="every_hand")
    _contested_hand(t)
    assert t.deal().antes == {0: 1, 1: 1, 2: 1, 3: 1}


def test_winner_skips_ante_exempts_the_previous_winner():
    t = Table(players=4, ante_rule="every_hand", winner_skips_ante=True)
    t.play({1: TRIPS, 2: PAIR_K}, {1: "in", 2: "in", 3: "out", 0: "out"})
    assert t.deal().antes == {0: 1, 2: 1, 3: 1}


def test_unless_matched_exempts_players_who_just_matched():
    t = Table(players=4, ante_rule="unless_matched")
    t.play({1: TRIPS, 2: PAIR_K}, {1: "in", 2: "in", 3: "out", 0: "out"})
    assert t.deal().antes == {0: 1, 1: 1, 3: 1}


def test_ante_after_all_out_makes_everyone_ante_again():
    t = Table(players=3, ante_after_all_out=True)
    t.play({1: TRIPS, 2: PAIR_K}, {1: "in", 2: "in", 0: "out"})
    t.play({}, {0: "out", 1: "out", 2: "out"})
    assert t.deal().antes == {0: 1, 1: 1, 2: 1}


def test_without_ante_after_all_out_an_all_out_hand_takes_no_ante():
    t = Table(players=3)
    t.play({1: TRIPS, 2: PAIR_K}, {1: "in", 2: "in", 0: "out"})
    t.play({}, {0: "out", 1: "out", 2: "out"})
    assert t.deal().antes == {}


def test_player_joining_mid_game_waits_for_the_next_game():
    t = Table(players=3)
    t.play({1: TRIPS, 2: PAIR_K}, {1: "in", 2: "in", 0: "out"})
    t.apply(commands.seat_player(t.state, "late", 50, t.now))
    assert t.state.seats[3].status == WAITING
    assert 3 not in t.deal().order
    t.declare({0: "in", 1: "out", 2: "out"})  # a lone winner ends the game
    assert t.resolve().game_over
    assert t.state.seats[3].status == ACTIVE
    assert 3 in t.deal().order


def test_sitting_out_player_pays_no_ante_and_is_dealt_nothing():
    t = Table(players=3)
    t.apply(commands.sit_out(t.state, 2, t.now))
    dealt = t.deal()
    assert 2 not in dealt.order and 2 not in dealt.antes and 2 not in dealt.cards
    assert t.state.seats[2].status == SITTING_OUT
    t.declare({1: "in", 0: "in"})
    t.resolve()
    t.apply(commands.sit_in(t.state, 2, t.now))
    assert t.state.seats[2].status in (ACTIVE, WAITING)


def test_simultaneous_declaring_reveals_only_when_all_have_declared():
    t = Table(players=3)
    t.deal()
    t.apply(commands.declare(t.state, 0, "in", t.now))
    assert t.state.hand.phase == "declaring"
    t.apply(commands.declare(t.state, 2, "out", t.now))
    events = commands.declare(t.state, 1, "in", t.now)
    assert [e.TYPE for e in events] == ["decision_made", "declarations_revealed"]
    t.apply(events)
    assert t.state.hand.phase == "showdown"


def test_declaring_twice_is_refused():
    t = Table(players=3)
    t.deal()
    t.apply(commands.declare(t.state, 0, "in", t.now))
    with pytest.raises(RuleViolation, match="already declared"):
        commands.declare(t.state, 0, "out", t.now)


def test_resolving_before_declarations_are_complete_is_refused():
    t = Table(players=3)
    t.deal()
    with pytest.raises(RuleViolation, match="not complete"):
        commands.resolve(t.state, t.now)
    assert not commands.can_resolve(t.state)


def test_dealing_mid_hand_is_refused():
    t = Table(players=3)
    t.deal()
    with pytest.raises(RuleViolation, match="still in play"):
        commands.deal(t.state, b"s" * 32, t.now)


def test_sequential_declaring_goes_from_the_buttons_left_and_ends_with_the_dealer():
    t = Table("two-card", players=4, dealer_auto_in=False)
    dealt = t.deal()
    assert dealt.order == (1, 2, 3, 0)
    with pytest.raises(NotYourTurn):
        commands.declare(t.state, 2, "in", t.now)
    t.apply(commands.declare(t.state, 1, "in", t.now))
    assert commands.can_declare(t.state, 2, "out", t.now)


def test_dealer_auto_in_when_everyone_before_the_dealer_is_out():
    t = Table("two-card", players=3)
    t.deal()
    t.apply(commands.declare(t.state, 1, "out", t.now))
    events = commands.declare(t.state, 2, "out", t.now)
    assert [(e.TYPE, getattr(e, "by", None)) for e in events] == [
        ("decision_made", "player"),
        ("decision_made", "auto_in"),
        ("declarations_revealed", None),
    ]
    t.apply(events)
    result = t.resolve()
    assert result.outcome == "uncontested" and result.won == {0: 3}


def test_dealer_auto_in_with_a_kitty_must_still_beat_the_kitty():
    t = Table("kitty", players=3, declare="sequential", dealer_auto_in=True)
    t.deal({"kitty": "As Ah Ad Ac Ks".split(), "0": "2c 3d 4h 5s 7c".split()})
    t.declare({1: "out", 2: "out"})
    result = t.resolve()
    assert result.outcome == "kitty_wins" and result.matched == {0: 3}


def test_deadline_makes_undeclared_players_out_decided_by_the_platform():
    t = Table(players=3)
    t.deal()
    t.apply(commands.declare(t.state, 1, "in", t.now))
    with pytest.raises(RuleViolation, match="has not passed"):
        commands.close_at_deadline(t.state, t.now)
    t.tick(30)
    with pytest.raises(RuleViolation, match="deadline"):
        commands.declare(t.state, 2, "in", t.now)
    events = t.apply(commands.close_at_deadline(t.state, t.now))
    platform = {e.seat: e.decision for e in events if getattr(e, "by", "") == "platform"}
    assert platform == {2: "out", 0: "out"}
    assert t.state.hand.decided_by == {1: "player", 2: "platform", 0: "platform"}
    assert t.resolve().outcome == "uncontested"


def test_sequential_deadline_closes_only_the_seat_on_turn():
    t = Table("two-card", players=3, dealer_auto_in=False)
    t.deal()
    t.tick(31)
    t.apply(commands.close_at_deadline(t.state, t.now))
    hand = t.state.hand
    assert hand.decisions == {1: "out"} and hand.on_turn() == 2
    assert commands.can_declare(t.state, 2, "in", t.now)


def test_button_moves_to_the_next_active_seat_after_every_hand():
    t = Table(players=3)
    assert t.deal().button == 0
    t.declare({1: "in", 2: "in", 0: "in"})
    t.resolve()
    assert t.state.button == 1
    assert t.deal().order == (2, 0, 1)


def test_button_moves_after_every_game_when_the_rules_say_so():
    t = Table(players=3, button_moves="game")
    t.play({1: TRIPS, 2: PAIR_K}, {1: "in", 2: "in", 0: "out"})
    assert t.state.button == 0
    t.play({}, {1: "in", 2: "out", 0: "out"})
    assert t.state.button == 1


def test_carry_over_deck_deals_from_what_is_left_then_reshuffles():
    t = Table(players=6, deck="carry_over")  # 18 cards a hand: two hands, then a reshuffle
    first = t.deal()
    assert first.reshuffled and len(first.deck) == 52 - 18
    t.declare({s: "out" for s in range(6)})
    t.resolve()
    second = t.deal()
    assert not second.reshuffled
    dealt_second = [c for s in second.order for c in second.cards[s]]
    assert sorted(dealt_second) == sorted(first.deck[:18])
    t.declare({s: "out" for s in range(6)})
    t.resolve()
    third = t.deal()
    assert third.reshuffled and len(third.deck) == 52 - 18


def test_fresh_deck_each_hand_is_a_permutation_and_cards_go_out_one_at_a_time():
    t = Table(players=3)
    dealt = t.deal()
    cards = [c for s in dealt.order for c in dealt.cards[s]] + list(dealt.deck)
    assert sorted(cards) == sorted(FULL_DECK)
    # One at a time: the first card of each seat, then the second, ...
    from service.rules.cards import deck_context, shuffled_deck

    deck = shuffled_deck(bytes.fromhex(dealt.seed), deck_context("t1", 1, ""))
    assert dealt.cards[1] == (deck[0], deck[3], deck[6])
    assert dealt.cards[0] == (deck[2], deck[5], deck[8])


def test_same_seed_gives_the_same_deal():
    a, b = Table(players=4), Table(players=4)
    assert a.deal().cards == b.deal().cards


def test_void_keeps_antes_in_the_pot_and_the_redeal_takes_none():
    t = Table(players=3)
    t.deal()
    t.apply(commands.void_hand(t.state, "misdeal", t.now))
    assert t.state.hand is None and t.state.pot == 3
    redeal = t.deal()
    assert redeal.antes == {} and not redeal.new_game
    assert t.state.pot == 3


def test_leaving_is_refused_during_a_hand_and_cashes_out_after():
    t = Table(players=3)
    t.deal()
    with pytest.raises(RuleViolation, match="in hand"):
        commands.leave(t.state, 1, t.now)
    t.declare({0: "in", 1: "out", 2: "out"})
    t.resolve()
    (left,) = t.apply(commands.leave(t.state, 1, t.now))
    assert left.cash_out == 99
    assert t.state.seats[1].status == LEFT and t.state.cashed_out == 99


def test_seating_rules():
    t = Table(players=2)
    with pytest.raises(RuleViolation, match="already seated"):
        commands.seat_player(t.state, "p0", 10, t.now)
    with pytest.raises(RuleViolation, match="taken"):
        commands.seat_player(t.state, "new", 10, t.now, seat=1)
    (seated,) = commands.seat_player(t.state, "new", 10, t.now)
    assert seated.seat == 2


def test_stacked_deck_rejects_duplicates_and_unknown_seats():
    t = Table(players=3)
    with pytest.raises(InvalidCard, match="twice"):
        commands.deal(
            t.state, b"x" * 32, t.now, stacked={"0": ["As", "Kd", "Qh"], "1": ["As", "2c", "3c"]}
        )
    with pytest.raises(InvalidCard):
        commands.deal(t.state, b"x" * 32, t.now, stacked={"7": ["As", "Kd", "Qh"]})
    with pytest.raises(InvalidCard):
        commands.deal(t.state, b"x" * 32, t.now, stacked={"0": ["As", "Kd"]})
    with pytest.raises(InvalidCard):
        commands.deal(t.state, b"x" * 32, t.now, stacked={"kitty": ["As", "Kd", "Qh"]})


def test_a_game_needs_two_players_who_can_ante():
    t = Table(players=1)
    with pytest.raises(RuleViolation, match="at least two"):
        commands.deal(t.state, b"x" * 32, t.now)


def test_each_hands_seed_is_committed_before_its_deal():
    from service.rules.cards import seed_commitment
    from service.rules.ruleset import resolve_ruleset
    from service.rules.state import TableState, evolve

    state = TableState()
    now = datetime(2026, 11, 22, tzinfo=UTC)
    first, second, third = (bytes([n]) * 32 for n in (1, 2, 3))
    for e in commands.create_table("t1", resolve_ruleset("three-card"), now, first):
        evolve(state, e)
    for i in range(2):
        for e in commands.seat_player(state, f"p{i}", 10, now):
            evolve(state, e)
    assert state.next_commitment == seed_commitment(first)
    (dealt,) = commands.deal(state, b"ignored" * 4, now, "client", next_seed=second)
    assert dealt.seed == first.hex() and dealt.commitment == seed_commitment(first)
    assert dealt.next_commitment == seed_commitment(second)
    evolve(state, dealt)
    for e in commands.void_hand(state, "misdeal", now):
        evolve(state, e)
    (redealt,) = commands.deal(state, b"ignored" * 4, now, next_seed=third)
    assert redealt.seed == second.hex()


def test_resolving_a_hand_the_table_resolved_by_itself_says_so():
    t = Table("monte-carlo")
    t.deal()
    t.declare({0: "in", 1: "in", 2: "out"})
    t.resolve()  # as the platform does at once under auto_resolve
    with pytest.raises(RuleViolation, match="resolves its hands by itself"):
        commands.resolve(t.state, t.now)
