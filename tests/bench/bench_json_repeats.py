"""What refusing repeated member names costs (service/api/json.py): timeit of parsing typical
command bodies with orjson alone, with `loads` (orjson and the member count), and with the
standard library's exact check that `loads` falls back to. Not part of pytest::

    .venv/bin/python -m tests.bench.bench_json_repeats
"""

from __future__ import annotations

import json
import timeit
from collections.abc import Callable

import orjson

from service.api import json as api_json

BODIES = {
    "declare": b'{"decision": "in"}',
    "seat": b'{"player_id": "p1", "buy_in": 100}',
    "create table": b'{"preset": "three-card", "rules": {"ante": 5, "seats": 6}}',
    "webhook (a colon in a string)": b'{"url": "https://casino.example/hooks", "events": []}',
}
NUMBER = 200_000


def _us(statement: Callable[[], object]) -> float:
    """The best of 5 runs, in microseconds per call."""
    runs = timeit.repeat(statement, number=NUMBER, repeat=5)
    return min(runs) / NUMBER * 1e6


def main() -> None:
    print(f"{'body':32} {'orjson':>8} {'loads':>8} {'stdlib check':>13}  (us per call)")
    for name, raw in BODIES.items():
        plain = _us(lambda raw=raw: orjson.loads(raw))
        checked = _us(lambda raw=raw: api_json.loads(raw))
        exact = _us(lambda raw=raw: json.loads(raw, object_pairs_hook=api_json._unique))
        print(f"{name:32} {plain:8.2f} {checked:8.2f} {exact:13.2f}")


if __name__ == "__main__":
    main()
