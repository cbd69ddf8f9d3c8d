"""Are the API's request-reading shortcuts worth it? Declare throughput through the WSGI app,
in-process, with and without each shortcut, against the working tree's plain-Flask version.

Run from the repository root (not part of pytest)::

    git archive <commit with the shortcuts> | tar -x -C /tmp/guts-old
    .venv/bin/python -m tests.bench.bench_request_plumbing --old /tmp/guts-old

Every variant runs in its own process (the old and new code are both the package `service`),
against one private redis-server. A process sets up a table of 17 players, then per round
plays hands: deal and resolve (not timed), and 17 declares (one "in", 16 "out"), each a raw
WSGI call to the app with a request built before the clock starts; the clock is the process's
CPU time (`time.process_time`: the app's own work, which the shortcuts save; the machine is
shared and its wall clock drifts) and the wall clock, both summed over the declares only.
Variants take turns round by round, so a drift in the machine's speed favours none:

- ``old``: the code at `--old`, with every shortcut;
- ``old-no-body-cache``: without its cache of validated small bodies;
- ``old-no-environ``: reading the caller, headers and body through Flask's `request` instead
  of the raw WSGI environ (what the ContextVar made current);
- ``old-flask-sessions``: with Flask's own session interface instead of `_NoSessions`;
- ``new``: the working tree, with the shortcuts it kept;
- ``new-plain``: the working tree without them (``request_shortcuts=False``);
- ``new-plain-store``: the working tree with its request shortcuts, but the event store's
  commands sent through redis-py's public API (``redis_py_bypass=False``).

Without ``--old``, only the working tree's variants run.

A shortcut is worth keeping when removing it costs at least 3% of declare throughput.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

VARIANTS = (
    "old",
    "old-no-body-cache",
    "old-no-environ",
    "old-flask-sessions",
    "new",
    "new-plain",
    "new-plain-store",
)
SEATS = 17
OPERATOR = "bench-operator"


def _child(root: str, variant: str, redis_url: str, rounds: int, hands: int) -> None:
    """One variant's process: plays `rounds` rounds, printing one JSON line per round after
    reading a line from stdin (the parent's go)."""
    sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in type(f).__module__]
    sys.path.insert(0, root)
    import time

    from werkzeug.test import EnvironBuilder

    import service
    from service.api.app import create_app
    from service.config import Settings

    assert Path(service.__file__).resolve().is_relative_to(Path(root).resolve()), service.__file__
    settings = Settings(
        redis_url=redis_url,
        operator_keys=(OPERATOR,),
        token_secret="bench",
        key_prefix=f"bench-{variant}",
    )
    if variant.startswith("new"):
        app = create_app(
            settings,
            request_shortcuts=variant != "new-plain",
            redis_py_bypass=variant != "new-plain-store",
        )
    else:
        app = create_app(settings)
        _remove_shortcut(app, variant)

    def call(method: str, path: str, body: Any = None, token: str = OPERATOR) -> Any:
        status, data = _wsgi(app, _environ(EnvironBuilder, method, path, body, token))
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
                status, data = _wsgi(app, environ)
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


def _wsgi(app: Any, environ: dict[str, Any]) -> tuple[int, bytes]:
    statuses: list[str] = []
    chunks = app(environ, lambda status, headers, exc_info=None: statuses.append(status))
    try:
        data = b"".join(chunks)
    finally:
        getattr(chunks, "close", lambda: None)()
    return int(statuses[0][:3]), data


def _remove_shortcut(app: Any, variant: str) -> None:
    """Take one shortcut out of the old app (by replacing what it replaced)."""
    from service.api import http

    if variant == "old-no-body-cache":
        http._VALIDATED_MAX_BODY = -1  # nothing is small enough to be remembered
    elif variant == "old-flask-sessions":
        from flask.sessions import SecureCookieSessionInterface

        app.session_interface = SecureCookieSessionInterface()
    elif variant == "old-no-environ":
        from flask import current_app, g, request

        http.environ = lambda: request.environ
        http.services = lambda: current_app.extensions["guts"]
        http.header = lambda name: request.headers.get(name)
        http.body_bytes = lambda: request.get_data(cache=True)

        def principal() -> Any:
            found = g.get("principal")
            if found is None:
                found = g.principal = http.services().auth.authenticate(
                    request.headers.get("Authorization")
                )
            return found

        http.principal = principal
        from service.api import views

        views.principal = principal


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", help="a checkout of the code with the shortcuts")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--hands", type=int, default=30, help="hands per round and variant")
    args = parser.parse_args()
    from service.processes.redis_server import RedisServer

    here = str(Path.cwd())
    variants = VARIANTS if args.old else tuple(v for v in VARIANTS if v.startswith("new"))
    results: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    with RedisServer() as server:
        children = {
            variant: subprocess.Popen(
                [sys.executable, "-c", _CHILD, here if variant.startswith("new") else args.old]
                + [variant, server.url, str(args.rounds), str(args.hands)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,  # the access log
                text=True,
            )
            for variant in variants
        }
        for round_number in range(args.rounds + 1):
            order = variants if round_number % 2 == 0 else tuple(reversed(variants))
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
    base = "old" if "old" in results else "new"
    base_cpu = statistics.median(r["declares"] / r["cpu"] for r in results[base])
    base_wall = statistics.median(r["declares"] / r["wall"] for r in results[base])
    vs = f"vs {base}"
    print(f"{'variant':<20} {'declares/CPU-s':>15} {vs:>8} {'declares/s':>11} {vs:>8}")
    for variant, rounds in results.items():
        cpu = statistics.median(r["declares"] / r["cpu"] for r in rounds)
        wall = statistics.median(r["declares"] / r["wall"] for r in rounds)
        print(
            f"{variant:<20} {cpu:>15.0f} {cpu / base_cpu - 1:>+8.1%} "
            f"{wall:>11.0f} {wall / base_wall - 1:>+8.1%}"
        )


_CHILD = (
    "import sys; from tests.bench.bench_request_plumbing import _child; "
    "_child(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))"
)


if __name__ == "__main__":
    main()
