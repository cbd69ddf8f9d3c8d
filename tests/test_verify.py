"""The standalone verifier (service/fairness/) against real hand histories from the API."""

from __future__ import annotations

import ast
import copy
import hashlib
import hmac
import io
import json
import random
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from service import fairness as verify
from service.fairness import deck as verify_deck
from service.fairness import derive_deck, main, verify_history
from service.rules import cards as rules_cards
from service.rules.cards import deck_context, shuffled_deck
from tests.apiclient import AUDITOR, Api

ROOT = Path(__file__).resolve().parents[1]


# --- real histories ---------------------------------------------------------------------------


def _table(api: Api, players: int = 3, preset: str = "three-card", **rules: Any):
    table = api.table(preset, **rules)
    tokens = [api.seat(table, f"p{i}")["token"] for i in range(players)]
    return table, tokens


def _play(
    api: Api,
    table: str,
    tokens: list[str],
    decisions: dict[int, str],
    **deal: Any,
) -> int:
    """Deal (with `deal` as the body), declare each seat's decision (default out), resolve."""
    dealt = api.post(f"/v1/tables/{table}/deal", deal)
    assert dealt.status_code == 201, dealt.text
    for seat in dealt.json()["order"]:
        declared = api.post(
            f"/v1/tables/{table}/declare",
            {"decision": decisions.get(seat, "out")},
            token=tokens[seat],
        )
        assert declared.status_code == 200, declared.text
    resolved = api.post(f"/v1/tables/{table}/resolve")
    assert resolved.status_code == 200, resolved.text
    return int(dealt.json()["hand"])


def _history(api: Api, table: str, hand: int, token: str = AUDITOR) -> dict[str, Any]:
    response = api.get(f"/v1/tables/{table}/hands/{hand}", token=token)
    assert response.status_code == 200, response.text
    return dict(response.json())


@pytest.fixture
def showdown(api: Api) -> dict[str, Any]:
    """A three-card hand without kitty: seats 0 and 1 in (a showdown), seat 2 out."""
    table, tokens = _table(api)
    hand = _play(api, table, tokens, {0: "in", 1: "in"}, client_seed="ünï|code ☃")
    return {
        "api": api,
        "table": table,
        "hand": hand,
        "tokens": tokens,
        "auditor": _history(api, table, hand),
        "player": _history(api, table, hand, tokens[2]),
    }


def _names(report: verify.VerifyReport, passed: bool | None = None) -> list[str]:
    return [c.name for c in report.checks if passed is None or c.passed is passed]


# --- verifying --------------------------------------------------------------------------------


def test_auditor_and_player_histories_verify(showdown):
    auditor = verify_history(showdown["auditor"])
    assert auditor.ok and auditor.status == "verified", auditor.render()
    names = _names(auditor)
    for expected in ("commitment", "deck context", "cards of seat 0", "cards of seat 2"):
        assert expected in names
    assert any(name.endswith("rest of the deck") for name in names)

    player = verify_history(showdown["player"])
    assert player.ok, player.render()
    names = _names(player)
    # Seat 2 was out: it sees its own hand and the two hands shown at the showdown.
    assert "cards of seat 2" in names and "cards of seat 0" not in names
    assert {"shown by seat 0", "shown by seat 1"} <= set(names)
    assert player.hand_id == f"{showdown['table']}/{showdown['hand']}"


def test_kitty_hands_verify_for_every_viewer(api: Api):
    table, tokens = _table(api, 4, kitty=True)
    shown = _play(api, table, tokens, {0: "in", 3: "in"})
    nobody = _play(api, table, tokens, {})
    for hand in (shown, nobody):
        for token in (AUDITOR, *tokens):
            report = verify_history(_history(api, table, hand, token))
            assert report.ok, report.render()
    # A player's view of a hand nobody played says nothing of the kitty: the layout is inferred.
    report = verify_history(_history(api, table, nobody, tokens[1]))
    (layout,) = [c for c in report.checks if c.name == "layout"]
    assert "kitty dealt last" in layout.detail and "inferred" in layout.detail


def test_the_two_card_game_and_a_lone_winner_verify(api: Api):
    table, tokens = _table(api, 2, "two-card")
    hand = _play(api, table, tokens, {1: "in"})  # seat 1 declares first, the dealer last
    for token in (AUDITOR, *tokens):
        history = _history(api, table, hand, token)
        assert verify_history(history).ok


