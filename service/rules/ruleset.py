"""Rulesets: every house rule of docs/rules.md as one option, the named presets, and validation.

A `Ruleset` is fully resolved: every option has a value. `resolve_ruleset(preset, overrides)`
builds one from a preset plus overrides and refuses, with an `InvalidRules` naming the option,
anything unknown, out of range, or a combination that cannot work.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, Literal, get_args, get_origin, get_type_hints

from .errors import InvalidRules

AnteRule = Literal["pot_empty", "every_hand", "unless_matched"]
DeckMode = Literal["fresh_each_hand", "carry_over"]
DeclareMode = Literal["simultaneous", "sequential"]
MatchRule = Literal["all_losers", "lowest_loser"]
CapMode = Literal["none", "cap", "reserve", "max_match"]
ShortStack = Literal["cover", "table_stakes"]
WimpInto = Literal["pot", "side_pot"]
ButtonMoves = Literal["hand", "game"]
Wild = Literal["none", "deuces", "one_eyed_jacks"]
MatchBasis = Literal["declared", "after_betting"]

DECK_SIZE = 52
MAX_TIMEOUT_S = 3600
MAX_CHIPS = 10**12  # a sanity bound on any single amount, far above any real table


@dataclass(frozen=True)
class Ruleset:
    """One table's complete, validated set of house rules (docs/rules.md describes each option)."""

    preset: str = "three-card"
    cards: int = 3
    ante: int = 1
    seats: int = 6
    decision_timeout_s: int = 30
    ante_rule: AnteRule = "pot_empty"
    winner_skips_ante: bool = False
    ante_after_all_out: bool = False
    kitty: bool = False
    deck: DeckMode = "fresh_each_hand"
    declare: DeclareMode = "simultaneous"
    dealer_auto_in: bool = False
    straights_and_flushes: bool = True
    ace_low_straight: bool = True
    suit_tiebreak: bool = False
    match: MatchRule = "all_losers"
    cap_mode: CapMode = "none"
    cap: int | None = None
    wimp_penalty: int = 0
    wimp_into: WimpInto = "pot"
    short_stack: ShortStack = "table_stakes"
    cover_grace_s: int = 5
    button_moves: ButtonMoves = "hand"
    auto_resolve: bool = False
    hi_lo: bool = False
    draw: int = 0
    community_cards: int = 0
    pass_the_trash: bool = False
    no_peek: bool = False
    wild: Wild = "none"
    betting_round: bool = False
    bet_size: int | None = None  # resolved to the ante when betting_round is on
    max_raises: int = 3
    match_basis: MatchBasis = "declared"
    rake_percent: int | float = 0  # the house's share of a pot won at a showdown, 0-10 %
    rake_cap: int = 0  # at most this many chips of rake per pot; 0: no cap
    away_after_missed: int = 2  # deadlines missed in a row that make a player away; 0: never

    def to_dict(self) -> dict[str, Any]:
        """The ruleset as plain JSON-ready data (every option, resolved)."""
        return {name: getattr(self, name) for name in _FIELD_NAMES}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Ruleset:
        """A stored ruleset, rebuilt once per distinct ruleset (snapshots are decoded on every
        command, and a table's rules never change)."""
        return _interned(tuple(sorted(data.items())))

    @property
    def cap_amount(self) -> int:
        """The cap in chips; only meaningful when `cap_mode` is not "none"."""
        return self.cap or 0

    def max_seats(self) -> int:
        """How many players one deck can deal to, counting the kitty as a hand, the community
        card, and one full draw (later draws reshuffle the discards when the deck runs short,
        so a draw can always be served)."""
        spare = self.community_cards + self.draw
        return (DECK_SIZE - spare) // self.cards - (1 if self.kitty else 0)

    @property
    def rake_basis_points(self) -> int:
        """`rake_percent` in hundredths of a percent (exact: it has at most two decimals)."""
        return round(self.rake_percent * 100)

    @property
    def bet_amount(self) -> int:
        """One bet or raise in chips (fixed limit); only meaningful with `betting_round`."""
        return self.bet_size or self.ante

    @property
    def decisions(self) -> tuple[str, ...]:
        """What a player may declare under these rules."""
        return ("out", "high", "low", "both") if self.hi_lo else ("in", "out")


_FIELD_NAMES = tuple(f.name for f in fields(Ruleset))


@functools.lru_cache(maxsize=1024)
def _interned(items: tuple[tuple[str, Any], ...]) -> Ruleset:
    return Ruleset(**dict(items))


