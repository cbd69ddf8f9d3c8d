"""Every string the pages (/play, /admin) show comes from one table per language: the tables
have the same keys and the same `{placeholders}`, and every key the pages use is in them,
including the families the scripts build from the game's own words (every ruleset option and
value, hand class, rank, suit, phase, status, bet action and decision)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from service.api.play_page import LANGUAGES
from service.projections.webhook_messages import EVENT_NAMES as WEBHOOK_EVENTS
from service.rules import protection, wallet
from service.rules.ranking import CATEGORIES
from service.rules.ruleset import Ruleset, option_kinds
from service.rules.table_state import BET_ACTIONS, TIMED_PHASES

WEB = Path(__file__).resolve().parents[1] / "service" / "api" / "web"
TABLES = {lang: json.loads((WEB / "strings" / f"{lang}.json").read_text()) for lang in LANGUAGES}
ENGLISH = TABLES["en"]
PAGES = sorted(WEB.glob("*.html")) + sorted(WEB.glob("*.js"))
_NAMESPACES = ("common.", "play.", "admin.")


def _placeholders(text: str) -> set[str]:
    return set(re.findall(r"\{(\w+)\}", text))


@pytest.mark.parametrize("language", [lang for lang in LANGUAGES if lang != "en"])
def test_every_language_has_the_same_keys_and_placeholders(language: str):
    table = TABLES[language]
    assert set(table) == set(ENGLISH)
    for key, text in table.items():
        assert text.strip(), key
        assert _placeholders(text) == _placeholders(ENGLISH[key]), key


def test_keys_are_namespaced():
    assert all(key.startswith(_NAMESPACES) for key in ENGLISH)


def _literal_keys() -> set[str]:
    """Every key written out in a page or a script (a string literal in a namespace)."""
    keys: set[str] = set()
    for path in PAGES:
        text = path.read_text()
        keys |= set(re.findall(r"""["'`]((?:common|play|admin)\.[a-z0-9_.]+)["'`]""", text))
    return keys


def _built_keys() -> set[str]:
    """The keys the scripts build from a template (`common.hand.${category}`, ...)."""
    options = option_kinds()["options"]
    values = {"true", "false", "in", "out", "high", "low", "both"}
    for kind in options.values():
        values |= set(kind.get("choices", ()))
    keys = {f"common.rules.{name}" for name in options} | {f"common.value.{v}" for v in values}
    keys |= {f"common.hand.{c}" for c in CATEGORIES[5]}
    keys |= {f"common.rank.{r}.{n}" for r in "23456789TJQKA" for n in ("one", "many")}
    keys |= {f"common.suit.{s}" for s in "shdc"}
    keys |= {f"common.phase.{p}" for p in (*TIMED_PHASES, "showdown")}
    keys |= {f"play.wait.{p}" for p in (*TIMED_PHASES, "showdown")}
    keys |= {f"common.status.{s}" for s in ("active", "waiting", "sitting_out", "left")}
    keys |= {f"common.status.{s}" for s in ("open", "playing", "ended")}
    keys |= {f"play.log.bet.{a}" for a in BET_ACTIONS} | {f"play.act.{a}" for a in BET_ACTIONS}
    keys |= {f"play.log.decision.{d}" for d in Ruleset(hi_lo=True, ante=2).decisions}
    keys |= {f"play.log.decision.{d}" for d in Ruleset().decisions}
    keys |= {f"play.act.{d}" for d in ("in", "out", "high", "low", "both")}
    keys |= {f"play.feed.{s}" for s in ("live", "reconnecting", "closed")}
    keys |= {f"common.verify.{s}" for s in ("verified", "failed", "not_verifiable", "invalid")}
    keys |= {f"admin.job.{s}" for s in ("queued", "running", "finished", "failed")}
    keys |= {f"admin.role.{r}" for r in ("operator", "auditor", "none")}
    keys |= {f"admin.hands.{s}" for s in ("complete", "cancelled", "interrupted")}
    outcomes = ("nobody_in", "uncontested", "showdown", "kitty_wins", "beats_kitty", "all_tied")
    keys |= {f"admin.outcome.{o}" for o in (*outcomes, "others_folded")}
    keys |= {f"admin.webhooks.event.{e}" for e in WEBHOOK_EVENTS}
    keys |= {f"admin.wallet.kind.{k}" for k in wallet.KINDS}
    keys |= {f"play.log.player_away.{r}" for r in protection.AWAY_REASONS}
    keys |= {f"play.log.session_ended.{r}" for r in protection.ENDINGS}
    keys |= {f"play.log.reality_check_answered.{a}" for a in protection.ANSWERS}
    keys |= {f"play.net.{way}.{n}" for way in ("up", "down") for n in ("one", "other")}
    keys |= {f"admin.wallet.reason.{r}" for r in wallet.REASONS}
    keys |= {f"admin.wallet.status.{s}" for s in wallet.STATUSES}
    return keys


def test_every_key_the_pages_use_is_in_the_tables():
    missing = sorted((_literal_keys() | _built_keys()) - set(ENGLISH))
    assert not missing, f"keys the pages use with no string: {missing}"


def test_the_templates_the_scripts_build_are_all_accounted_for():
    """A script that builds a key from a template must build one of the families above."""
    families = {re.sub(r"\$\{[^}]*\}.*$", "", key) for key in _templates()}
    built = _built_keys()
    for family in families:
        assert any(key.startswith(family) for key in built), family


def _templates() -> set[str]:
    found: set[str] = set()
    for path in PAGES:
        found |= set(re.findall(r"`((?:common|play|admin)\.[^`]*\$\{[^`]*)`", path.read_text()))
    return found


def _messages(text: str) -> list[tuple[str, set[str]]]:
    """The messages a script builds with `msg("key", {name: value, ...})`: each key and the
    names of the values it is given (none when it is given none)."""
    found = []
    for key, values in re.findall(r'msg\(\s*"([^"]+)"\s*(?:,\s*\{([^}]*)\})?\s*\)', text):
        values = re.sub(r'"[^"]*"', "", values)
        while re.search(r"\([^()]*\)|\[[^\[\]]*\]", values):
            values = re.sub(r"\([^()]*\)|\[[^\[\]]*\]", "", values)
        found.append(
            (key, {part.split(":")[0].strip() for part in values.split(",") if part.strip()})
        )
    return found


def test_the_verifiers_messages_give_every_placeholder_its_value():
    """fairness.js words nothing itself: each check it makes is a message whose key is in the
    tables and whose values are exactly the key's `{placeholders}` (a value missing would
    show as `{name}`, one too many would never show); a key it picks between (`msg(a ? "x" :
    "y")`) takes no values."""
    text = (WEB / "fairness.js").read_text()
    messages = _messages(text)
    assert len(messages) > 40
    for key, names in messages:
        assert key in ENGLISH, key
        assert names == _placeholders(ENGLISH[key]), (key, names)
    given = {key for key, _ in messages}
    picked = set(re.findall(r'["\'](common\.verify\.[a-z_.]+)["\']', text)) - given
    for key in picked:
        assert not _placeholders(ENGLISH[key]), key
