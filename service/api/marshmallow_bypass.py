"""A shortcut around marshmallow: small bodies this process has validated, by schema and
bytes, with what the schema made of them. The same few bodies (``{"decision": "in"}``,
``{}``) come again and again, and running a schema costs more than the rest of reading the
request.

Worth it, measured (tests/bench/bench_request_plumbing.py, declares through the WSGI app
in-process, two runs, CPU time): validating every body costs 10.4% and 10.9% of declare
throughput (3476 and 3523 against 3878 and 3952 declares per CPU-second). Only results made
of scalars are kept, and each caller gets its own copy, so a route cannot change what the
next request gets. At most `MAX_ENTRIES` entries (then it starts again, empty). marshmallow
is pinned to the major version it was checked against (pyproject.toml); the API's tests run
without it too (``pytest tests/api --plain-requests``).
"""

from __future__ import annotations

from typing import Any

from marshmallow import Schema

MAX_BODY = 256
MAX_ENTRIES = 1024
_validated: dict[tuple[Schema, bytes], dict[str, Any]] = {}
_SCALARS = (str, int, float, bool, type(None))


def recall(schema: Schema, raw: bytes) -> dict[str, Any] | None:
    """What `schema` made of `raw` before (a copy), or None."""
    known = _validated.get((schema, raw))
    return None if known is None else dict(known)


def remember(schema: Schema, raw: bytes, loaded: dict[str, Any]) -> None:
    """Keep what `schema` made of `raw`, when both are small and plain."""
    if len(raw) <= MAX_BODY and all(isinstance(v, _SCALARS) for v in loaded.values()):
        if len(_validated) >= MAX_ENTRIES:
            _validated.clear()
        _validated[(schema, raw)] = dict(loaded)


def forget() -> None:
    """Forget every body (for tests)."""
    _validated.clear()
