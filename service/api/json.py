"""JSON for the API: orjson, about ten times faster than the standard library here.

A body must not repeat a member's name in any of its objects (``{"buy_in": 1, "buy_in":
100000000}``: orjson, like most parsers, keeps the last, so a check made on one copy could be
passed by the other). orjson has no hook for that, so `loads` counts: every member of the
text has exactly one colon outside strings, so when the parsed value holds as many members as
the text has colons, no member was dropped, and the body is taken as parsed. Otherwise (a
repeat, or a colon inside a string: a URL, a time) the standard library parses it again and
says which name is repeated. Measured (`python -m tests.bench.bench_json_repeats`: timeit,
best of 5, CPython 3.11, 2026-11-26, on a 2-core machine under a load of 8-12, so +-50%):
orjson alone 0.3-0.8 us for ``{"decision": "in"}``, ``{"player_id": "p1", "buy_in": 100}`` or
a table's creation; `loads` (orjson and the count) 0.7-1.4 us; a body with a colon in a string
(a webhook's URL) goes the exact way, 5-11 us. A declare costs ~250 us of CPU
(tests/bench/bench_request_plumbing.py): the count adds about 0.2% to the hot path.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from .refusal import ApiError


class RefusedJson(ApiError, ValueError):
    """Valid JSON that a body may not be; its message says why."""


class RepeatedMember(RefusedJson):
    """A JSON object in the body repeats a member's name."""

    def __init__(self, name: str) -> None:
        super().__init__(f'the body repeats the member "{name}" in one object')
        self.name = name


def dumps(value: Any) -> bytes:
    """`value` as compact JSON bytes."""
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)


def loads(raw: bytes) -> Any:
    """Parsed JSON; raises ValueError (orjson.JSONDecodeError) on bad input, `RefusedJson`
    (`RepeatedMember`) when an object repeats a name (see the module doc)."""
    value = orjson.loads(raw)
    if _members(value) != raw.count(b":"):
        _refuse_repeats(raw)
    return value


def _members(value: Any) -> int:
    """How many members the objects in `value` (as orjson makes them: dicts, lists, scalars)
    have, at every depth (without recursion: orjson takes 1024 levels of nesting, more than
    Python's stack)."""
    count, pending = 0, [value]
    while pending:
        item = pending.pop()
        if type(item) is dict:
            count += len(item)
            item = item.values()
        elif type(item) is not list:
            continue
        for inner in item:
            if type(inner) is dict or type(inner) is list:
                pending.append(inner)
    return count


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for name, value in pairs:
        if name in seen:
            raise RepeatedMember(name)
        seen[name] = value
    return seen


def _refuse_repeats(raw: bytes) -> None:
    """Raise `RepeatedMember` if an object of `raw` (valid JSON) repeats a name."""
    try:
        json.loads(raw, object_pairs_hook=_unique)
    except RecursionError:
        raise RefusedJson("the body is nested too deeply") from None