_CHOICES: dict[str, tuple[str, ...]] = {
    name: get_args(hint)
    for name, hint in get_type_hints(Ruleset).items()
    if get_origin(hint) is Literal
}
"""Each option with a fixed set of values, and its values: read from the Literal types above
(written once)."""
_BOOLS = {
    "winner_skips_ante",
    "ante_after_all_out",
    "kitty",
    "dealer_auto_in",
    "straights_and_flushes",
    "ace_low_straight",
    "suit_tiebreak",
    "auto_resolve",
    "hi_lo",
    "pass_the_trash",
    "no_peek",
    "betting_round",
}
# option -> (minimum, maximum); None as a value is allowed only for `cap`.
_INTS: dict[str, tuple[int, int]] = {
    "cards": (2, 5),
    "ante": (1, MAX_CHIPS),
    "seats": (2, DECK_SIZE),
    "decision_timeout_s": (1, MAX_TIMEOUT_S),
    "cap": (1, MAX_CHIPS),
    "wimp_penalty": (0, 1000),
    "cover_grace_s": (0, 600),
    "draw": (0, 5),
    "community_cards": (0, 1),
    "bet_size": (1, MAX_CHIPS),
    "max_raises": (0, 10),
    "rake_cap": (0, MAX_CHIPS),
    "away_after_missed": (0, 100),
}
# Options whose value may be None (not set): resolved from others or meaning "off".
_NULLABLE = {"cap", "bet_size"}
OPTION_NAMES = tuple(f.name for f in fields(Ruleset) if f.name != "preset")


def _preset(**options: Any) -> Ruleset:
    return replace(Ruleset(), **options)


PRESETS: dict[str, Ruleset] = {
    "two-card": _preset(
        preset="two-card",
        cards=2,
        declare="sequential",
        dealer_auto_in=True,
        straights_and_flushes=False,
    ),
    "three-card": _preset(preset="three-card"),
    "monte-carlo": _preset(
        preset="monte-carlo",
        ante_rule="unless_matched",
        ante_after_all_out=True,
        cap_mode="max_match",
        short_stack="cover",
        auto_resolve=True,
    ),
    "survivor": _preset(
        preset="survivor",
        ante_rule="unless_matched",
        ante_after_all_out=True,
        cap_mode="max_match",
        short_stack="cover",
        match="lowest_loser",
        auto_resolve=True,
    ),
    "kitty": _preset(preset="kitty", cards=5, kitty=True),
}
# Casino tables of these games cap the match at 25x-50x the ante; the presets take the top of
# that range unless the table says otherwise (docs/rules.md, "Presets").
PRESET_CAP_MULTIPLE = {"monte-carlo": 50, "survivor": 50}


def option_kinds() -> dict[str, Any]:
    """Every option as a form would offer it, read from the checks above (JSON-ready): per
    option its ``kind`` (``bool``, ``choice`` with ``choices``, ``int`` with ``min``, ``max`` and
    ``nullable``, or ``percent``) and ``default``; and each preset's options."""
    options: dict[str, Any] = {}
    for name in OPTION_NAMES:
        kind: dict[str, Any]
        if name in _BOOLS:
            kind = {"kind": "bool"}
        elif name in _CHOICES:
            kind = {"kind": "choice", "choices": list(_CHOICES[name])}
        elif name in _INTS:
            low, high = _INTS[name]
            kind = {"kind": "int", "min": low, "max": high, "nullable": name in _NULLABLE}
        else:
            kind = {"kind": "percent", "min": 0, "max": 10, "step": 0.01}
        options[name] = {**kind, "default": getattr(Ruleset(), name)}
    presets = {name: rules.to_dict() for name, rules in PRESETS.items()}
    return {"options": options, "presets": presets}


def _check_value(name: str, value: Any) -> Any:
    if name == "rake_percent":
        return _check_rake_percent(value)
    if name in _BOOLS:
        if not isinstance(value, bool):
            raise InvalidRules(f"{name} must be true or false", field=name)
        return value
    if name in _CHOICES:
        if value not in _CHOICES[name]:
            allowed = ", ".join(_CHOICES[name])
            raise InvalidRules(f"{name} must be one of: {allowed}", field=name)
        return value
    if name in _INTS:
        if name in _NULLABLE and value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidRules(f"{name} must be a whole number", field=name)
        low, high = _INTS[name]
        if not low <= value <= high:
            raise InvalidRules(f"{name} must be between {low} and {high}", field=name)
        return value
    raise InvalidRules(f"unknown option {name!r}", field=name)  # pragma: no cover