def _swap_card(history: dict[str, Any]) -> None:
    hand = history["cards"]["0"]
    used = {c for h in history["cards"].values() for c in h}
    hand[0] = next(c for c in verify.FULL_DECK if c not in used)


def _rotate_order(history: dict[str, Any]) -> None:
    history["order"] = history["order"][1:] + history["order"][:1]


def _other_seed(history: dict[str, Any]) -> None:
    history["seed"] = "00" * 32


def _other_commitment(history: dict[str, Any]) -> None:
    history["commitment"] = "f" * 64


def _other_context(history: dict[str, Any]) -> None:
    history["client_seed"] = "chosen later"
    history["deck_context"] = f"guts-v1|{history['table_id']}|{history['hand']}|chosen later"


def _other_rest(history: dict[str, Any]) -> None:
    deck = history["events"][0]["data"]["deck"]
    deck[0], deck[1] = deck[1], deck[0]


@pytest.mark.parametrize(
    ("tamper", "failing"),
    [
        (_other_seed, {"commitment", "cards of seat 0", "{deal}: fields"}),
        (_other_commitment, {"commitment", "{deal}: fields"}),
        (_swap_card, {"cards of seat 0"}),
        (_rotate_order, {"cards of seat 0", "cards of seat 1", "{deal}: fields"}),
        (_other_context, {"cards of seat 0", "{deal}: fields"}),
        (_other_rest, {"{deal}: rest of the deck"}),
    ],
)
def test_tampering_fails_naming_the_check(showdown, tamper, failing):
    history = copy.deepcopy(showdown["auditor"])
    deal = f"event {history['events'][0]['version']} hand_dealt"
    tamper(history)
    report = verify_history(history)
    assert not report.ok and report.status == "failed"
    failing = {name.format(deal=deal) for name in failing}
    assert failing <= set(_names(report, passed=False)), report.render()
    for check in report.failed:
        assert check.detail


def test_tampering_a_players_history_fails(showdown):
    history = copy.deepcopy(showdown["player"])
    history["outcome"]["shown"]["1"][0] = next(
        c for c in verify.FULL_DECK if c not in json.dumps(history)
    )
    report = verify_history(history)
    assert not report.ok and "shown by seat 1" in _names(report, passed=False)


def test_a_stacked_deal_is_not_verifiable(api: Api):
    table, tokens = _table(api)
    stacked = {"1": "As Ah Ad".split(), "2": "Ks Kh 2c".split()}
    hand = _play(api, table, tokens, {1: "in", 2: "in"}, stacked_deck=stacked)
    report = verify_history(_history(api, table, hand))
    assert not report.ok and report.status == "not_verifiable"
    (check,) = report.failed
    assert check.name == "stacked" and "not verifiable" in check.detail
    assert "commitment" in _names(report, passed=True)  # what can be checked still is


def test_a_carried_over_deck_is_not_verifiable_from_its_hand_alone(api: Api):
    table, tokens = _table(api, deck="carry_over")
    first = _play(api, table, tokens, {0: "in", 1: "in"})
    second = _play(api, table, tokens, {0: "in", 1: "in"})
    assert verify_history(_history(api, table, first)).ok
    history = _history(api, table, second)
    assert history["reshuffled"] is False
    report = verify_history(history)
    assert report.status == "not_verifiable" and not report.ok
    assert [c.name for c in report.failed] == ["reshuffled"]
    assert "carried over" in report.failed[0].detail


def test_a_missing_seed_is_not_verifiable(showdown):
    history = copy.deepcopy(showdown["auditor"])
    del history["seed"]
    report = verify_history(history)
    assert report.status == "not_verifiable" and [c.name for c in report.failed] == ["seed"]


@pytest.mark.parametrize(
    "document",
    [[], "hand", {"hand": 1}, {"order": "102"}, None],
)
def test_non_histories_are_invalid(document):
    report = verify_history(document)
    assert report.status == "invalid" and not report.ok
    assert report.checks[0].name == "format" and not report.checks[0].passed


