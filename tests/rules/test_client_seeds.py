"""Players' client seeds: chosen for the next deal, mixed into its deck (v2), spent by it."""

from __future__ import annotations

import itertools

import pytest

from service.fairness import deck as verify_deck
from service.rules import commands
from service.rules import events as ev
from service.rules.cards import deck_context, draw_context, hand_context, shuffled_deck
from service.rules.errors import InvalidCommand, RuleViolation, UnknownSeat
from service.rules.state import TableState, replay
from service.rules.views import AUDITOR, OPERATOR, PLAYER, Viewer, event_view, table_view

from .harness import Table


def _choose(t: Table, seat: int, seed: str) -> ev.ClientSeedSet:
    (chosen,) = t.apply(commands.set_client_seed(t.state, seat, seed, t.now))
    assert isinstance(chosen, ev.ClientSeedSet)
    return chosen


# --- the context --------------------------------------------------------------------------


def test_without_player_seeds_the_context_is_v1_as_before():
    assert hand_context("t1", 7, "op") == deck_context("t1", 7, "op") == b"guts-v1|t1|7|op"
    assert hand_context("t1", 7, "op", {}) == b"guts-v1|t1|7|op"
    assert draw_context("t1", 7, 2) == b"guts-v1-draw|t1|7|2"


def test_the_v2_context_is_netstrings_in_seat_order():
    context = hand_context("T3stTable0000001", 1, "", {2: "b|b", 0: "alice-01"})
    assert context == b"guts-v2|16:T3stTable0000001,1:1,0:,1:0,8:alice-01,1:2,3:b|b,"
    # Lengths count UTF-8 bytes (the operator's seed may be any text; the table id is ASCII).
    assert (
        hand_context("t", 12, "\u2603", {10: "x"}) == "guts-v2|1:t,2:12,3:\u2603,2:10,1:x,".encode()
    )
    assert draw_context("t", 3, 1, "", {4: "s"}) == b"guts-v2-draw|1:t,1:3,1:1,0:,1:4,1:s,"


def test_the_v2_context_reads_back_one_way_only():
    """Seeds that hold the separators cannot be shifted between seats or into other fields."""
    pieces = ["", "a", "|", ",", ":", "1:", "a,1:b", "0:,"]
    seen: dict[bytes, tuple[object, ...]] = {}
    for a, b, op in itertools.product(pieces[1:], pieces[1:], pieces):
        for seeds in ({0: a, 1: b}, {0: a}, {1: a + b}, {0: a + "," + b}):
            key = hand_context("t", 1, op, seeds)
            assert seen.setdefault(key, (op, sorted(seeds.items()))) == (op, sorted(seeds.items()))
    assert not any(key.startswith(b"guts-v1|") for key in seen)


def test_the_stdlib_verifier_builds_the_same_contexts():
    seeds = {0: "alice-01", 2: "b|b", 11: "x,y:z"}
    as_json = {str(s): v for s, v in seeds.items()}
    assert verify_deck.deck_context("t", 5, "", as_json) == hand_context("t", 5, "", seeds)
    assert verify_deck.draw_context("t", 5, 3, "", as_json) == draw_context("t", 5, 3, "", seeds)
    assert verify_deck.deck_context("t", 5, "op") == hand_context("t", 5, "op")


# --- choosing a seed ----------------------------------------------------------------------


def test_a_seed_is_recorded_for_the_next_hand_and_may_be_changed():
    t = Table(players=3)
    first = _choose(t, 1, "first")
    assert first.hand == 1 and t.state.client_seeds == {1: "first"}
    _choose(t, 1, "second")
    _choose(t, 0, "zero")
    assert t.state.client_seeds == {0: "zero", 1: "second"}
    assert replay(t.log).to_data() == t.state.to_data()


@pytest.mark.parametrize(
    "seed", ["", "with space", "tab\t", "\u00e9", "x" * 129, "new\nline", None, 7]
)
def test_a_seed_must_be_1_to_128_visible_ascii_characters(seed):
    t = Table(players=2)
    with pytest.raises(InvalidCommand) as refused:
        commands.verify_set_client_seed(t.state, 0, seed)
    assert refused.value.field == "client_seed"


def test_the_longest_and_oddest_seeds_are_accepted():
    t = Table(players=2)
    for seed in ("x" * 128, "|", "!~", '"quoted"\\', "9f2c4e1a7b3d5f60"):
        commands.verify_set_client_seed(t.state, 0, seed)


def test_an_empty_seat_cannot_choose_a_seed():
    t = Table(players=2)
    with pytest.raises(UnknownSeat):
        commands.set_client_seed(t.state, 4, "x", t.now)
    with pytest.raises(RuleViolation):
        commands.set_client_seed(TableState(), 0, "x", t.now)


