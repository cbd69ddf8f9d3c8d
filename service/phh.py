"""Export a Guts hand history as PHH, the open poker hand-history format (TOML).

PHH (github.com/uoftcprg/phh-std) describes a hand by required fields (``variant``, ``antes``,
``blinds_or_straddles``, ``min_bet``, ``starting_stacks``, ``actions``), optional standard
fields (``hand``, ``table``, ``seats``, ``players``, ``time``, ``winnings``, ...) and custom
fields whose names start with ``_`` (other parsers ignore them). ``to_phh(history)`` turns the
JSON of GET /v1/tables/{table_id}/hands/{hand} into such a file. The TOML is written by hand
(no dependency) and parses with ``tomllib``.

Guts is not a PHH variant, so the mapping takes these decisions (assumptions, stated once):

* ``variant = "NT"`` (no-limit Texas hold 'em). It is the closest PHH variant: a button game
  of hole cards, high hands win, antes allowed, and its required fields are exactly those
  above. Guts has no board and no betting, so a PHH replayer (e.g. PokerKit) cannot replay the
  actions as hold 'em; ``_guts_variant`` says what the game really was. Readers must look at
  ``_guts_*`` for the Guts rules.
* Players ``p1`` .. ``pN`` are the seats of ``order`` in that order (the declaring order, from
  the button's left; the dealer is last), which is also the dealing order PHH expects.
  ``seats`` holds their 1-based seat numbers and ``_guts_seats`` the service's 0-based ones.
* ``blinds_or_straddles`` is all zeros. ``antes`` are the antes each player paid this hand
  (zeros when the pot carried over); with two players the array is reversed, as PHH reverses
  forced bets heads-up; ``_guts_antes`` keeps them in player order. ``min_bet`` is the table
  ante given as ``ante=``, else the largest ante paid this hand, else 1 (PHH wants a positive
  number; the history does not carry the table's rules).
* ``starting_stacks``: the history does not carry stacks. Pass ``starting_stacks={seat: chips}``
  to fill them in (``finishing_stacks`` is then computed: start - ante - match - wimp + won);
  otherwise each is ``inf``, PHH's notation for an unknown stack.
* Actions: ``d dh pN <cards>`` deals each hand (all of a player's cards in one action, in the
  order dealt). Unknown cards are ``??`` per card (so ``??????`` for three cards; the
  ``????`` of hold 'em examples is two unknown cards). A declaration "in" is ``pN cc`` (a
  check: there is nothing to call) and "out" is ``pN f`` (a fold), each with a commentary
  (``# in``, ``# out: timed out``, ...) in the order the decisions were made. At the showdown,
  each shown hand is ``pN sm <cards>``; a player who stayed in without showing (a lone winner)
  is ``pN sm ??????`` ("neither mucked nor shown" in PHH). The kitty is not a PHH player: its
  deal and showing are no-op commentaries (``# kitty dealt ...``), as are the settlement, a
  wimp-penalty showing and a void.
* Other house rules: a community card is ``d db <card>`` after the declarations; a draw is
  ``pN sd <discards>`` (``pN sd`` to stand pat) followed by ``d dh pN <drawn>``, with ``??``
  for the cards this viewer may not see (their number is public); pass the trash, which PHH
  has no action for, is a commentary per pass (``# p1 passes Ks to p2``) and ``_guts_passes``.
  In a hi-lo game "high", "low" and "both" are all ``cc`` with the choice as commentary, and
  the low pot's result is in ``_guts_low_*`` (``winnings`` adds both pots).
* ``winnings`` is what each player took from the pot and side pot; the other amounts (matches,
  wimp penalties, pot, reserve and side pot before and after) are ``_guts_*`` fields, as are the
  fairness data (commitment, seed, client seed, deck context, stacked, reshuffled).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, time
from typing import Any

__all__ = ["GUTS_VARIANT", "PHH_VARIANT", "to_phh"]

PHH_VARIANT = "NT"
"""The PHH variant code written to ``variant``; see the module docstring."""

GUTS_VARIANT = (
    "Guts: each player is dealt hole cards and declares in or out once (simultaneously or in "
    "turn, per the table's rules); the best hand among those in wins the pot, and every other "
    "player in matches it (pays the pot amount into it). Exported as PHH variant NT for "
    "tooling: 'cc' = in (or high/low/both in hi-lo), 'f' = out. House rules may add a kitty (a "
    "dummy hand dealt last in each round that those in must beat), pass the trash, a community "
    "card or a draw; see the actions and the other _guts_ fields."
)
"""What ``_guts_variant`` says: the game the PHH ``variant`` only approximates."""

_DEFAULT_CARDS = 3
_UNKNOWN_CARD = "??"


# --- TOML -------------------------------------------------------------------------------------

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f"}
_ESCAPES["\r"] = "\\r"


def _toml_string(text: str) -> str:
    """A TOML basic string: quotes, backslashes and control characters escaped."""
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _toml_value(value: Any) -> str:
    """One TOML value: a string, bool, int, float (``inf``/``nan`` too), local time or array."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, time):
        if value.tzinfo is not None:
            raise TypeError("TOML local times have no time zone")
        return value.isoformat(timespec="milliseconds" if value.microsecond else "seconds")
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def _toml_document(fields: Iterable[tuple[str, Any]], header: Iterable[str] = ()) -> str:
    """Top-level ``key = value`` lines (``None`` values left out); ``actions`` one per line."""
    lines = [f"# {line}" if line else "#" for line in header]
    for key, value in fields:
        if value is None:
            continue
        if not key or not all(c.isascii() and (c.isalnum() or c in "_-") for c in key):
            raise ValueError(f"not a bare TOML key: {key!r}")
        if isinstance(value, list | tuple) and len(value) > 0 and key == "actions":
            items = "".join(f"  {_toml_value(item)},\n" for item in value)
            lines.append(f"{key} = [\n{items}]")
        else:
            lines.append(f"{key} = {_toml_value(value)}")
    return "\n".join(lines) + "\n"