def test_an_invalid_card_is_a_format_problem(showdown):
    history = copy.deepcopy(showdown["auditor"])
    history["cards"]["0"][0] = "10s"
    report = verify_history(history)
    assert report.status == "invalid" and "10s" in report.checks[0].detail


# --- cards that move after the deal ------------------------------------------------------------


def _play_moving(api: Api, table: str, tokens: list[str], rules: dict[str, Any]) -> list[int]:
    """Deal, pass the first card (pass the trash), everyone in, draw (discard the first
    cards), resolve. Returns the order."""
    dealt = api.post(f"/v1/tables/{table}/deal", {})
    assert dealt.status_code == 201, dealt.text
    order = dealt.json()["order"]
    if rules.get("pass_the_trash"):
        for seat in order:
            card = api.own_cards(table, tokens[seat])[0]
            passed = api.post(f"/v1/tables/{table}/pass", {"card": card}, token=tokens[seat])
            assert passed.status_code == 200, passed.text
    decision = "both" if rules.get("hi_lo") else "in"
    for seat in order:
        body = {"decision": decision}
        declared = api.post(f"/v1/tables/{table}/declare", body, token=tokens[seat])
        assert declared.status_code == 200, declared.text
    for _ in order if rules.get("draw") else ():
        seat = api.get(f"/v1/tables/{table}").json()["hand"]["drawing_turn"]
        discard = api.own_cards(table, tokens[seat])[: rules["draw"]]
        drew = api.post(f"/v1/tables/{table}/draw", {"discard": discard}, token=tokens[seat])
        assert drew.status_code == 200, drew.text
    resolved = api.post(f"/v1/tables/{table}/resolve")
    assert resolved.status_code == 200, resolved.text
    return list(order)


@pytest.mark.parametrize(
    ("players", "rules", "named"),
    [
        (3, {"pass_the_trash": True}, "passed by seat 0"),
        (3, {"community_cards": 1}, "community cards"),
        # 9 x 5 cards leave 7: the fourth drawer's draw reshuffles the earlier discards.
        (9, {"draw": 2, "cards": 5, "seats": 9}, "drawn by seat 0"),
        (4, {"pass_the_trash": True, "draw": 1, "kitty": True}, "drawn by seat 3"),
        (3, {"pass_the_trash": True, "draw": 1, "hi_lo": True, "ante": 2}, "passed by seat 2"),
    ],
)
def test_passes_community_cards_and_draws_verify(api: Api, players, rules, named):
    table, tokens = api.rules_table(players, **rules)
    order = _play_moving(api, table, tokens, rules)
    auditor = _history(api, table, 1)
    report = verify_history(auditor)
    assert report.ok, report.render()
    assert named in _names(report)
    for seat in order:
        mine = verify_history(_history(api, table, 1, tokens[seat]))
        assert mine.ok, mine.render()
    if rules.get("draw"):
        assert any(e["data"].get("reshuffled") for e in auditor["events"])
        drawn = [c for c in report.checks if c.name.startswith("drawn by seat")]
        assert len(drawn) == players and all(c.passed for c in drawn)

    # Two shown hands that swapped a card are not what the seats held after the moves.
    tampered = copy.deepcopy(auditor)
    (a, first), (b, second) = list(tampered["outcome"]["shown"].items())[:2]
    first[0], second[0] = second[0], first[0]
    report = verify_history(tampered)
    assert report.status == "failed"
    assert {f"shown by seat {a}", f"shown by seat {b}"} <= set(_names(report, passed=False))


def test_a_tampered_draw_fails(api: Api):
    rules = {"draw": 2, "cards": 5, "seats": 9}
    table, tokens = api.rules_table(9, **rules)
    _play_moving(api, table, tokens, rules)
    history = _history(api, table, 1)
    last = [e for e in history["events"] if e["type"] == "cards_drawn"][-1]
    seat = last["data"]["seat"]
    history["draws"][str(seat)]["drawn"].reverse()
    last["data"]["drawn"].reverse()
    report = verify_history(history)
    assert report.status == "failed" and f"drawn by seat {seat}" in _names(report, passed=False)


