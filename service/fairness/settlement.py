"""The settlement's arithmetic, from the history alone: no chip appears or vanishes in the
hand's settlement (the bets of a betting round are in the pot in play), and the betting round
followed its fixed limit and adds up to the bets the outcome names. Amounts that are not whole
numbers of chips fail the check that needs them."""

from __future__ import annotations

from typing import Any

from .report import CheckList

_ACTIONS = ("check", "bet", "call", "raise", "fold")


def _chips(value: Any) -> int | None:
    """A whole, non-negative number of chips, or None."""
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return value if ok else None


def _total(amounts: Any) -> int | None:
    """The sum of a seat -> chips map (absent: 0), or None when it is not one."""
    if amounts is None:
        return 0
    if not isinstance(amounts, dict):
        return None
    values = [_chips(v) for v in amounts.values()]
    return None if None in values else sum(v for v in values if v is not None)


def _sum(outcome: dict[str, Any], fields: tuple[str, ...], maps: tuple[str, ...]) -> int | None:
    parts = [_chips(outcome.get(name, 0)) for name in fields]
    parts += [_total(outcome.get(name)) for name in maps]
    return None if None in parts else sum(p for p in parts if p is not None)


def check_settlement(history: dict[str, Any], checks: CheckList) -> None:
    """Add the settlement's checks to `checks` (nothing for a hand that was not resolved)."""
    outcome = history.get("outcome")
    if not isinstance(outcome, dict):
        return
    came = _sum(outcome, ("pot_in_play", "reserve_before", "side_pot_before"), ("matched", "wimp"))
    went = _sum(outcome, ("pot", "reserve", "side_pot", "rake"), ("won",))
    if came is None or went is None:
        checks.add("settlement chips", False, "the outcome's amounts are not whole chips")
    else:
        detail = (
            f"pot in play (bets included), reserve, side pot and matches: {came}; "
            f"won, rake, and pot, reserve and side pot after: {went}"
        )
        checks.add("settlement chips", came == went, detail)
    low = outcome.get("low")
    if isinstance(low, dict):
        came, went = _sum(low, ("pot_in_play",), ("matched",)), _sum(low, ("pot", "rake"), ("won",))
        ok = came is not None and came == went
        checks.add("low pot chips", ok, f"in {came}, out {went}")
    given = history.get("rules")
    rules: dict[str, Any] = given if isinstance(given, dict) else {}
    pots = [outcome, *([low] if isinstance(low, dict) else [])]
    if rules.get("rake_percent") or any(p.get("rake") for p in pots):
        problems = [_rake_problem(rules, pot) for pot in pots]
        found = [p for p in problems if p]
        detail = "; ".join(found) or (
            f"{rules.get('rake_percent')}% capped at {rules.get('rake_cap') or 'no cap'}: "
            + ", ".join(str(p.get("rake", 0)) for p in pots)
        )
        checks.add("rake", not found, detail)
    if "bets" in history:
        problems = _bet_problems(history, outcome)
        detail = "; ".join(problems) or f"{len(history['bets'])} actions, fixed limit"
        checks.add("betting round", not problems, detail)


RAKED = ("showdown", "all_tied")
"""Outcomes of a pot won at a showdown of two or more in-players: only they are raked."""


def _rake_problem(rules: dict[str, Any], pot: dict[str, Any]) -> str:
    """What is wrong with one pot's rake ("" when nothing): rake_percent of the pot won
    (what the winners got plus the rake), rounded down, at most rake_cap, at a showdown."""
    percent, cap = rules.get("rake_percent", 0), _chips(rules.get("rake_cap", 0))
    rake, won = _chips(pot.get("rake", 0)), _total(pot.get("won"))
    if not isinstance(percent, int | float) or cap is None or rake is None or won is None:
        return "the rules' rake_percent and rake_cap, or the rake, are not numbers"
    expected = 0
    if pot.get("outcome") in RAKED:
        expected = (won + rake) * round(percent * 100) // 10_000
        expected = min(expected, cap) if cap else expected
    if rake != expected:
        return f"the rake of a {pot.get('outcome')} pot is {rake}, the rules say {expected}"
    return ""


def _bet_problems(history: dict[str, Any], outcome: dict[str, Any]) -> list[str]:
    """Replay the fixed-limit round: each action's price, the raise cap, and the totals."""
    given = history.get("rules")
    rules: dict[str, Any] = given if isinstance(given, dict) else {}
    size, cap = _chips(rules.get("bet_size")), _chips(rules.get("max_raises"))
    entries = history["bets"]
    if not size or cap is None or not isinstance(entries, list):
        return ["the rules' bet_size and max_raises, or the bets, are missing"]
    put_in: dict[str, int] = {}
    bet_to = raises = 0
    folded: list[str] = []
    problems = []
    for step, entry in enumerate(entries, start=1):
        fields = entry if isinstance(entry, dict) else {}
        seat, action = fields.get("seat"), fields.get("action")
        amount, to = _chips(fields.get("amount")), _chips(fields.get("bet_to"))
        if _chips(seat) is None or action not in _ACTIONS or amount is None or to is None:
            return [f"action {step} is not a seat, an action and whole chips"]
        who = str(seat)
        owed = bet_to - put_in.get(who, 0)
        expected = {"call": owed, "check": 0, "fold": 0}.get(action, owed + size)
        if action in ("bet", "raise"):
            if (action == "bet") != (bet_to == 0):
                problems.append(f"action {step}: a {action} with {bet_to} already bet")
            raises += action == "raise"
            bet_to += size
        if action == "check" and owed:
            problems.append(f"action {step}: seat {who} checked owing {owed}")
        if amount != expected or to != bet_to:
            problems.append(f"action {step}: seat {who} {action} put in {amount}, not {expected}")
        put_in[who] = put_in.get(who, 0) + amount
        folded += [who] if action == "fold" else []
    if raises > cap:
        problems.append(f"{raises} raises, more than max_raises {cap}")
    named = outcome.get("bets") or {}
    if {s: n for s, n in put_in.items() if n} != named:
        problems.append(f"the actions put in {put_in}, the outcome says {named}")
    said = outcome.get("folded") or []
    if not isinstance(said, list) or sorted(folded) != sorted(map(str, said)):
        problems.append(f"seats {folded} folded, the outcome says {said}")
    matched = outcome.get("matched")
    if not isinstance(matched, dict) or not set(folded) <= set(matched):
        problems.append("a folder did not match (a fold loses the hand)")
    return problems
