"""What a request of a hand costs the app in one process, counted in instructions (valgrind's
callgrind), which the machine's load does not change.

Run from the repository root (not part of pytest; needs ``valgrind``)::

    valgrind --tool=callgrind --callgrind-out-file=/tmp/cost.out \\
        .venv/bin/python -m tests.bench.bench_request_cost --callgrind [--hands 48]
    # then: grep ^summary /tmp/cost.out.1   (instructions of the hands alone)

With ``--gevent`` the process is monkey-patched first, as gunicorn's gevent workers (those of
``guts serve`` and ``bench_http``) run the app: every socket wait then goes through gevent's
hub, and so does every readiness check (a ``select.poll`` that redis-py's connection pool makes
at each checkout costs ~20-50 us there, against ~2 us unpatched).

Without valgrind it prints the process's CPU time per request instead (noisy on a shared
machine). It starts a private redis-server, makes a 6-seat three-card table through the app
with the settings ``bench_http`` gives the service (a commands limit no load reaches), and
plays hands as ``bench_http`` does: deal, 6 declares (two in, four out), resolve; each request a
raw WSGI call of the app, its environ built before play. After 8 hands to warm up, the counters
are zeroed (``callgrind_control -z``) and dumped after the measured hands (``-d``), so the
count is of those hands alone: divide by 8 requests a hand. The quarantine view's and the
gauges' timed refreshes (every 0.5 s and 1 s) are pushed out of the measured hands: under real
load they come once per hundreds of requests, under valgrind every few.
"""

from __future__ import annotations

import sys

if "--gevent" in sys.argv:  # (before anything imports socket, as gunicorn's worker does)
    from gevent import monkey  # type: ignore[import-untyped]

    monkey.patch_all()

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

from werkzeug.test import EnvironBuilder  # noqa: E402

from tests.bench.bench_request_plumbing import call_wsgi  # noqa: E402

OPERATOR = "bench-operator"
SEATS = 6
WARMUP_HANDS = 8


def _app(redis_url: str) -> Any:
    import service.api.gauges as gauges
    from service.api.app import create_app
    from service.config import Settings
    from service.eventlog import due_index

    gauges.SAMPLE_S = 1e9
    kept = due_index.QuarantineView.__init__

    def read_once(self: due_index.QuarantineView, index: Any, ttl_s: float = 0.5) -> None:
        kept(self, index, 1e9)

    due_index.QuarantineView.__init__ = read_once  # type: ignore[method-assign]
    settings = Settings(
        redis_url=redis_url,
        operator_keys=(OPERATOR,),
        token_secret="bench",
        rate_limit_commands="100000/second",
        rate_limit_auth_failures="20/minute",
    )
    return create_app(settings)


def _environ(path: str, body: Any, token: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"}
    built: dict[str, Any] = EnvironBuilder(
        path, method="POST", json=body, headers=headers
    ).get_environ()
    return built


def _call(app: Any, environ: dict[str, Any]) -> bytes:
    status, data = call_wsgi(app, environ)
    assert status < 300, (environ["PATH_INFO"], status, data)
    return data


def _hands(app: Any, count: int) -> list[list[dict[str, Any]]]:
    """`count` hands' requests on a new table, each request's environ built already."""
    table = {"preset": "three-card", "decision_timeout_s": 3600}
    base = (
        "/v1/tables/" + json.loads(_call(app, _environ("/v1/tables", table, OPERATOR)))["table_id"]
    )
    tokens = []
    for seat in range(SEATS):
        body = {"player_id": f"p{seat}", "buy_in": 10**9, "seat": seat}
        tokens.append(json.loads(_call(app, _environ(base + "/players", body, OPERATOR)))["token"])
    hand = [(base + "/deal", {}, OPERATOR)]
    hand += [
        (base + "/declare", {"decision": "in" if s < 2 else "out"}, t) for s, t in enumerate(tokens)
    ]
    hand.append((base + "/resolve", {}, OPERATOR))
    return [[_environ(*request) for request in hand] for _ in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hands", type=int, default=48, help="measured hands")
    parser.add_argument("--callgrind", action="store_true", help="zero and dump callgrind's counts")
    parser.add_argument("--gevent", action="store_true", help="monkey-patched, as under gunicorn")
    args = parser.parse_args()
    from service.processes.redis_server import RedisServer

    with RedisServer() as server:
        app = _app(server.url)
        hands = _hands(app, WARMUP_HANDS + args.hands)
        for hand in hands[:WARMUP_HANDS]:
            for environ in hand:
                _call(app, environ)
        control = ["callgrind_control", "-z", str(os.getpid())]
        if args.callgrind:
            subprocess.run(control, check=True, capture_output=True)
        started = time.process_time()
        for hand in hands[WARMUP_HANDS:]:
            for environ in hand:
                _call(app, environ)
        cpu = time.process_time() - started
        if args.callgrind:
            control[1:2] = ["-d", "measured"]
            subprocess.run(control, check=True, capture_output=True)
        requests = args.hands * len(hands[0])
        print(json.dumps({"requests": requests, "cpu_us_per_request": cpu / requests * 1e6}))


if __name__ == "__main__":
    main()