def test_mangled_histories_never_crash_the_verifier(showdown):
    """Random damage to real histories gives a report (mostly invalid or failed), never an
    exception, and never trips the last-resort "malformed" guard."""
    rng = random.Random(7)
    junk: list[Any] = [None, 0, -1, 2.5, True, "x", "As", [], ["As"], [1], {}, {"a": 1}]

    def damage(node: Any) -> None:
        if isinstance(node, dict) and node:
            key = rng.choice(list(node))
            if rng.random() < 0.3:
                node[key] = rng.choice(junk)
            elif rng.random() < 0.1:
                del node[key]
            else:
                damage(node[key])
        elif isinstance(node, list) and node:
            index = rng.randrange(len(node))
            if rng.random() < 0.3:
                node[index] = rng.choice(junk)
            else:
                damage(node[index])

    statuses = set()
    for _ in range(400):
        history = copy.deepcopy(showdown[rng.choice(("auditor", "player"))])
        for _ in range(rng.randint(1, 3)):
            damage(history)
        report = verify_history(history)
        statuses.add(report.status)
        assert not any(c.detail.startswith("malformed") for c in report.checks), report.render()
    assert {"invalid", "failed"} <= statuses


# --- the shuffle itself -----------------------------------------------------------------------


def test_the_stdlib_shuffle_matches_the_service_for_1000_seeds():
    rng = random.Random(20261122)
    for n in range(1000):
        seed = rng.randbytes(rng.choice((0, 1, 16, 32, 64, 65, 100)))
        context = deck_context(f"t{rng.getrandbits(40):x}", n + 1, rng.choice(("", "x", "ü|☃")))
        assert derive_deck(seed, context) == shuffled_deck(seed, context)
        assert verify.deck_context("t", n, "c") == deck_context("t", n, "c")


def test_the_rejection_path_matches_the_service(monkeypatch):
    """Rejected words are rare (about 1 deck in 7 million), so force them: both implementations
    get the same blocks, with many words of 0xFFFFFFFF (rejected for every m not a power of 2).
    """
    real = verify_deck._block

    def forced(seed: bytes, context: bytes, counter: int) -> bytes:
        digest = bytearray(real(seed, context, counter))
        for word in range(0, 8, 2 if counter % 3 else 1):  # every other word, or all 8
            digest[4 * word : 4 * word + 4] = b"\xff\xff\xff\xff"
        return bytes(digest)

    class Source(rules_cards._BlockSource):
        def __init__(self, seed: bytes, context: bytes) -> None:
            super().__init__(seed, context)
            self.key = (seed, context)

        def block(self, counter: int) -> bytes:
            return forced(*self.key, counter)

    monkeypatch.setattr(rules_cards, "_BlockSource", Source)
    monkeypatch.setattr(verify_deck, "_block", forced)
    for n in range(50):
        seed, context = n.to_bytes(4, "big"), b"ctx|%d" % n
        deck = derive_deck(seed, context)
        assert deck == shuffled_deck(seed, context)
        assert sorted(deck) == sorted(verify.FULL_DECK)


