"""PHH export (service/phh/) of real hand histories from the API."""

from __future__ import annotations

import math
import tomllib
import warnings
from datetime import time
from typing import Any

import pytest

from service.phh import PHH_VARIANT, to_phh
from tests.apiclient import AUDITOR, Api

REQUIRED = ("variant", "antes", "blinds_or_straddles", "min_bet", "starting_stacks", "actions")


def _table(api: Api, players: int, preset: str = "three-card", **rules: Any):
    table = api.table(preset, **rules)
    tokens = [api.seat(table, f"p{i}")["token"] for i in range(players)]
    return table, tokens


def _play(api: Api, table: str, tokens: list[str], decisions: dict[int, str]) -> dict[str, Any]:
    dealt = api.post(f"/v1/tables/{table}/deal", {})
    assert dealt.status_code == 201, dealt.text
    for seat in dealt.json()["order"]:
        body = {"decision": decisions.get(seat, "out")}
        assert api.post(f"/v1/tables/{table}/declare", body, token=tokens[seat]).status_code == 200
    resolved = api.post(f"/v1/tables/{table}/resolve")
    assert resolved.status_code == 200, resolved.text
    return dict(dealt.json())


def _history(api: Api, table: str, hand: int, token: str = AUDITOR) -> dict[str, Any]:
    response = api.get(f"/v1/tables/{table}/hands/{hand}", token=token)
    assert response.status_code == 200, response.text
    return dict(response.json())


def _stacks(api: Api, table: str) -> dict[int, int]:
    return {s["seat"]: s["stack"] for s in api.get(f"/v1/tables/{table}").json()["seats"]}


def _check_required(phh: dict[str, Any], players: int) -> None:
    for name in REQUIRED:
        assert name in phh, name
    assert phh["variant"] == PHH_VARIANT
    for name in ("antes", "blinds_or_straddles", "starting_stacks"):
        assert isinstance(phh[name], list) and len(phh[name]) == players, name
        assert all(isinstance(v, int | float) and v >= 0 for v in phh[name]), name
    assert phh["blinds_or_straddles"] == [0] * players
    assert isinstance(phh["min_bet"], int) and phh["min_bet"] > 0
    assert all(v > 0 for v in phh["starting_stacks"])
    assert isinstance(phh["actions"], list) and all(isinstance(a, str) for a in phh["actions"])
    for key in phh:  # every non-standard field is a custom one
        assert key in REQUIRED or key.startswith("_") or key in _STANDARD_OPTIONAL, key


_STANDARD_OPTIONAL = {"table", "hand", "seats", "players", "year", "month", "day", "time"}
_STANDARD_OPTIONAL |= {"time_zone", "winnings", "finishing_stacks"}


def test_a_showdown_for_the_auditor_and_a_player(api: Api):
    table, tokens = _table(api, 3, kitty=True)
    before = _stacks(api, table)
    dealt = _play(api, table, tokens, {0: "in", 1: "in"})
    order = dealt["order"]
    p = {seat: f"p{i}" for i, seat in enumerate(order, start=1)}
    history = _history(api, table, dealt["hand"])

    text = to_phh(history, ante=1, starting_stacks=before, players={0: 'Zoë "Z"', 1: "b\\c"})
    phh = tomllib.loads(text)
    _check_required(phh, 3)
    assert phh["antes"] == [1, 1, 1] and phh["min_bet"] == 1
    assert phh["starting_stacks"] == [before[s] for s in order]
    after = _stacks(api, table)
    assert phh["finishing_stacks"] == [after[s] for s in order]
    assert phh["players"] == ['Zoë "Z"' if s == 0 else "b\\c" if s == 1 else "" for s in order]
    assert phh["seats"] == [s + 1 for s in order] and phh["_guts_seats"] == order
    assert phh["hand"] == 1 and phh["table"] == table and isinstance(phh["time"], time)

    actions = phh["actions"]
    deals = [f"d dh {p[s]} {''.join(history['cards'][str(s)])}" for s in order]
    assert actions[:3] == deals
    assert actions[3] == f"# kitty dealt {''.join(history['kitty'])}"
    declarations = [a for a in actions if a.split()[1:2] in (["cc"], ["f"])]
    assert declarations == [f"{p[s]} {'cc # in' if s in (0, 1) else 'f # out'}" for s in order]
    shows = [a for a in actions if " sm " in a]
    shown = history["outcome"]["shown"]
    assert shows == [f"{p[s]} sm {''.join(shown[str(s)])}" for s in order if s in (0, 1)]
    # In order: deals, then declarations, then the showdown.
    assert actions.index(deals[-1]) < actions.index(declarations[0])
    assert actions.index(declarations[-1]) < actions.index(shows[0])

    outcome = history["outcome"]
    assert phh["winnings"] == [outcome["won"].get(str(s), 0) for s in order]
    assert phh["_guts_matched"] == [outcome["matched"].get(str(s), 0) for s in order]
    assert phh["_guts_outcome"] == outcome["outcome"]
    assert phh["_guts_declarations"] == ["in" if s in (0, 1) else "out" for s in order]
    assert phh["_guts_seed"] == history["seed"]
    assert phh["_guts_commitment"] == history["commitment"]
    assert phh["_guts_hand_id"] == history["hand_id"]
    assert phh["_guts_kitty"] == "".join(history["kitty"])
    assert phh["_guts_pot_before"] == history["pot_before"] == 0
    assert phh["_guts_pot_after"] == history["pot_after"]
    for key in ("reserve_before", "reserve_after", "side_pot_before", "side_pot_after"):
        assert phh[f"_guts_{key}"] == history[key]

    # Seat 2 was out: it sees its own cards and the shown ones; the rest is ?? per card.
    mine = _history(api, table, dealt["hand"], tokens[2])
    phh = tomllib.loads(to_phh(mine))
    _check_required(phh, 3)
    assert all(math.isinf(s) for s in phh["starting_stacks"])
    assert "finishing_stacks" not in phh and "players" not in phh
    for seat in order:
        hole = "".join(mine["cards"]["2"]) if seat == 2 else "??????"
        assert f"d dh {p[seat]} {hole}" in phh["actions"]
    assert "# kitty dealt ??????" in phh["actions"]
    assert [a for a in phh["actions"] if " sm " in a] == shows  # shown cards are public
    assert phh["_guts_kitty"] == "".join(outcome["kitty_shown"])