# --- the hand ---------------------------------------------------------------------------------


def _cards_per_hand(history: Mapping[str, Any], cards: int | None) -> int:
    """The number of cards in each hand: given, else seen in the history, else 3."""
    if cards is not None:
        return cards
    outcome = history.get("outcome") or {}
    seen = [
        *(history.get("cards") or {}).values(),
        *(outcome.get("shown") or {}).values(),
        history.get("kitty") or [],
        outcome.get("kitty_shown") or [],
    ]
    sizes = [len(hand) for hand in seen if hand]
    return sizes[0] if sizes else _DEFAULT_CARDS


def _hand_text(hand: Iterable[str] | None, size: int) -> str:
    """Cards in PHH notation, concatenated; ``??`` for each unknown card."""
    return "".join(hand) if hand else _UNKNOWN_CARD * size


def _per_player(order: list[int], values: Mapping[str, Any] | None, default: Any) -> list[Any]:
    """An array in player order from a map keyed by seat (as a string)."""
    values = values or {}
    return [values.get(str(seat), default) for seat in order]


def _declaration_actions(history: Mapping[str, Any], player: Mapping[int, str]) -> list[str]:
    """``pN cc`` (in) and ``pN f`` (out), in the order the decisions were made."""
    decisions = history.get("decisions") or {}
    ordered = sorted(
        ((int(seat), made) for seat, made in decisions.items() if int(seat) in player),
        key=lambda item: (item[1].get("version", 0), item[0]),
    )
    actions = []
    for seat, made in ordered:
        decision = made.get("decision")
        by = made.get("by", "player")
        note = {"platform": ": timed out, declared by the platform", "auto_in": ": dealer auto-in"}
        comment = f"{decision}{note.get(by, '')}"
        if decision == "out":
            actions.append(f"{player[seat]} f # {comment}")
        elif isinstance(decision, str):  # "in"; "high", "low" or "both" in a hi-lo game
            actions.append(f"{player[seat]} cc # {comment}")
    return actions


def _pass_actions(
    history: Mapping[str, Any], order: list[int], player: Mapping[int, str]
) -> list[str]:
    """Pass the trash as commentaries (PHH has no passing): who passed which card to whom."""
    passes = history.get("passes") or {}
    actions = []
    for i, seat in enumerate(order):
        entry = passes.get(str(seat))
        if isinstance(entry, dict):
            card = entry.get("card") or _UNKNOWN_CARD
            receiver = player[order[(i + 1) % len(order)]]
            actions.append(f"# {player[seat]} passes {card} to {receiver}")
    return actions


def _draw_actions(history: Mapping[str, Any], player: Mapping[int, str]) -> list[str]:
    """Draws in the order made: ``pN sd <discards>`` (``pN sd`` to stand pat), then the dealer's
    ``d dh pN <drawn>``; cards this viewer may not see are ``??`` (their number is public)."""
    draws = history.get("draws") or {}
    actions = []
    for seat_text, entry in draws.items():
        seat = int(seat_text)
        if seat not in player or not isinstance(entry, dict):
            continue
        discarded, drawn = entry.get("discarded"), entry.get("drawn")
        out = (
            "".join(discarded)
            if isinstance(discarded, list)
            else _UNKNOWN_CARD * int(discarded or 0)
        )
        got = "".join(drawn) if isinstance(drawn, list) else _UNKNOWN_CARD * int(drawn or 0)
        note = " # timed out: stands pat" if entry.get("by") == "platform" else ""
        actions.append(f"{player[seat]} sd {out}".rstrip() + note)
        if got:
            actions.append(f"d dh {player[seat]} {got}")
    return actions


