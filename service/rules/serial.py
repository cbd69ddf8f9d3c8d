"""Lossless conversion between the rules' dataclasses and JSON-ready data.

JSON has no tuples and only string keys; the dataclasses use both (`dict[int, ...]` keyed by
seat, `tuple[str, ...]` of cards). `to_data` writes plain data, and `from_data(cls, data)` reads
it back by following `cls`'s type hints, so `from_data(cls, to_data(x)) == x` for every event and
state. Converters are built once per class and cached.
"""

from __future__ import annotations

import dataclasses
import threading
import types
import typing
from collections.abc import Callable
from typing import Any, TypeVar

import orjson

T = TypeVar("T")
Converter = Callable[[Any], Any]


def to_data(value: Any) -> Any:
    """Plain JSON-ready data for a dataclass, mapping, sequence or scalar: exactly what JSON
    gives back (string keys, lists for tuples). orjson walks the dataclasses in C, several
    times faster than a Python walk, which matters on every command."""
    return orjson.loads(orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS))


def _identity(value: Any) -> Any:
    return value


def _converter(hint: Any) -> Converter:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _dataclass_converter(hint)
    # The common shapes get a builtin or a single comprehension: snapshots are decoded on
    # every command, so this is on the hot path.
    if origin is dict:
        int_keys = bool(args) and args[0] is int
        value = _converter(args[1]) if args else _identity
        if value is _identity:
            return (lambda d: {int(k): v for k, v in d.items()}) if int_keys else dict
        if int_keys:
            return lambda d: {int(k): value(v) for k, v in d.items()}
        return lambda d: {k: value(v) for k, v in d.items()}
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            item = _converter(args[0])
            return tuple if item is _identity else (lambda seq: tuple(map(item, seq)))
        items = [_converter(a) for a in args]
        return lambda seq: tuple(c(v) for c, v in zip(items, seq, strict=True))
    if origin is list:
        item = _converter(args[0]) if args else _identity
        return list if item is _identity else (lambda seq: list(map(item, seq)))
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            conv = _converter(inner[0])
            return lambda v: None if v is None else conv(v)
    return _identity


_CACHE: dict[type, Converter] = {}
_BUILDING: dict[type, Converter] = {}
_LOCK = threading.RLock()
"""Converters are built once, by one thread: another thread that asks while one is being
built waits (it once got a converter whose plan was not built yet); the building thread may
come back for a self-referencing class (re-entrant), and gets the converter being built."""


def _dataclass_converter(cls: type) -> Converter:
    found = _CACHE.get(cls)
    if found is not None:
        return found
    with _LOCK:
        found = _CACHE.get(cls) or _BUILDING.get(cls)
        if found is not None:
            return found
        if isinstance(cls.__dict__.get("from_data"), classmethod):
            custom: Converter = getattr(cls, "from_data")  # noqa: B009 - it rebuilds itself
            _CACHE[cls] = custom
            return custom
        plan: list[tuple[str, Converter]] = []

        def convert(data: Any) -> Any:
            values = dict(data)
            for name, conv in plan:
                if name in values:
                    values[name] = conv(values[name])
            return cls(**values)

        _BUILDING[cls] = convert  # (for self-referencing classes, in this thread only)
        try:
            hints = typing.get_type_hints(cls)
            # Only fields that need converting are visited: scalars pass through as they are.
            plan += [
                (f.name, conv)
                for f in dataclasses.fields(cls)
                if f.init and (conv := _converter(hints[f.name])) is not _identity
            ]
        finally:
            del _BUILDING[cls]
        _CACHE[cls] = convert
        return convert


def from_data(cls: type[T], data: Any) -> T:
    """Rebuild a `cls` instance from `to_data`'s output."""
    result: T = _dataclass_converter(cls)(data)
    return result
