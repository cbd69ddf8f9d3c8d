"""The settlement's arithmetic, from the history alone: no chip appears or vanishes in the
hand's settlement (the bets of a betting round are in the pot in play), and the betting round
followed its fixed limit and adds up to the bets the outcome names."""

from __future__ import annotations

from typing import Any

from .report import CheckList


def _total(amounts: Any) -> int:
    return sum(amounts.values()) if isinstance(amounts, dict) else 0


def check_settlement(history: dict[str, Any], checks: CheckList) -> None:
    """Add the settlement's checks to `checks` (nothing for a hand that was not resolved)."""
    outcome = history.get("outcome")
    if not isinstance(outcome, dict):
        return
    came = outcome["pot_in_play"] + outcome.get("reserve_before", 0)
    came += outcome.get("side_pot_before", 0) + _total(outcome["matched"])
    came += _total(outcome["wimp"])
    went = _total(outcome["won"]) + outcome["pot"] + outcome.get("reserve", 0)
    went += outcome.get("side_pot", 0)
    detail = (
        f"pot in play {outcome['pot_in_play']} (bets {_total(outcome.get('bets'))} included) "
        f"+ reserve, side pot and matches = {came}; won + pot, reserve and side pot after = {went}"
    )
    checks.add("settlement chips", came == went, detail)
    low = outcome.get("low")
    if isinstance(low, dict):
        came = low["pot_in_play"] + _total(low["matched"])
        went = _total(low["won"]) + low["pot"]
        checks.add("low pot chips", came == went, f"in {came}, out {went}")
    if isinstance(history.get("bets"), list):
        _check_bets(history, outcome, checks)


def _check_bets(history: dict[str, Any], outcome: dict[str, Any], checks: CheckList) -> None:
    """Replay the fixed-limit round: each action's price, the raise cap, and the totals."""
    rules = history.get("rules") or {}
    size: int = rules.get("bet_size") or rules.get("ante") or 1
    cap: int = rules.get("max_raises", 3)
    put_in: dict[str, int] = {}
    bet_to = raises = 0
    folded: list[int] = []
    problems = []
    for step, entry in enumerate(history["bets"], start=1):
        seat, action, amount = str(entry["seat"]), entry["action"], entry["amount"]
        owed = bet_to - put_in.get(seat, 0)
        if action in ("bet", "raise"):
            if (action == "bet") != (bet_to == 0):
                problems.append(f"action {step}: a {action} with {bet_to} already bet")
            raises += action == "raise"
            bet_to += size
            expected = owed + size
        else:
            expected = owed if action == "call" else 0
            if action == "check" and owed:
                problems.append(f"action {step}: seat {seat} checked owing {owed}")
        folded += [entry["seat"]] if action == "fold" else []
        if amount != expected or entry["bet_to"] != bet_to:
            problems.append(f"action {step}: seat {seat} {action} put in {amount}, not {expected}")
        put_in[seat] = put_in.get(seat, 0) + amount
    if raises > cap:
        problems.append(f"{raises} raises, more than max_raises {cap}")
    if {s: n for s, n in put_in.items() if n} != (outcome.get("bets") or {}):
        problems.append(f"the actions put in {put_in}, the outcome says {outcome.get('bets')}")
    if sorted(folded) != sorted(outcome.get("folded") or []):
        problems.append(f"seats {folded} folded, the outcome says {outcome.get('folded')}")
    if not set(map(str, folded)) <= set(outcome["matched"]):
        problems.append("a folder did not match (a fold loses the hand)")
    detail = "; ".join(problems) or (
        f"{len(history['bets'])} actions at {size} a bet, {sum(put_in.values())} chips bet"
    )
    checks.add("betting round", not problems, detail)