def test_a_lone_winner_keeps_their_cards_hidden(api: Api):
    table, tokens = _table(api, 3)
    dealt = _play(api, table, tokens, {1: "in"})
    order, hand = dealt["order"], dealt["hand"]
    winner = f"p{order.index(1) + 1}"
    for token in (AUDITOR, tokens[0]):
        history = _history(api, table, hand, token)
        phh = tomllib.loads(to_phh(history))
        _check_required(phh, 3)
        assert phh["_guts_outcome"] == "uncontested"
        assert phh["_guts_winners"] == [winner]
        assert [a for a in phh["actions"] if " sm " in a] == [f"{winner} sm ??????"]
        assert phh["winnings"][order.index(1)] == history["outcome"]["won"]["1"] > 0
        assert not any(a.startswith("# kitty") for a in phh["actions"])


def test_two_card_hidden_hands_are_four_question_marks(api: Api):
    table, tokens = _table(api, 2, "two-card")
    dealt = _play(api, table, tokens, {1: "in", 0: "in"})
    phh = tomllib.loads(to_phh(_history(api, table, dealt["hand"], tokens[1])))
    _check_required(phh, 2)
    hidden = [a for a in phh["actions"] if a.startswith("d dh")]
    assert any(a.endswith(" ????") for a in hidden) and phh["_guts_cards_per_hand"] == 2


def test_a_pot_carried_over_has_no_antes_and_min_bet_still_positive(api: Api):
    table, tokens = _table(api, 3, suit_tiebreak=True)  # no tie to share the pot out
    _play(api, table, tokens, {0: "in", 1: "in"})  # the loser matches: the pot stays
    dealt = _play(api, table, tokens, {})
    history = _history(api, table, dealt["hand"])
    assert not any(history["antes"].values())
    phh = tomllib.loads(to_phh(history))
    assert phh["antes"] == [0, 0, 0] and phh["min_bet"] == 1
    assert phh["_guts_pot_before"] == history["pot_before"] > 0
    assert tomllib.loads(to_phh(history, ante=5))["min_bet"] == 5


def test_a_voided_hand_and_awkward_strings(api: Api):
    table, tokens = _table(api, 3)
    api.post(f"/v1/tables/{table}/deal", {"client_seed": 'q"uo\\te\ttab\u0001 ☃'})
    reason = 'misdeal: "two\\cards"\nexposed\r\x7f'
    assert api.post(f"/v1/tables/{table}/void", {"reason": reason}).status_code == 200
    history = _history(api, table, 1)
    assert history["status"] == "cancelled"
    phh = tomllib.loads(to_phh(history))
    _check_required(phh, 3)
    assert phh["_guts_void_reason"] == reason
    assert phh["_guts_client_seed"] == 'q"uo\\te\ttab\u0001 ☃'
    assert phh["actions"][-1] == f"# hand voided: {reason}"
    assert "winnings" not in phh and "_guts_outcome" not in phh


