"""``to_phh``: a Guts hand history as a PHH document (the fields, and the actions in order)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .actions import (
    UNKNOWN_CARD,
    bet_actions,
    declaration_actions,
    draw_actions,
    hand_text,
    pass_actions,
    showdown_actions,
)
from .toml_writer import toml_document

PHH_VARIANT = "NT"
"""The PHH variant code written to ``variant``; see the package docstring."""

GUTS_VARIANT = (
    "Guts: each player is dealt hole cards and declares in or out once (simultaneously or in "
    "turn, per the table's rules); the best hand among those in wins the pot, and every other "
    "player in matches it (pays the pot amount into it). Exported as PHH variant NT for "
    "tooling: 'cc' = in (or high/low/both in hi-lo), 'f' = out. House rules may add a kitty (a "
    "dummy hand dealt last in each round that those in must beat), pass the trash, a community "
    "card or a draw, and a draw game a fixed-limit betting round after the draw (its 'cc', "
    "'cbr' and 'f' are checks or calls, bets or raises, and folds; a folder still matches); "
    "see the actions and the other _guts_ fields."
)
"""What ``_guts_variant`` says: the game the PHH ``variant`` only approximates."""

_DEFAULT_CARDS = 3


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


def _per_player(order: list[int], values: Mapping[str, Any] | None, default: Any) -> list[Any]:
    """An array in player order from a map keyed by seat (as a string)."""
    values = values or {}
    return [values.get(str(seat), default) for seat in order]


def _passes_field(history: Mapping[str, Any], order: list[int]) -> list[str] | None:
    """The card each player passed (pass the trash), ``??`` when hidden; None without passing."""
    passes = history.get("passes")
    if not passes:
        return None
    entries = [passes.get(str(seat)) for seat in order]
    return [e.get("card") or UNKNOWN_CARD if isinstance(e, dict) else "" for e in entries]


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


@dataclass(frozen=True)
class _Amounts:
    """Each player's chips in the hand, in player order: what they put in and what they won."""

    antes: list[int]
    bets: list[int]
    wimp: list[int]
    won_high: list[int]
    won_low: list[int]
    matched_high: list[int]
    matched_low: list[int]

    @property
    def won(self) -> list[int]:
        """What each player won from the high and the low pots together."""
        return [h + lo for h, lo in zip(self.won_high, self.won_low, strict=True)]

    @property
    def matched(self) -> list[int]:
        """What each player matched into the high and the low pots together."""
        return [h + lo for h, lo in zip(self.matched_high, self.matched_low, strict=True)]


def _amounts(history: Mapping[str, Any], order: list[int]) -> _Amounts:
    """The chips each player put in and won, read from the history and its outcome."""
    outcome = history.get("outcome") or {}
    low = outcome.get("low") or {}
    return _Amounts(
        antes=_per_player(order, history.get("antes"), 0),
        bets=_per_player(order, outcome.get("bets"), 0),
        wimp=_per_player(order, outcome.get("wimp"), 0),
        won_high=_per_player(order, outcome.get("won"), 0),
        won_low=_per_player(order, low.get("won"), 0),
        matched_high=_per_player(order, outcome.get("matched"), 0),
        matched_low=_per_player(order, low.get("matched"), 0),
    )


def _known_kitty(history: Mapping[str, Any]) -> str | None:
    """The kitty's cards as text when the viewer saw them, else None.

    An auditor's history has the kitty; a player's shows it only when it played."""
    outcome = history.get("outcome") or {}
    return "".join(history.get("kitty") or outcome.get("kitty_shown") or []) or None


def _actions(
    history: Mapping[str, Any], order: list[int], player: Mapping[int, str], size: int
) -> list[str]:
    """The PHH actions in order: the deal, passes, declarations, draws, bets and the showdown."""
    dealt = history.get("cards") or {}
    actions = [f"d dh {player[seat]} {hand_text(dealt.get(str(seat)), size)}" for seat in order]
    if _known_kitty(history):
        actions.append(f"# kitty dealt {hand_text(history.get('kitty'), size)}")
    actions += pass_actions(history, order, player)
    actions += declaration_actions(history, player)
    actions += [f"d db {card}" for card in history.get("community") or []]
    actions += draw_actions(history, player)
    actions += bet_actions(history, player)
    actions += showdown_actions(history, order, player, size)
    return actions


def _stacks(
    order: list[int], starting_stacks: Mapping[int, int] | None, amounts: _Amounts
) -> tuple[list[Any], list[Any] | None]:
    """The starting stacks (infinite when unknown) and the finishing stacks (None unless every
    starting stack is known)."""
    if starting_stacks is None:
        return [math.inf] * len(order), None
    stacks = [starting_stacks.get(seat, math.inf) for seat in order]
    finishing = [
        stack - a - b - m - w + g
        for stack, a, b, m, w, g in zip(
            stacks,
            amounts.antes,
            amounts.bets,
            amounts.matched,
            amounts.wimp,
            amounts.won,
            strict=True,
        )
    ]
    if any(math.isinf(s) for s in finishing):
        return stacks, None
    return stacks, finishing


