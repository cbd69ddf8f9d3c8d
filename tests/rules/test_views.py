"""What each viewer may see: the rules decide it, the API only passes it on."""

from __future__ import annotations

import json

from service.rules import commands
from service.rules.views import Viewer, event_view, table_view

from .harness import Table

OPERATOR = Viewer("operator")
AUDITOR = Viewer("auditor")


def _player(seat: int) -> Viewer:
    return Viewer("player", seat)


def _everything_seen(t: Table, viewer: Viewer) -> str:
    parts = [table_view(t.state, viewer)] + [event_view(e, t.state, viewer) for e in t.log]
    return json.dumps(parts)


def test_a_player_sees_only_their_own_cards_during_a_hand():
    t = Table(players=3)
    dealt = t.deal()
    seen = _everything_seen(t, _player(1))
    assert table_view(t.state, _player(1))["hand"]["cards"] == list(dealt.cards[1])
    for seat in (0, 2):
        for card in dealt.cards[seat]:
            assert f'"{card}"' not in seen
    assert dealt.seed not in seen
    assert dealt.commitment in seen


def test_operators_and_auditors_see_no_live_cards_or_seed():
    t = Table(players=3)
    dealt = t.deal()
    for viewer in (OPERATOR, AUDITOR):
        seen = _everything_seen(t, viewer)
        for cards in dealt.cards.values():
            for card in cards:
                assert f'"{card}"' not in seen
        assert dealt.seed not in seen


def test_simultaneous_decisions_stay_hidden_until_the_reveal():
    t = Table(players=3)
    t.deal()
    t.apply(commands.declare(t.state, 1, "in", t.now))
    for viewer in (OPERATOR, _player(2)):
        view = table_view(t.state, viewer)["hand"]
        assert view["declared"] == [1] and "decisions" not in view
        assert '"in"' not in _everything_seen(t, viewer)
    # The player who declared sees their own decision in the log.
    assert any(
        e["data"].get("decision") == "in"
        for e in (event_view(x, t.state, _player(1)) for x in t.log)
    )
    t.declare({2: "out", 0: "out"})
    assert table_view(t.state, _player(2))["hand"]["decisions"] == {
        "1": "in",
        "2": "out",
        "0": "out",
    }


def test_mucked_and_lone_winner_cards_are_never_shown_to_players():
    t = Table(players=3)
    dealt = t.deal()
    t.declare({1: "in", 2: "out", 0: "out"})
    t.resolve()
    seen = _everything_seen(t, _player(2))
    for seat in (0, 1):
        for card in dealt.cards[seat]:
            assert f'"{card}"' not in seen
    assert dealt.seed in seen  # revealed once the hand is over


def test_auditors_see_everything_of_a_finished_hand():
    t = Table(players=3)
    dealt = t.deal()
    t.declare({1: "in", 2: "out", 0: "out"})
    t.resolve()
    seen = _everything_seen(t, AUDITOR)
    for cards in dealt.cards.values():
        for card in cards:
            assert f'"{card}"' in seen


def test_showdown_cards_are_public():
    t = Table(players=3)
    t.play({1: "As Ah Ad", 2: "Ks Kh 2c"}, {1: "in", 2: "in", 0: "out"})
    seen = _everything_seen(t, _player(0))
    assert '"As"' in seen and '"Ks"' in seen
