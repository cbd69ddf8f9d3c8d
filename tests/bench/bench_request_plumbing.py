"""What each shortcut around a library is worth: declare throughput through the WSGI app,
in-process, with every shortcut, with none, and without each one (`service.config.SHORTCUTS`,
left out as ``GUTS_SHORTCUTS_OFF`` leaves them out).

Run from the repository root (not part of pytest)::

    .venv/bin/python -m tests.bench.bench_request_plumbing     # [--rounds 8] [--hands 30]

Every variant runs in its own process, against one private redis-server. A process sets up a
table of 17 players, then per round plays hands: deal and resolve (not timed), and 17 declares
(one "in", 16 "out"), each a raw WSGI call to the app with a request built before the clock
starts; the clock is the process's CPU time (`time.process_time`: the app's own work, which
the shortcuts save; the machine is shared and its wall clock drifts) and the wall clock, both
summed over the declares only. Variants take turns round by round, in an order reversed from
one round to the next, so a drift in the machine's speed favours none.

This leaves out the HTTP server and the network: what decides whether a shortcut stays is
what it is worth under ``tests/bench/bench_http.py --shortcuts`` (real gunicorn, real
connections), where the same work is a smaller share of each request. A shortcut is worth
keeping when leaving it out costs at least 3% of declare throughput.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from typing import Any

from service.config import SHORTCUTS

VARIANTS = {
    "all shortcuts": frozenset(),
    "no shortcut": SHORTCUTS,
    **{f"without {name}": frozenset({name}) for name in sorted(SHORTCUTS)},
}
"""Each variant and the shortcuts it leaves out."""
SEATS = 17
OPERATOR = "bench-operator"


def _child(variant: str, redis_url: str, rounds: int, hands: int) -> None:
    """One variant's process: plays `rounds` rounds, printing one JSON line per round after
    reading a line from stdin (the parent's go)."""
    import time

    from werkzeug.test import EnvironBuilder

    from service.api.app import create_app
    from service.config import Settings

    settings = Settings(
        redis_url=redis_url,
        operator_keys=(OPERATOR,),
        token_secret="bench",
        key_prefix=f"bench-{variant.replace(' ', '-')}",
        shortcuts_off=VARIANTS[variant],
    )
    app = create_app(settings)

    def call(method: str, path: str, body: Any = None, token: str = OPERATOR) -> Any:
        status, data = call_wsgi(app, _environ(EnvironBuilder, method, path, body, token))
        assert status < 300, (path, status, data)
        return json.loads(data)

    table = call("POST", "/v1/tables", {"preset": "three-card", "rules": {"seats": SEATS}})
    table_id = table["table_id"]
    tokens = [
        call("POST", f"/v1/tables/{table_id}/players", {"player_id": f"p{i}", "buy_in": 10**9})[
            "token"
        ]
        for i in range(SEATS)
    ]
    for round_number in range(rounds + 1):  # round 0 warms up
        sys.stdin.readline()
        cpu = wall = 0.0
        declares = 0
        for _ in range(hands):
            call("POST", f"/v1/tables/{table_id}/deal", {})
            environs = [
                _environ(
                    EnvironBuilder,
                    "POST",
                    f"/v1/tables/{table_id}/declare",
                    {"decision": "in" if seat == 0 else "out"},
                    token,
                )
                for seat, token in enumerate(tokens)
            ]
            cpu_start, wall_start = time.process_time(), time.perf_counter()
            for environ in environs:
                status, data = call_wsgi(app, environ)
                assert status == 200, data
            cpu += time.process_time() - cpu_start
            wall += time.perf_counter() - wall_start
            declares += len(environs)
            call("POST", f"/v1/tables/{table_id}/resolve", {})
        line = {"round": round_number, "variant": variant, "declares": declares}
        print(json.dumps({**line, "cpu": cpu, "wall": wall}), flush=True)


def _environ(builder: Any, method: str, path: str, body: Any, token: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"}
    environ: dict[str, Any] = builder(path, method=method, json=body, headers=headers).get_environ()
    return environ


def call_wsgi(app: Any, environ: dict[str, Any]) -> tuple[int, bytes]:
    """One WSGI call of `app`: its status code and body."""
    statuses: list[str] = []
    chunks = app(environ, lambda status, headers, exc_info=None: statuses.append(status))
    try:
        data = b"".join(chunks)
    finally:
        getattr(chunks, "close", lambda: None)()
    return int(statuses[0][:3]), data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--hands", type=int, default=30, help="hands per round and variant")
    args = parser.parse_args()
    from service.processes.redis_server import RedisServer

    variants = list(VARIANTS)
    results: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    with RedisServer() as server:
        children = {
            variant: subprocess.Popen(
                [sys.executable, "-c", _CHILD, variant, server.url]
                + [str(args.rounds), str(args.hands)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,  # the access log
                text=True,
            )
            for variant in variants
        }
        for round_number in range(args.rounds + 1):
            order = variants if round_number % 2 == 0 else variants[::-1]
            for variant in order:  # one at a time: the others wait for their go
                child = children[variant]
                assert child.stdin is not None and child.stdout is not None
                child.stdin.write("go\n")
                child.stdin.flush()
                line = json.loads(child.stdout.readline())
                if round_number:
                    results[variant].append(line)
            print(f"round {round_number} done", file=sys.stderr)
        for child in children.values():
            child.wait(30)
    _report(results)


def _report(results: dict[str, list[dict[str, Any]]]) -> None:
    """Medians (min-max) of declares per CPU-second and per second, and against the variant
    with every shortcut in the same round."""
    base = results["all shortcuts"]
    print(f"{'variant':<34} {'declares/CPU-s':>15} {'vs all, per round':>26} {'declares/s':>11}")
    for variant, rounds in results.items():
        cpu = statistics.median(r["declares"] / r["cpu"] for r in rounds)
        wall = statistics.median(r["declares"] / r["wall"] for r in rounds)
        vs = [
            (r["declares"] / r["cpu"]) / (b["declares"] / b["cpu"]) - 1
            for r, b in zip(rounds, base, strict=True)
        ]
        spread = f"{statistics.median(vs):+.1%} ({min(vs):+.1%}..{max(vs):+.1%})"
        print(f"{variant:<34} {cpu:>15.0f} {spread:>26} {wall:>11.0f}")


_CHILD = (
    "import sys; from tests.bench.bench_request_plumbing import _child; "
    "_child(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))"
)


if __name__ == "__main__":
    main()