def test_a_player_who_leaves_takes_their_seed_with_them():
    t = Table(players=3)
    _choose(t, 2, "mine")
    t.apply(commands.leave(t.state, 2, t.now))
    assert t.state.client_seeds == {}


# --- the deal -----------------------------------------------------------------------------


def test_the_deal_mixes_the_dealt_in_players_seeds_into_its_deck():
    t = Table(players=3)
    _choose(t, 2, "b|b")
    _choose(t, 0, "alice-01")
    dealt = t.deal()
    assert dealt.client_seeds == {0: "alice-01", 2: "b|b"}
    context = hand_context("t1", 1, "", {0: "alice-01", 2: "b|b"})
    assert dealt.deck_context == context.decode()
    deck = shuffled_deck(bytes.fromhex(dealt.seed), context)
    dealt_cards = [c for r in range(3) for c in (deck[r * 3 : r * 3 + 3])]
    assert sorted(dealt_cards) == sorted(c for hand in dealt.cards.values() for c in hand)
    assert dealt.deck == tuple(deck[9:])
    # The same hand with no seeds (or other seeds) is another deck.
    other = shuffled_deck(bytes.fromhex(dealt.seed), deck_context("t1", 1))
    assert other != deck


def test_every_seed_is_spent_by_the_deal_used_or_not():
    t = Table(players=3)
    t.apply(commands.sit_out(t.state, 1, t.now))
    _choose(t, 1, "sitting-out")
    _choose(t, 0, "in")
    dealt = t.deal()
    assert dealt.client_seeds == {0: "in"}  # seat 1 was not dealt in: its seed is dropped
    assert t.state.client_seeds == {}
    t.declare({0: "out", 2: "out"})
    t.resolve()
    again = t.deal()
    assert again.client_seeds == {} and again.deck_context == "guts-v1|t1|2|"


def test_a_seed_chosen_during_a_hand_is_for_the_next_one():
    t = Table(players=2)
    t.deal()
    chosen = _choose(t, 0, "later")
    assert chosen.hand == 2 and t.state.hand is not None and t.state.hand.client_seeds == {}
    t.declare({0: "out", 1: "out"})
    t.resolve()
    assert t.deal().client_seeds == {0: "later"}


def test_the_operator_seed_is_refused_when_players_chose_seeds():
    t = Table(players=2)
    _choose(t, 1, "mine")
    with pytest.raises(RuleViolation, match="seat\\(s\\) 1 chose client seeds"):
        commands.deal(t.state, b"\1" * 32, t.now, client_seed="ground")
    assert t.deal().client_seeds == {1: "mine"}


def test_a_draw_reshuffle_orders_the_discards_by_the_v2_draw_context():
    """9 x 5 cards leave 7: a later drawer of two cards draws from reshuffled discards, put
    under the deck in the order of the deck derived with the v2 draw context."""
    t = Table(players=9, cards=5, draw=2, seats=9)
    _choose(t, 3, "draw-seed")
    dealt = t.deal()
    t.declare(dict.fromkeys(dealt.order, "in"))
    checked = 0
    while (hand := t.state.hand) is not None and (seat := hand.drawing_turn()) is not None:
        before, pile, k = t.state.deck, list(hand.discards), len(hand.drawn)
        (drawn,) = t.apply(commands.draw(t.state, seat, list(hand.cards[seat][:2]), t.now))
        assert isinstance(drawn, ev.CardsDrawn)
        if drawn.reshuffled:
            context = draw_context("t1", 1, k, "", {3: "draw-seed"})
            assert context != draw_context("t1", 1, k)
            order = shuffled_deck(bytes.fromhex(dealt.seed), context)
            assert (*drawn.drawn, *drawn.deck) == (*before, *sorted(pile, key=order.index))
            checked += 1
    assert checked


# --- who sees a seed ----------------------------------------------------------------------


def test_a_seed_is_its_seats_own_until_the_deal_then_public():
    t = Table(players=3)
    chosen = _choose(t, 1, "secret-until-dealt")
    version = t.state.version
    viewers = {
        "owner": Viewer(PLAYER, 1, 0),
        "other": Viewer(PLAYER, 2, 0),
        "operator": Viewer(OPERATOR),
        "auditor": Viewer(AUDITOR),
    }
    before = {n: event_view(chosen, t.state, v, version)["data"] for n, v in viewers.items()}
    assert before["owner"]["client_seed"] == "secret-until-dealt"
    assert all("client_seed" not in before[n] for n in ("other", "operator", "auditor"))
    assert all(table_view(t.state, v)["client_seeds_chosen"] == [1] for v in viewers.values())
    assert "secret-until-dealt" not in repr([table_view(t.state, v) for v in viewers.values()])
    t.deal()
    for viewer in viewers.values():
        assert event_view(chosen, t.state, viewer, version)["data"]["client_seed"] == (
            "secret-until-dealt"
        )
        assert table_view(t.state, viewer)["client_seeds_chosen"] == []