def test_the_verifier_imports_nothing_from_the_service():
    """Its modules import the standard library and each other (relatively) only."""
    for path in sorted((ROOT / "service" / "fairness").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                assert node.level == 1, f"{path.name} imports from outside its package"
                continue
            if isinstance(node, ast.ImportFrom):
                names = [str(node.module)]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            outside = [n for n in names if n.partition(".")[0] not in sys.stdlib_module_names]
            assert not outside, f"{path.name} imports {outside}"
    code = (
        "import sys, service.fairness; "
        "print(sorted(m for m in sys.modules if m.startswith('service.')"
        " and not m.startswith('service.fairness.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "['service.fairness']"


# --- the command line -------------------------------------------------------------------------


def test_cli_file_ok_and_exit_codes(showdown, tmp_path, capsys):
    good = tmp_path / "hand.json"
    good.write_text(json.dumps(showdown["auditor"]))
    assert main([str(good)]) == 0
    out = capsys.readouterr().out
    assert "VERIFIED" in out and "commitment" in out

    bad = copy.deepcopy(showdown["auditor"])
    _swap_card(bad)
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(bad))
    assert main([str(tampered)]) == 1
    assert "FAIL  cards of seat 0" in capsys.readouterr().out

    stacked = copy.deepcopy(showdown["auditor"]) | {"stacked": True}
    stacked["events"][0]["data"]["stacked"] = True
    (tmp_path / "stacked.json").write_text(json.dumps(stacked))
    assert main([str(tmp_path / "stacked.json")]) == 1
    assert "NOT VERIFIABLE" in capsys.readouterr().out

    (tmp_path / "junk.json").write_text("{not json")
    assert main([str(tmp_path / "junk.json")]) == 2
    assert "not JSON" in capsys.readouterr().err
    assert main([str(tmp_path / "missing.json")]) == 2
    (tmp_path / "list.json").write_text("[1, 2]")
    assert main([str(tmp_path / "list.json")]) == 2
    assert main([]) == 2  # usage error
    capsys.readouterr()


def test_cli_stdin_and_json(showdown, monkeypatch, capsys):
    data = json.dumps(showdown["player"]).encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert main(["-", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True and report["status"] == "verified"
    assert {"name": "commitment", "passed": True}.items() <= report["checks"][2].items()

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"nope")))
    assert main(["-", "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["status"] == "invalid"


def test_cli_url_with_token(showdown):
    api, table, hand = showdown["api"], showdown["table"], showdown["hand"]
    url = f"{api.base}/v1/tables/{table}/hands/{hand}"
    assert main([url, "--token", AUDITOR]) == 0
    assert main([url, "--token", showdown["tokens"][0], "--json"]) == 0
    assert main([url]) == 2  # no token: 401
    assert main([f"{api.base}/v1/tables/{table}/hands/99", "--token", AUDITOR]) == 2
    assert main(["http://127.0.0.1:9/nothing-listens-here"]) == 2


@pytest.mark.parametrize(
    "url", ["http://[::1/x", "http://127.0.0.1:port/x", "http://127.0.0.1:9/a b"]
)
def test_cli_a_url_that_cannot_be_fetched_is_bad_input_not_a_traceback(url, capsys):
    assert main([url]) == 2
    assert "not a URL that can be fetched" in capsys.readouterr().err


def test_cli_an_answer_that_is_not_http_is_bad_input_not_a_traceback(capsys):
    with socket.create_server(("127.0.0.1", 0)) as server:

        def answer() -> None:
            conn, _ = server.accept()
            with conn:
                conn.recv(4096)
                conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")

        thread = threading.Thread(target=answer, daemon=True)
        thread.start()
        assert main([f"http://127.0.0.1:{server.getsockname()[1]}/x"]) == 2
        thread.join(timeout=10)
    assert "not an HTTP answer" in capsys.readouterr().err


def test_cli_url_token_from_the_environment(showdown, monkeypatch, capsys):
    api, table, hand = showdown["api"], showdown["table"], showdown["hand"]
    monkeypatch.setenv("GUTS_TOKEN", AUDITOR)
    assert main([f"{api.base}/v1/tables/{table}/hands/{hand}"]) == 0
    assert "VERIFIED" in capsys.readouterr().out


def test_python_dash_m(showdown, tmp_path):
    path = tmp_path / "hand.json"
    path.write_text(json.dumps(showdown["auditor"]))
    done = subprocess.run(
        [sys.executable, "-m", "service.fairness", str(path), "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["ok"] is True


def test_a_copy_of_the_package_runs_anywhere_with_the_standard_library(showdown, tmp_path):
    """docs/fairness.md: copy service/fairness/ and run it; -S leaves out every site-packages."""
    shutil.copytree(
        ROOT / "service" / "fairness", tmp_path / "verify", ignore=shutil.ignore_patterns("*.pyc")
    )
    (tmp_path / "hand.json").write_text(json.dumps(showdown["auditor"]))
    done = subprocess.run(
        [sys.executable, "-S", "-E", "-m", "verify", "hand.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "VERIFIED" in done.stdout


def test_the_documented_test_vector():
    """docs/fairness.md's test vector is what both implementations compute."""
    lines = (ROOT / "docs" / "fairness.md").read_text().splitlines()
    vector = {}
    for line in lines[lines.index("### A test vector") :]:
        name, _, value = line.partition(" ")
        if name in ("seed", "commitment", "context", "deck") and name not in vector:
            vector[name] = value.strip()
    seed, context = bytes.fromhex(vector["seed"]), vector["context"].encode()
    assert context == deck_context("T3stTable0000001", 1, "")
    assert hashlib.sha256(seed).hexdigest() == vector["commitment"]
    assert derive_deck(seed, context) == shuffled_deck(seed, context) == vector["deck"].split()
    hands, _ = verify.deal_cards(vector["deck"].split(), [1, 2, 0], 3, kitty=True)
    assert "seat 1 Ts Ah 2h, seat 2 4c Jc 7s, seat 0 9d Kh 3h, kitty Jd 8d Jh" in "\n".join(lines)
    assert hands == {
        "1": ["Ts", "Ah", "2h"],
        "2": ["4c", "Jc", "7s"],
        "0": ["9d", "Kh", "3h"],
        "kitty": ["Jd", "8d", "Jh"],
    }


def _betting_history(api: Api, token: str | None = None) -> tuple[dict[str, Any], Any]:
    from tests.api.test_betting import Table as BettingTable

    t = BettingTable(api)
    t.ok("deal", {})  # a shuffled deal, so the cards verify against the seed
    for seat in (1, 2, 0):
        t.ok("declare", {"decision": "in"}, seat)
    for seat in (1, 2, 0):
        t.ok("draw", {"discard": []}, seat)
    for seat, action in ((1, "bet"), (2, "raise"), (0, "fold"), (1, "call")):
        assert t.bet(seat, action).status_code == 200
    t.ok("resolve")
    return _history(api, t.id, 1, token or AUDITOR), t


def test_a_betting_hand_verifies_with_its_bets_in_the_settlement(api: Api):
    history, t = _betting_history(api)
    report = verify_history(history)
    assert report.ok, report.render()
    assert {"settlement chips", "betting round"} <= set(_names(report, passed=True))
    mine = verify_history(_history(api, t.id, 1, t.tokens[0]))  # a player's view too
    assert mine.ok, mine.render()


@pytest.mark.parametrize(
    ("tamper", "failing"),
    [
        (lambda h: h["outcome"]["won"].update({"1": 8}), "settlement chips"),
        (lambda h: h["bets"][1].update(amount=1), "betting round"),  # a raise priced as a call
        (lambda h: h["outcome"]["bets"].update({"2": 1}), "betting round"),
        (lambda h: h["outcome"]["matched"].pop("0"), "settlement chips"),
        (lambda h: h["bets"][0].update(amount="1"), "betting round"),  # not chips: no crash
        (lambda h: h["outcome"].update(pot=[]), "settlement chips"),
    ],
)
def test_a_settlement_that_does_not_add_up_fails(api: Api, tamper, failing):
    history, _ = _betting_history(api)
    tamper(history)
    report = verify_history(history)
    assert not report.ok and report.status == "failed"
    assert failing in _names(report, passed=False), report.render()
    assert not any(c.detail.startswith("malformed") for c in report.checks)


def test_the_documented_v2_test_vector():
    """docs/fairness.md's v2 vector (players' seeds) is what both implementations compute."""
    lines = (ROOT / "docs" / "fairness.md").read_text().splitlines()
    vector: dict[str, str] = {}
    for line in lines[lines.index("### A test vector for context v2") :]:
        name, _, value = line.partition(" ")
        if name in ("seeds", "context", "block", "words", "deck", "deal", "draw"):
            vector.setdefault(name, value.strip())
    seeds = json.loads(vector["seeds"])
    seed = bytes(range(32))
    context = verify.deck_context("T3stTable0000001", 1, "", seeds)
    assert context.decode() == vector["context"]
    assert context == rules_cards.hand_context("T3stTable0000001", 1, "", {0: "alice-01", 2: "b|b"})
    block = hmac.new(seed, context + b"|" + bytes(8), hashlib.sha256).hexdigest()
    assert vector["block"].split() == ["0", block]
    first = int(vector["words"].split()[0], 16)
    assert first == int(block[:8], 16)
    deck = vector["deck"].split()
    assert derive_deck(seed, context) == shuffled_deck(seed, context) == deck
    hands, _ = verify.deal_cards(deck, [1, 2, 0], 3, kitty=False)
    dealt = ", ".join(f"seat {s} {' '.join(hands[str(s)])}" for s in (1, 2, 0))
    assert vector["deal"].endswith(dealt)
    draw = verify.draw_context("T3stTable0000001", 1, 0, "", seeds)
    assert vector["draw"].endswith(draw.decode())