def _check_rake_percent(value: Any) -> int | float:
    """A percentage from 0 to 10 with at most two decimals (2.5 is 250 basis points)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidRules("rake_percent must be a number", field="rake_percent")
    if not 0 <= value <= 10:
        raise InvalidRules("rake_percent must be between 0 and 10", field="rake_percent")
    if abs(value * 100 - round(value * 100)) > 1e-6:
        raise InvalidRules("rake_percent has at most two decimals", field="rake_percent")
    return int(value) if value == int(value) else value


def resolve_ruleset(
    preset: str = "three-card", overrides: Mapping[str, Any] | None = None
) -> Ruleset:
    """The preset with `overrides` applied, validated as a whole."""
    if preset not in PRESETS:
        raise InvalidRules(f"unknown preset {preset!r}; one of: {', '.join(PRESETS)}", "preset")
    overrides = dict(overrides or {})
    for name in overrides:
        if name not in OPTION_NAMES:
            raise InvalidRules(f"unknown option {name!r}", field=name)
    checked = {name: _check_value(name, value) for name, value in overrides.items()}
    rules = replace(PRESETS[preset], **checked)
    if rules.cap is None and preset in PRESET_CAP_MULTIPLE and "cap_mode" not in overrides:
        rules = replace(rules, cap=PRESET_CAP_MULTIPLE[preset] * rules.ante)
    if rules.betting_round and rules.bet_size is None:
        rules = replace(rules, bet_size=rules.ante)  # bets are in antes unless said
    validate(rules)
    return rules


def ruleset_from_dict(data: Mapping[str, Any]) -> Ruleset:
    """Rebuild a stored, fully resolved ruleset (as written by `Ruleset.to_dict`)."""
    known = {f.name for f in fields(Ruleset)}
    unknown = set(data) - known
    if unknown:
        raise InvalidRules(f"unknown option {sorted(unknown)[0]!r}", field=sorted(unknown)[0])
    values = {k: (v if k == "preset" else _check_value(k, v)) for k, v in data.items()}
    rules = Ruleset(**values)
    validate(rules)
    return rules


def validate(rules: Ruleset) -> None:
    """Refuse combinations of options that cannot work together."""
    if rules.cards not in (2, 3, 5):
        raise InvalidRules("cards must be 2, 3 or 5", field="cards")
    if rules.seats > rules.max_seats():
        hands = "players + kitty" if rules.kitty else "players"
        spare = rules.community_cards + rules.draw
        plus = f" + {spare} (community card and draw)" if spare else ""
        raise InvalidRules(
            f"seats: {rules.seats} seats cannot be dealt: ({hands}) x {rules.cards} cards{plus} "
            f"must fit in {DECK_SIZE} cards, so at most {rules.max_seats()} seats",
            field="seats",
        )
    if rules.cards == 2 and rules.straights_and_flushes:
        raise InvalidRules(
            "straights_and_flushes: two-card hands have no straights or flushes",
            field="straights_and_flushes",
        )
    if rules.cards == 5 and not rules.straights_and_flushes:
        raise InvalidRules(
            "straights_and_flushes: five-card hands always rank straights and flushes",
            field="straights_and_flushes",
        )
    if rules.dealer_auto_in and rules.declare != "sequential":
        raise InvalidRules(
            "dealer_auto_in needs declare: sequential (with simultaneous declaring there is "
            "no dealer's turn to fill)",
            field="dealer_auto_in",
        )
    if rules.winner_skips_ante and rules.ante_rule != "every_hand":
        raise InvalidRules(
            "winner_skips_ante applies only with ante_rule: every_hand", field="winner_skips_ante"
        )
    if rules.cap_mode == "none":
        if rules.cap is not None:
            raise InvalidRules("cap is set but cap_mode is none", field="cap")
    elif rules.cap is None:
        raise InvalidRules(f"cap_mode {rules.cap_mode} needs a cap amount", field="cap")
    if rules.wimp_into == "side_pot" and rules.wimp_penalty == 0:
        raise InvalidRules("wimp_into: side_pot needs a wimp_penalty above 0", field="wimp_into")
    _validate_variants(rules)


# (option, other option, when both are on, why they cannot be combined)
_CONFLICTS: list[tuple[str, str, str]] = [
    ("no_peek", "pass_the_trash", "players cannot choose a card to pass without seeing them"),
    ("no_peek", "draw", "players cannot choose discards without seeing their cards"),
    ("draw", "community_cards", "draw games here have no community card"),
    ("community_cards", "kitty", "the kitty does not play the community card"),
    ("hi_lo", "kitty", "a kitty has no high or low side to contest"),
    ("hi_lo", "wimp_penalty", "the wimp rule is not defined for two pots"),
    ("hi_lo", "dealer_auto_in", "an automatic in does not say high or low"),
    ("hi_lo", "betting_round", "bets go into one pot and hi-lo has two"),
]


def _validate_variants(rules: Ruleset) -> None:
    if rules.draw > rules.cards:
        raise InvalidRules(f"draw: at most {rules.cards} cards can be drawn", field="draw")
    for first, second, why in _CONFLICTS:
        if getattr(rules, first) and getattr(rules, second):
            raise InvalidRules(f"{first} cannot be combined with {second}: {why}", field=first)
    if rules.hi_lo and rules.ante < 2:
        raise InvalidRules(
            "ante: hi_lo needs an ante of at least 2 (each ante is split between the high and "
            "the low pot, the odd chip high, so an ante of 1 would never feed the low pot)",
            field="ante",
        )
    _validate_betting(rules)
    if rules.hi_lo and rules.cap_mode == "reserve":
        raise InvalidRules(
            "hi_lo cannot be combined with cap_mode reserve: one reserve cannot refill two pots",
            field="hi_lo",
        )


def _validate_betting(rules: Ruleset) -> None:
    """The betting round follows the draw; its options mean nothing without it."""
    if not rules.betting_round:
        for name, unset in (("bet_size", None), ("max_raises", 3), ("match_basis", "declared")):
            if getattr(rules, name) != unset:
                raise InvalidRules(f"{name} applies only with betting_round: true", field=name)
        return
    if not rules.draw:
        raise InvalidRules(
            "betting_round needs draw: the betting round follows the draw",
            field="betting_round",
        )
    if rules.bet_size is None:
        raise InvalidRules("betting_round needs a bet_size", field="bet_size")
