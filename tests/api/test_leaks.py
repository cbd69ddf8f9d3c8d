"""No secret reaches a player: no other seat's cards, no undisclosed decision, no seed."""

from __future__ import annotations

import json

from tests.apiclient import AUDITOR, Api

HANDS = {"0": ["As", "Ah", "Ad"], "1": ["Ks", "Kh", "2c"], "2": ["Qs", "Qh", "3c"]}


def _player_reads(api: Api, table: str, token: str) -> list[str]:
    """Everything a player can read about the table right now, as text."""
    bodies = [
        api.get(f"/v1/tables/{table}", token=token).text,
        api.get(f"/v1/tables/{table}/events", token=token).text,
        api.get(f"/v1/tables/{table}/events?after=3&limit=2", token=token).text,
    ]
    return bodies


def _cards_of_others(seat: str) -> list[str]:
    return [f'"{card}"' for s, cards in HANDS.items() if s != seat for card in cards]


def test_players_never_see_other_cards_hidden_decisions_or_the_seed(api: Api):
    table = api.table("three-card")
    tokens = {str(i): api.seat(table, f"p{i}")["token"] for i in range(3)}
    dealt = api.post(f"/v1/tables/{table}/deal", {"stacked_deck": HANDS})
    assert dealt.status_code == 201
    seen: dict[str, list[str]] = {seat: [] for seat in tokens}

    def look() -> None:
        for seat, token in tokens.items():
            seen[seat] += _player_reads(api, table, token)

    look()
    # Seat 1 declares first: nobody else may learn what, before the reveal.
    r = api.post(f"/v1/tables/{table}/declare", {"decision": "in"}, token=tokens["1"])
    assert r.status_code == 200
    for seat in ("0", "2"):
        for body in _player_reads(api, table, tokens[seat]):
            assert '"decision":"in"' not in body.replace(" ", "")
            data = json.loads(body)
            if "hand" in data and data["hand"]:
                assert "decisions" not in data["hand"]
    look()
    api.post(f"/v1/tables/{table}/declare", {"decision": "out"}, token=tokens["2"])
    api.post(f"/v1/tables/{table}/declare", {"decision": "out"}, token=tokens["0"])
    look()
    resolved = api.post(f"/v1/tables/{table}/resolve")
    assert resolved.json()["outcome"] == "uncontested"  # seat 1 alone: cards stay hidden
    look()
    history = api.get(f"/v1/tables/{table}/hands/1", token=AUDITOR).json()
    seed = next(e["data"]["seed"] for e in history["events"] if e["type"] == "hand_dealt")
    for seat, bodies in seen.items():
        for text in bodies:
            for card in _cards_of_others(seat):
                assert card not in text, (seat, card)
    # The seed is only ever visible after the hand: never in what was read before resolve.
    before = [text for bodies in seen.values() for text in bodies[: 3 * 3]]
    assert all(seed not in text for text in before)


def test_operator_sees_no_live_cards_and_responses_carry_no_seed(api: Api):
    table = api.table("three-card")
    for i in range(3):
        api.seat(table, f"p{i}")
    dealt = api.post(f"/v1/tables/{table}/deal", {"stacked_deck": HANDS})
    texts = [
        dealt.text,
        api.get(f"/v1/tables/{table}").text,
        api.get(f"/v1/tables/{table}/events").text,
        api.get(f"/v1/tables/{table}/events", token=AUDITOR).text,
    ]
    for text in texts:
        for cards in HANDS.values():
            for card in cards:
                assert f'"{card}"' not in text
        assert '"seed"' not in text


def test_logs_never_carry_cards_or_tokens(api: Api, capsys):
    capsys.readouterr()
    table = api.table("three-card")
    token = api.seat(table, "p0")["token"]
    api.seat(table, "p1")
    api.post(f"/v1/tables/{table}/deal", {"stacked_deck": {"0": ["As", "Ah", "Ad"]}})
    api.post(f"/v1/tables/{table}/declare", {"decision": "in"}, token=token)
    logged = capsys.readouterr().err  # the access log: one JSON line per request
    assert table in logged and '"command":"declare"' in logged
    assert token not in logged and '"As"' not in logged and "op-key" not in logged


def test_a_newcomer_in_a_seat_never_sees_the_previous_players_cards(api: Api):
    table = api.table("three-card")
    api.seat(table, "p0")
    api.seat(table, "p1")
    api.post(f"/v1/tables/{table}/deal", {"stacked_deck": {"0": ["As", "Ah", "Ad"]}})
    assert api.post(f"/v1/tables/{table}/void").status_code == 200
    assert api.delete(f"/v1/tables/{table}/players/0").status_code == 200
    newcomer = api.seat(table, "newcomer", seat=0)["token"]
    seen = [
        api.get(f"/v1/tables/{table}/events", token=newcomer).text,
        api.get(f"/v1/tables/{table}/hands/1", token=newcomer).text,
    ]
    for text in seen:
        for card in ("As", "Ah", "Ad"):
            assert f'"{card}"' not in text


def test_hand_history_exports_as_phh(api: Api):
    import tomllib

    table = api.table("three-card")
    tokens = [api.seat(table, f"p{i}")["token"] for i in range(2)]
    api.post(f"/v1/tables/{table}/deal")
    for token in tokens:
        api.post(f"/v1/tables/{table}/declare", {"decision": "in"}, token=token)
    api.post(f"/v1/tables/{table}/resolve")
    response = api.get(f"/v1/tables/{table}/hands/1?format=phh", token=AUDITOR)
    assert response.status_code == 200 and response.headers["Content-Type"].startswith("text/plain")
    phh = tomllib.loads(response.text)
    assert {
        "variant",
        "antes",
        "blinds_or_straddles",
        "min_bet",
        "starting_stacks",
        "actions",
    } <= set(phh)
    assert api.get(f"/v1/tables/{table}/hands/1?format=xml", token=AUDITOR).status_code == 400
