"""JSON for the API: orjson, about ten times faster than the standard library here."""

from __future__ import annotations

from typing import Any

import orjson


def dumps(value: Any) -> bytes:
    """`value` as compact JSON bytes."""
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)


def loads(raw: bytes) -> Any:
    """Parsed JSON; raises ValueError (orjson.JSONDecodeError) on bad input."""
    return orjson.loads(raw)
