"""Property tests: random rulesets, seats and decisions over many hands.

After every event chips are conserved and nothing is negative, and the ledger folded from the
same events agrees with the state: each player's balance (last `balance_after` and the sum of
their amounts) is their stack, and the players' amounts plus the pots and the rake are what was
bought in minus what was cashed out (the harness checks, `check_ledger`); at the end
a replay of the log equals the live state, and every event and the state survive JSON.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from service.eventlog.codec import GENESIS, decode_snapshot, encode_snapshot
from service.rules import commands
from service.rules.errors import GutsError
from service.rules.events import BetMade, event_from_data, event_to_data
from service.rules.ruleset import PRESETS
from service.rules.state import BET_ACTIONS, TableState, replay

from .harness import Table


@st.composite
def rulesets(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    preset = draw(st.sampled_from(sorted(PRESETS)))
    o: dict[str, Any] = {"seats": 6}
    o["ante_rule"] = draw(st.sampled_from(["pot_empty", "every_hand", "unless_matched"]))
    if o["ante_rule"] == "every_hand":
        o["winner_skips_ante"] = draw(st.booleans())
    else:
        o["winner_skips_ante"] = False
    o["ante_after_all_out"] = draw(st.booleans())
    o["deck"] = draw(st.sampled_from(["fresh_each_hand", "carry_over"]))
    o["declare"] = draw(st.sampled_from(["simultaneous", "sequential"]))
    o["dealer_auto_in"] = o["declare"] == "sequential" and draw(st.booleans())
    o["match"] = draw(st.sampled_from(["all_losers", "lowest_loser"]))
    o["cap_mode"] = draw(st.sampled_from(["none", "cap", "reserve", "max_match"]))
    o["cap"] = None if o["cap_mode"] == "none" else draw(st.integers(2, 12))
    o["wimp_penalty"] = draw(st.integers(0, 3))
    o["wimp_into"] = draw(st.sampled_from(["pot", "side_pot"])) if o["wimp_penalty"] else "pot"
    o["short_stack"] = draw(st.sampled_from(["cover", "table_stakes"]))
    o["button_moves"] = draw(st.sampled_from(["hand", "game"]))
    o["suit_tiebreak"] = draw(st.booleans())
    o["ante"] = draw(st.integers(1, 3))
    # The variants, in the combinations the rules accept.
    kitty = preset == "kitty"
    o["wild"] = draw(st.sampled_from(["none", "none", "deuces", "one_eyed_jacks"]))
    o["no_peek"] = draw(st.booleans())
    o["pass_the_trash"] = not o["no_peek"] and draw(st.booleans())
    o["draw"] = 0 if o["no_peek"] else draw(st.integers(0, 2))
    o["community_cards"] = int(not o["draw"] and not kitty and draw(st.booleans()))
    o["hi_lo"] = (
        not kitty
        and o["wimp_penalty"] == 0
        and o["cap_mode"] != "reserve"
        and not o["dealer_auto_in"]
        and o["ante"] >= 2
        and draw(st.booleans())
    )
    o["betting_round"] = bool(o["draw"]) and not o["hi_lo"] and draw(st.booleans())
    if o["betting_round"]:
        o["bet_size"] = draw(st.integers(1, 4))
        o["max_raises"] = draw(st.integers(0, 3))
        o["match_basis"] = draw(st.sampled_from(["declared", "after_betting"]))
    o["rake_percent"] = draw(st.sampled_from([0, 0, 2.5, 5, 10]))
    o["rake_cap"] = draw(st.sampled_from([0, 0, 1, 3]))
    return preset, o


ACTIONS = [
    "deal",
    "declare",
    "declare",
    "declare",
    "close",
    "resolve",
    "void",
    "top_up",
    "sit_out",
    "sit_in",
    "leave",
    "seat",
    "wait",
    "bet",
    "end",
]


def _natural(t: Table) -> str:
    """The action that moves the game on (deal, declare, resolve), to reach many hands."""
    hand = t.state.hand
    if hand is None:
        return "deal"
    natural = {"passing": "pass", "declaring": "declare", "drawing": "draw", "betting": "bet"}
    return natural.get(hand.phase, "resolve")


def _step(t: Table, action: str, data: st.DataObject) -> None:
    state = t.state
    seat = data.draw(st.integers(0, 5))
    if action == "deal":
        seed = data.draw(st.binary(min_size=32, max_size=32))
        t.apply(commands.deal(state, seed, t.now))
    elif action == "declare" and state.hand is not None:
        undecided = state.hand.undecided()
        if undecided:
            target = state.hand.on_turn() if state.rules.declare == "sequential" else undecided[0]
            choices = ["high", "low", "both", "out"] if state.rules.hi_lo else ["in", "in", "out"]
            decision = data.draw(st.sampled_from(choices))
            t.apply(commands.declare(state, target, decision, t.now))
    elif action == "pass" and state.hand is not None:
        pending = [s for s in state.hand.order if s not in state.hand.passes]
        if pending:
            card = data.draw(st.sampled_from(state.hand.cards[pending[0]]))
            t.apply(commands.pass_card(state, pending[0], card, t.now))
    elif action == "draw" and state.hand is not None:
        drawer = state.hand.drawing_turn()
        if drawer is not None:
            held = list(state.hand.cards[drawer])
            count = data.draw(st.integers(0, state.rules.draw))
            t.apply(commands.draw(state, drawer, held[:count], t.now))
    elif action == "bet" and state.hand is not None and state.hand.bet_turn is not None:
        choice = data.draw(st.sampled_from(BET_ACTIONS))
        t.apply(commands.bet(state, state.hand.bet_turn, choice, t.now))
    elif action == "close":
        t.tick(state.rules.decision_timeout_s)
        t.apply(commands.close_at_deadline(state, t.now))
    elif action == "resolve":
        t.apply(commands.resolve(state, t.now))
    elif action == "void":
        t.apply(commands.void_hand(state, "misdeal", t.now))
    elif action == "top_up":
        t.apply(commands.top_up(state, seat, data.draw(st.integers(1, 20)), t.now))
    elif action == "sit_out":
        t.apply(commands.sit_out(state, seat, t.now))
    elif action == "sit_in":
        t.apply(commands.sit_in(state, seat, t.now))
    elif action == "leave":
        t.apply(commands.leave(state, seat, t.now))
    elif action == "seat":
        t.apply(commands.seat_player(state, f"x{len(t.log)}", data.draw(st.integers(1, 30)), t.now))
    elif action == "wait":
        t.now += timedelta(seconds=data.draw(st.integers(1, 10)))
    elif action == "end" and data.draw(st.integers(0, 3)) == 0:  # (ends the run: rarer)
        t.apply(commands.end_table(state, t.now))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rules=rulesets(), players=st.integers(2, 5), data=st.data())
def test_chips_are_conserved_and_replay_equals_live_state(rules, players, data):
    preset, overrides = rules
    buy_ins = data.draw(st.lists(st.integers(1, 40), min_size=players, max_size=players))
    t = Table(preset, players=players, buy_in=buy_ins, **overrides)  # harness checks each event
    for _ in range(data.draw(st.integers(5, 80))):
        action = (
            _natural(t) if data.draw(st.integers(0, 9)) < 7 else data.draw(st.sampled_from(ACTIONS))
        )
        try:
            _step(t, action, data)
        except GutsError:
            pass  # a refused command returns no events, so there is nothing to apply
    resolved = sum(1 for e in t.log if e.TYPE == "hand_resolved")
    event(f"hands resolved: {min(resolved, 5)}{'+' if resolved >= 5 else ''}")
    assert replay(t.log).to_data() == t.state.to_data()
    for logged in t.log:
        assert event_from_data(json.loads(json.dumps(event_to_data(logged)))) == logged
    snapshot = json.loads(json.dumps(t.state.to_data()))
    assert TableState.from_data(snapshot) == t.state
    assert decode_snapshot(encode_snapshot(t.state, GENESIS)) == (t.state, GENESIS)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_full_hands_settle_with_every_decision_pattern(data):
    """Many complete hands of one table: deal, everyone declares, resolve, repeat."""
    preset = data.draw(st.sampled_from(sorted(PRESETS)))
    t = Table(preset, players=data.draw(st.integers(2, 6)), buy_in=50)
    for _ in range(15):
        try:
            t.apply(commands.deal(t.state, data.draw(st.binary(min_size=8, max_size=8)), t.now))
        except GutsError:
            break
        hand = t.state.hand
        t.declare({s: data.draw(st.sampled_from(["in", "out"])) for s in hand.order})
        resolved = t.resolve()
        assert set(resolved.won) <= set(resolved.in_seats)
        assert set(resolved.matched) <= set(resolved.in_seats)
        assert not set(resolved.won) & set(resolved.matched)
    assert replay(t.log).to_data() == t.state.to_data()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cap_mode=st.sampled_from(["none", "cap", "reserve", "max_match"]),
    match_basis=st.sampled_from(["declared", "after_betting"]),
    match=st.sampled_from(["all_losers", "lowest_loser"]),
    kitty=st.booleans(),
    players=st.integers(2, 5),
    data=st.data(),
)
def test_betting_rounds_conserve_chips_keep_turns_and_terminate(
    cap_mode, match_basis, match, kitty, players, data
):
    """Betting hands under both match bases and every cap mode: chips are conserved after
    every event (the harness checks), only the seat on turn ever acts, every round ends
    within its bound, and the settlement moves exactly the chips that are there."""
    cap = None if cap_mode == "none" else data.draw(st.integers(2, 12))
    max_raises = data.draw(st.integers(0, 3))
    buy_ins = data.draw(st.lists(st.integers(1, 40), min_size=players, max_size=players))
    t = Table(
        "kitty" if kitty else "three-card",
        buy_in=buy_ins,
        draw=1,
        betting_round=True,
        bet_size=data.draw(st.integers(1, 3)),
        max_raises=max_raises,
        match_basis=match_basis,
        match=match,
        cap_mode=cap_mode,
        cap=cap,
    )
    for _ in range(data.draw(st.integers(1, 4))):
        try:
            t.apply(commands.deal(t.state, data.draw(st.binary(min_size=8, max_size=8)), t.now))
        except GutsError:
            break
        hand = t.state.hand
        t.declare({s: data.draw(st.sampled_from(["in", "in", "out"])) for s in hand.order})
        while hand.drawing_turn() is not None:
            t.apply(commands.draw(t.state, hand.drawing_turn(), [], t.now))
        bound = (max_raises + 2) * len(hand.bettors)
        actions = 0
        while hand.phase == "betting":
            on_turn = hand.bet_turn
            intruder = data.draw(st.sampled_from(hand.order))
            if intruder != on_turn:  # nobody acts out of turn
                assert not any(commands.can_bet(t.state, intruder, a, t.now) for a in BET_ACTIONS)
            try:
                t.apply(
                    commands.bet(t.state, on_turn, data.draw(st.sampled_from(BET_ACTIONS)), t.now)
                )
            except GutsError:  # not allowed now: the player stays silent, the deadline acts
                t.tick(t.state.rules.decision_timeout_s)
                t.apply(commands.close_at_deadline(t.state, t.now))
            actions += 1
            assert actions <= bound  # the round terminates
        resolved = t.resolve()
        assert not set(resolved.won) & set(resolved.matched)
        assert set(resolved.folded) <= set(resolved.matched)  # folders lost: they match
        came = resolved.pot_in_play + resolved.reserve_before + resolved.side_pot_before
        went = resolved.pot + resolved.reserve + resolved.side_pot
        assert came + sum(resolved.matched.values()) == went + sum(resolved.won.values())
    bets = [e for e in t.log if isinstance(e, BetMade)]
    event(f"bet actions: {min(len(bets), 10)}{'+' if len(bets) >= 10 else ''}")
    event(f"chips bet: {'some' if any(e.amount for e in bets) else 'none'}")
    event(f"folds: {'some' if any(e.action == 'fold' for e in bets) else 'none'}")
    assert replay(t.log).to_data() == t.state.to_data()
