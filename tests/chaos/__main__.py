"""`python -m tests.chaos [--duration S] [--failovers N] [--seed N] [--report FILE]`: a chaos
run on the recommended topology (docs/chaos.md); exits 1 on any violation."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys

from tests.chaos.run import Options, run, text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos", description=__doc__)
    parser.add_argument("--duration", type=float, default=180.0, help="seconds of load and faults")
    parser.add_argument("--failovers", type=int, default=6, help="master failovers in the run")
    parser.add_argument("--seed", type=int, default=1, help="seeds the schedule and the clients")
    parser.add_argument(
        "--tables", type=int, default=12, help="tables played (a client thread each)"
    )
    parser.add_argument(
        "--min-replicas", type=int, default=1, help="GUTS_REDIS_MIN_REPLICAS given to the service"
    )
    parser.add_argument("--replicas", type=int, default=1, help="replicas per master (3 masters)")
    parser.add_argument(
        "--forced-failover",
        action="store_true",
        help="include CLUSTER FAILOVER FORCE among the failovers",
    )
    parser.add_argument(
        "--no-deadline-tables",
        action="store_true",
        help="no tables with 1 s deadlines (where the dispatchers act)",
    )
    parser.add_argument(
        "--no-other-faults",
        action="store_true",
        help="only master failovers (no API node, dispatcher, PostgreSQL, replica kills)",
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the processes' logs and the history after a clean run too",
    )
    parser.add_argument(
        "--full-coverage",
        action="store_true",
        help="cluster-require-full-coverage yes (Redis's default; the recommended topology: no)",
    )
    parser.add_argument(
        "--serve-dispatchers",
        type=int,
        default=2,
        help="dispatchers each API node runs of its own, beside the two `guts dispatch`",
    )
    parser.add_argument(
        "--pace",
        type=float,
        default=0.0,
        help="seconds between two steps of a table's client at most (0: as fast as answered)",
    )
    parser.add_argument("--report", help="also write the report as JSON to this file")
    args = parser.parse_args(argv)
    options = Options(
        duration=args.duration,
        failovers=args.failovers,
        seed=args.seed,
        tables=args.tables,
        min_replicas=args.min_replicas,
        replicas=args.replicas,
        forced_failover=args.forced_failover,
        deadline_tables=not args.no_deadline_tables,
        other_faults=not args.no_other_faults,
        keep=args.keep,
        full_coverage=args.full_coverage,
        serve_dispatchers=args.serve_dispatchers,
        pace_s=args.pace,
    )
    signal.signal(signal.SIGTERM, _stop)  # unwinds the run: everything it started is stopped
    try:
        report = run(options)
    except (SystemExit, KeyboardInterrupt) as stopped:  # (SIGTERM, ^C: the processes are
        # stopped, the clients halted; a fault under way may still be waiting, for a node up
        # to a minute: not waited for)
        sys.stdout.flush()
        code = getattr(stopped, "code", 130)
        os._exit(code if isinstance(code, int) else 1)
    print(text(report), flush=True)
    if args.report:
        with open(args.report, "w") as out:
            json.dump(report, out, indent=2)
    return 1 if report["violations"] else 0


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    sys.exit(main())