def _phh_fields(
    history: Mapping[str, Any],
    order: list[int],
    amounts: _Amounts,
    *,
    actions: list[str],
    ante: int | None,
    starting_stacks: Mapping[int, int] | None,
    players: Mapping[int, str] | None,
) -> list[tuple[str, Any]]:
    """The fields PHH defines, in the order it lists them."""
    antes = amounts.antes
    min_bet = ante if ante is not None else max([a for a in antes if a > 0], default=1)
    stacks, finishing = _stacks(order, starting_stacks, amounts)
    started = _start_time(history)
    # PHH reverses forced bets heads-up ("antes ... are reversed in heads-up games by rule"),
    # so two players' antes are written reversed to be read back per player.
    phh_antes = antes[::-1] if len(order) == 2 else antes
    return [
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
        ("winnings", amounts.won if history.get("outcome") else None),
        ("finishing_stacks", finishing),
    ]


def _guts_hand_fields(
    history: Mapping[str, Any], order: list[int], amounts: _Amounts, size: int
) -> list[tuple[str, Any]]:
    """The _guts_ fields that describe the hand before its outcome: the game, seats, antes and
    who declared what."""
    decisions = history.get("decisions") or {}
    declared = [(decisions.get(str(seat)) or {}).get("decision", "") for seat in order]
    declared_by = [(decisions.get(str(seat)) or {}).get("by", "") for seat in order]
    return [
        ("_guts_variant", GUTS_VARIANT),
        ("_guts_hand_id", history.get("hand_id")),
        ("_guts_game", history.get("game")),
        ("_guts_status", history.get("status")),
        ("_guts_started_at", history.get("started_at")),
        ("_guts_ended_at", history.get("ended_at")),
        ("_guts_void_reason", history.get("void_reason")),
        ("_guts_button_seat", history.get("button")),
        ("_guts_seats", order),
        ("_guts_antes", amounts.antes),
        ("_guts_cards_per_hand", size),
        ("_guts_declarations", declared),
        ("_guts_declared_by", declared_by),
    ]


def _guts_outcome_fields(
    history: Mapping[str, Any], player: Mapping[int, str], amounts: _Amounts
) -> list[tuple[str, Any]]:
    """The _guts_ fields of the outcome: who was in, who won, and the chips moved (high and
    low)."""
    outcome = history.get("outcome") or {}
    low = outcome.get("low") or {}

    def names(seats: list[int] | None) -> list[str]:
        return [player[s] for s in seats or [] if s in player]

    betting = "bets" in history
    return [
        ("_guts_outcome", outcome.get("outcome")),
        ("_guts_in", names(outcome.get("in_seats"))),
        ("_guts_winners", names(outcome.get("winners"))),
        ("_guts_won", amounts.won_high if low else amounts.won),
        ("_guts_matched", amounts.matched_high if low else amounts.matched),
        ("_guts_wimp", amounts.wimp),
        ("_guts_rake", (outcome.get("rake") or 0) + (low.get("rake") or 0 if low else 0)),
        ("_guts_bets", amounts.bets if betting else None),
        ("_guts_folded", names(outcome.get("folded")) if betting else None),
        ("_guts_low_outcome", low.get("outcome") if low else None),
        ("_guts_low_winners", names(low.get("winners")) if low else None),
        ("_guts_low_won", amounts.won_low if low else None),
        ("_guts_low_matched", amounts.matched_low if low else None),
        ("_guts_low_pot_in_play", low.get("pot_in_play") if low else None),
        ("_guts_low_pot_after", low.get("pot") if low else None),
    ]


def _guts_table_fields(history: Mapping[str, Any], order: list[int]) -> list[tuple[str, Any]]:
    """The _guts_ fields of the table's cards and chips around the hand, and of its deal's
    fairness (commitment, seeds)."""
    community = history.get("community")
    return [
        ("_guts_community", "".join(community) if community else None),
        ("_guts_passes", _passes_field(history, order)),
        ("_guts_kitty", _known_kitty(history)),
        *(
            (f"_guts_{key}", history.get(key))
            for key in (
                "pot_before",
                "pot_in_play",
                "pot_after",
                "reserve_before",
                "reserve_after",
                "side_pot_before",
                "side_pot_after",
                "commitment",
                "seed",
                "client_seed",
                "deck_context",
                "stacked",
                "reshuffled",
            )
        ),
    ]


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
    amounts = _amounts(history, order)
    fields = [
        *_phh_fields(
            history,
            order,
            amounts,
            actions=_actions(history, order, player, size),
            ante=ante,
            starting_stacks=starting_stacks,
            players=players,
        ),
        *_guts_hand_fields(history, order, amounts, size),
        *_guts_outcome_fields(history, player, amounts),
        *_guts_table_fields(history, order),
    ]
    header = [
        f"Guts hand {history.get('hand_id', '')} in PHH (github.com/uoftcprg/phh-std).",
        "Guts is not a PHH variant: see _guts_variant; fields starting with _guts_ are Guts'.",
    ]
    return toml_document(fields, header)