def _showdown_actions(
    history: Mapping[str, Any], order: list[int], player: Mapping[int, str], size: int
) -> list[str]:
    """The showing of hands, the kitty and the settlement, as PHH actions and commentaries."""
    outcome = history.get("outcome")
    if not outcome:
        if history.get("status") == "cancelled":
            return [f"# hand voided: {history.get('void_reason', '')}".rstrip()]
        return []
    in_seats = set(outcome.get("in_seats") or [])
    shown = outcome.get("shown") or {}
    actions = []
    for seat in order:
        cards = shown.get(str(seat))
        if seat in in_seats:
            actions.append(f"{player[seat]} sm {_hand_text(cards, size)}")
        elif cards:  # nobody in and a wimp penalty: every hand is turned up, but all folded
            actions.append(f"# {player[seat]} shows {''.join(cards)} for the wimp penalty")
    if outcome.get("kitty_shown"):
        actions.append(f"# kitty shows {''.join(outcome['kitty_shown'])}")
    for key, verb in (("won", "wins"), ("matched", "matches the pot with"), ("wimp", "pays")):
        for seat in order:
            amount = (outcome.get(key) or {}).get(str(seat))
            if amount:
                actions.append(f"# {player[seat]} {verb} {amount}")
    low = outcome.get("low") or {}
    for key, verb in (("won", "wins from the low pot"), ("matched", "matches the low pot with")):
        for seat in order:
            amount = (low.get(key) or {}).get(str(seat))
            if amount:
                actions.append(f"# {player[seat]} {verb} {amount}")
    actions.append(f"# outcome: {outcome.get('outcome')}")
    return actions


def _passes_field(history: Mapping[str, Any], order: list[int]) -> list[str] | None:
    """The card each player passed (pass the trash), ``??`` when hidden; None without passing."""
    passes = history.get("passes")
    if not passes:
        return None
    entries = [passes.get(str(seat)) for seat in order]
    return [e.get("card") or _UNKNOWN_CARD if isinstance(e, dict) else "" for e in entries]


def _start_time(history: Mapping[str, Any]) -> datetime | None:
    """When the hand was dealt, in UTC without a time zone (PHH's ``time`` is a local time,
    with ``time_zone`` saying which); None when the history has no usable ``started_at``."""
    started = history.get("started_at")
    if not isinstance(started, str):
        return None
    try:
        at = datetime.fromisoformat(started.replace("Z", "+00:00"))
    except ValueError:
        return None
    if at.tzinfo is not None:
        at = at.astimezone(UTC).replace(tzinfo=None)
    return at