def test_pokerkit_reads_the_fields(api: Api):
    """The reference PHH parser accepts the file's fields (it cannot replay Guts actions)."""
    pokerkit = pytest.importorskip("pokerkit")
    table, tokens = _table(api, 3)
    dealt = _play(api, table, tokens, {0: "in", 2: "in"})
    text = to_phh(_history(api, table, dealt["hand"]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. "unexpected field": every field must be known
        parsed = pokerkit.HandHistory.loads(text)
    assert parsed.variant == PHH_VARIANT and len(parsed.antes) == 3
    assert "_guts_seed" in parsed.user_defined_fields


def test_passes_draws_and_hi_lo(api: Api):
    rules = {"pass_the_trash": True, "draw": 1, "hi_lo": True, "ante": 2}
    table, tokens = api.rules_table(3, **rules)
    order = api.post(f"/v1/tables/{table}/deal", {}).json()["order"]
    for seat in order:
        card = api.own_cards(table, tokens[seat])[0]
        assert api.post(f"/v1/tables/{table}/pass", {"card": card}, token=tokens[seat]).ok
    decisions = dict(zip(order, ("high", "low", "both"), strict=True))
    for seat in order:
        body = {"decision": decisions[seat]}
        assert api.post(f"/v1/tables/{table}/declare", body, token=tokens[seat]).ok
    for _ in order:
        seat = api.get(f"/v1/tables/{table}").json()["hand"]["drawing_turn"]
        discard = api.own_cards(table, tokens[seat])[:1]
        assert api.post(f"/v1/tables/{table}/draw", {"discard": discard}, token=tokens[seat]).ok
    assert api.post(f"/v1/tables/{table}/resolve").ok
    history = _history(api, table, 1)
    p = {seat: f"p{i}" for i, seat in enumerate(order, start=1)}

    phh = tomllib.loads(to_phh(history))
    _check_required(phh, 3)
    actions = phh["actions"]
    passes = [a for a in actions if " passes " in a]
    assert passes == [
        f"# {p[s]} passes {history['passes'][str(s)]['card']} to {p[order[(i + 1) % 3]]}"
        for i, s in enumerate(order)
    ]
    assert [a for a in actions if a.split()[1:2] == ["cc"]] == [
        f"{p[s]} cc # {decisions[s]}" for s in order
    ]
    for seat, drew in history["draws"].items():
        discard, got = "".join(drew["discarded"]), "".join(drew["drawn"])
        i = actions.index(f"{p[int(seat)]} sd {discard}")
        assert actions[i + 1] == f"d dh {p[int(seat)]} {got}"
    assert actions.index(passes[-1]) < actions.index(f"{p[order[0]]} cc # high")
    assert phh["_guts_declarations"] == [decisions[s] for s in order]
    low = history["outcome"]["low"]
    assert phh["_guts_low_outcome"] == low["outcome"]
    assert phh["winnings"] == [
        history["outcome"]["won"].get(str(s), 0) + low["won"].get(str(s), 0) for s in order
    ]

    # A player sees the number of cards others drew, not which.
    mine = tomllib.loads(to_phh(_history(api, table, 1, tokens[order[0]])))
    other = p[order[1]]
    assert f"{other} sd ??" in mine["actions"] and f"d dh {other} ??" in mine["actions"]
    assert mine["_guts_passes"][0] != "??" and mine["_guts_passes"][1] == "??"


def test_a_community_card(api: Api):
    table, tokens = api.rules_table(3, community_cards=1)
    dealt = _play(api, table, tokens, {0: "in", 1: "in"})
    history = _history(api, table, dealt["hand"], tokens[2])
    phh = tomllib.loads(to_phh(history))
    _check_required(phh, 3)
    card = history["community"][0]
    declared = [i for i, a in enumerate(phh["actions"]) if " cc " in a or " f " in a]
    assert phh["actions"].index(f"d db {card}") == declared[-1] + 1
    assert phh["_guts_community"] == card


def test_heads_up_antes_are_reversed_as_phh_says(api: Api):
    table, tokens = _table(api, 2, "two-card")
    dealt = _play(api, table, tokens, {1: "in", 0: "in"})
    history = _history(api, table, dealt["hand"])
    first, second = dealt["order"]
    history["antes"] = {str(first): 1, str(second): 0}  # e.g. a winner who skips the ante
    phh = tomllib.loads(to_phh(history))
    assert phh["antes"] == [0, 1] and phh["_guts_antes"] == [1, 0]


def test_a_betting_round_is_phh_betting_actions(api: Api):
    from tests.api.test_betting import Table as BettingTable

    t = BettingTable(api)
    t.to_betting()
    for seat, action in ((1, "bet"), (2, "raise"), (0, "fold"), (1, "call")):
        assert t.bet(seat, action).status_code == 200
    assert t.post("resolve").status_code == 200
    history = _history(api, t.id, 1)
    phh = tomllib.loads(to_phh(history, starting_stacks={0: 100, 1: 100, 2: 100}, ante=1, cards=3))
    _check_required(phh, 3)
    actions = phh["actions"]  # order 1, 2, 0: p1 is seat 1, p2 seat 2, p3 seat 0
    betting = actions[actions.index("p1 cbr 1 # bet") :]
    assert betting[:4] == ["p1 cbr 1 # bet", "p2 cbr 2 # raise", "p3 f # fold", "p1 cc # call"]
    assert not any(a.startswith("p3 sm") for a in actions)  # the folder's hand is not shown
    assert phh["_guts_bets"] == [2, 2, 0] and phh["_guts_folded"] == ["p3"]
    assert phh["_guts_matched"] == [0, 3, 3] and phh["winnings"] == [7, 0, 0]
    assert phh["finishing_stacks"] == [100 - 1 - 2 + 7, 100 - 1 - 2 - 3, 100 - 1 - 3]
