"""A small TOML writer: the top-level ``key = value`` lines of a PHH file, written by hand (no
dependency); the output parses with ``tomllib``."""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import time
from typing import Any

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


def toml_document(fields: Iterable[tuple[str, Any]], header: Iterable[str] = ()) -> str:
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
