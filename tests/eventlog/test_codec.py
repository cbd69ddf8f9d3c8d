"""The codec upcasts events written by earlier versions, and their hash chain still holds."""

from __future__ import annotations

import orjson

from service.eventlog.codec import GENESIS, chain_hash, decode_event, decode_following
from service.rules import events as ev


def _v1_resolved(outcome: str, winners: list[int]) -> dict:
    data = {
        "hand": 3,
        "outcome": outcome,
        "pot_in_play": 6,
        "reserve_before": 0,
        "side_pot_before": 0,
        "in_seats": winners,
        "winners": winners,
        "won": {str(s): 6 // len(winners) for s in winners},
        "matched": {},
        "wimp": {},
        "shown": {},
        "kitty_shown": [],
        "pot": 0,
        "reserve": 0,
        "side_pot": 0,
        "game_over": True,
        "button": 0,
        "removed": {},
        "grace_until": None,
        "at": "2026-11-01T00:00:00.000Z",
    }
    record = {"type": "hand_resolved", "v": 1, "data": data}
    record["hash"] = chain_hash(GENESIS, record)
    return record


def test_a_v1_lone_win_over_the_kitty_reads_as_beats_kitty_and_still_chains():
    record = _v1_resolved("all_tied", [1])
    event, head = decode_following(orjson.dumps(record), GENESIS)
    assert isinstance(event, ev.HandResolved) and event.outcome == "beats_kitty"
    assert head == record["hash"]  # the chain covers the bytes as written


def test_a_v1_tie_between_several_in_players_stays_a_tie():
    event = decode_event(orjson.dumps(_v1_resolved("all_tied", [0, 1])))
    assert isinstance(event, ev.HandResolved) and event.outcome == "all_tied"