def to_phh(
    history: Mapping[str, Any],
    *,
    ante: int | None = None,
    starting_stacks: Mapping[int, int] | None = None,
    players: Mapping[int, str] | None = None,
    cards: int | None = None,
) -> str:
    """The hand-history record `history` as a PHH (TOML) document.

    `ante` is the table's ante (for ``min_bet``), `starting_stacks` and `players` map seats to
    the stacks before the deal and to player names, `cards` is the number of cards per hand
    (inferred from the visible hands when not given): the history carries none of these.
    Works for any viewer's history: cards the viewer could not see are ``??``.
    """
    order = [int(seat) for seat in history["order"]]
    player = {seat: f"p{i}" for i, seat in enumerate(order, start=1)}
    size = _cards_per_hand(history, cards)
    outcome = history.get("outcome") or {}
    dealt = history.get("cards") or {}
    antes = _per_player(order, history.get("antes"), 0)
    low = outcome.get("low") or {}
    won_high = _per_player(order, outcome.get("won"), 0)
    won_low = _per_player(order, low.get("won"), 0)
    won = [h + lo for h, lo in zip(won_high, won_low, strict=True)]
    matched_high = _per_player(order, outcome.get("matched"), 0)
    matched_low = _per_player(order, low.get("matched"), 0)
    matched = [h + lo for h, lo in zip(matched_high, matched_low, strict=True)]
    wimp = _per_player(order, outcome.get("wimp"), 0)

    actions = [f"d dh {player[seat]} {_hand_text(dealt.get(str(seat)), size)}" for seat in order]
    # An auditor's history has the kitty; a player's shows it only when it played.
    kitty_cards = history.get("kitty")
    kitty_known = "".join(kitty_cards or outcome.get("kitty_shown") or []) or None
    if kitty_known:
        actions.append(f"# kitty dealt {_hand_text(kitty_cards, size)}")
    actions += _pass_actions(history, order, player)
    actions += _declaration_actions(history, player)
    actions += [f"d db {card}" for card in history.get("community") or []]
    actions += _draw_actions(history, player)
    actions += _showdown_actions(history, order, player, size)

    min_bet = ante if ante is not None else max([a for a in antes if a > 0], default=1)
    stacks: list[Any] = [math.inf] * len(order)
    finishing = None
    if starting_stacks is not None:
        stacks = [starting_stacks.get(seat, math.inf) for seat in order]
        finishing = [
            stack - a - m - w + g
            for stack, a, m, w, g in zip(stacks, antes, matched, wimp, won, strict=True)
        ]
        if any(math.isinf(s) for s in finishing):
            finishing = None
    started = _start_time(history)
    decisions = history.get("decisions") or {}
    declared = [(decisions.get(str(seat)) or {}).get("decision", "") for seat in order]
    declared_by = [(decisions.get(str(seat)) or {}).get("by", "") for seat in order]

    # PHH reverses forced bets heads-up ("antes ... are reversed in heads-up games by rule"),
    # so two players' antes are written reversed to be read back per player.
    phh_antes = antes[::-1] if len(order) == 2 else antes
    fields: list[tuple[str, Any]] = [
        ("variant", PHH_VARIANT),
        ("antes", phh_antes),
        ("blinds_or_straddles", [0] * len(order)),
        ("min_bet", min_bet),
        ("starting_stacks", stacks),
        ("actions", actions),
        ("table", str(history.get("table_id", ""))),
        ("hand", history.get("hand")),
        ("seats", [seat + 1 for seat in order]),
        ("players", [players.get(seat, "") for seat in order] if players else None),
        ("year", started.year if started else None),
        ("month", started.month if started else None),
        ("day", started.day if started else None),
        ("time", started.time() if started else None),
        ("time_zone", "UTC" if started else None),
        ("winnings", won if history.get("outcome") else None),
        ("finishing_stacks", finishing),
        ("_guts_variant", GUTS_VARIANT),
        ("_guts_hand_id", history.get("hand_id")),
        ("_guts_game", history.get("game")),
        ("_guts_status", history.get("status")),
        ("_guts_started_at", history.get("started_at")),
        ("_guts_ended_at", history.get("ended_at")),
        ("_guts_void_reason", history.get("void_reason")),
        ("_guts_button_seat", history.get("button")),
        ("_guts_seats", order),
        ("_guts_antes", antes),
        ("_guts_cards_per_hand", size),
        ("_guts_declarations", declared),
        ("_guts_declared_by", declared_by),
        ("_guts_outcome", outcome.get("outcome")),
        ("_guts_in", [player[s] for s in outcome.get("in_seats") or [] if s in player]),
        ("_guts_winners", [player[s] for s in outcome.get("winners") or [] if s in player]),
        ("_guts_won", won_high if low else won),
        ("_guts_matched", matched_high if low else matched),
        ("_guts_wimp", wimp),
        ("_guts_low_outcome", low.get("outcome") if low else None),
        (
            "_guts_low_winners",
            [player[s] for s in low.get("winners") or [] if s in player] if low else None,
        ),
        ("_guts_low_won", won_low if low else None),
        ("_guts_low_matched", matched_low if low else None),
        ("_guts_low_pot_in_play", low.get("pot_in_play") if low else None),
        ("_guts_low_pot_after", low.get("pot") if low else None),
        ("_guts_community", "".join(history["community"]) if history.get("community") else None),
        ("_guts_passes", _passes_field(history, order)),
        ("_guts_kitty", kitty_known),
        ("_guts_pot_before", history.get("pot_before")),
        ("_guts_pot_in_play", history.get("pot_in_play")),
        ("_guts_pot_after", history.get("pot_after")),
        ("_guts_reserve_before", history.get("reserve_before")),
        ("_guts_reserve_after", history.get("reserve_after")),
        ("_guts_side_pot_before", history.get("side_pot_before")),
        ("_guts_side_pot_after", history.get("side_pot_after")),
        ("_guts_commitment", history.get("commitment")),
        ("_guts_seed", history.get("seed")),
        ("_guts_client_seed", history.get("client_seed")),
        ("_guts_deck_context", history.get("deck_context")),
        ("_guts_stacked", history.get("stacked")),
        ("_guts_reshuffled", history.get("reshuffled")),
    ]
    header = [
        f"Guts hand {history.get('hand_id', '')} in PHH (github.com/uoftcprg/phh-std).",
        "Guts is not a PHH variant: see _guts_variant; fields starting with _guts_ are Guts'.",
    ]
    return _toml_document(fields, header)
