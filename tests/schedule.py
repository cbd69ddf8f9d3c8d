"""The order the suite's tests are handed to pytest-xdist's workers in, so that the longest
start first, each on a worker of its own.

`--dist worksteal` first splits the collection into one contiguous run per worker, then moves
tests from the end of a busy worker's run to an idle one. A long test collected late therefore
starts late, and the run waits for it alone at the end (the chaos run took 2.5 minutes of a
9-minute suite that way). Here the tests listed in LONGEST are spread over the workers
(longest first, each to the least loaded), each worker's share placed at the head of its run;
the other tests keep their order (a module's tests stay together, and so do its fixtures).

Every worker computes the same order from the same collection and PYTEST_XDIST_WORKER_COUNT,
as xdist requires. Without xdist (`-n 0`) the order is left as it is.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from itertools import islice

LONGEST: dict[str, dict[str, float]] = {
    # module -> {test (without its parameters; each parametrized case counts alone), or "*":
    # all the module's tests, kept together (the browser modules share one `guts serve` per
    # module) -> seconds}, measured on 2 busy cores with 3 workers (2026-11-26). Only the order
    # matters; a test missing here runs in its collected place.
    "tests/test_chaos.py": {
        "test_a_short_chaos_run_keeps_every_promise": 176,
    },
    "tests/browser/test_play.py": {
        "*": 150,
    },
    "tests/browser/test_play_protection.py": {
        "*": 127,
    },
    "tests/browser/test_admin.py": {
        "*": 83,
    },
    "tests/browser/test_accessibility.py": {
        "*": 70,
    },
    "tests/test_cli.py": {
        "test_serve_started_before_its_redis_answers_503_then_works_once_redis_is_up": 71,
        "test_serve_streams_live_and_ends_every_stream_cleanly_when_it_stops": 67,
        "test_deadlines_fire_within_a_second_while_dispatchers_are_killed_with_minus_9": 44,
        "test_serve_restarts_a_killed_child_and_hands_still_close_by_themselves": 31,
        "test_serve_runs_everything_stops_on_sigterm_and_keeps_tables": 32,
        "test_serve_restarts_its_embedded_postgres_killed_with_minus_9": 30,
        "test_serve_stopped_just_after_a_restart_still_exits_0": 27,
        "test_streams_cut_by_a_killed_worker_resume_without_a_gap": 19,
    },
    "tests/test_docs.py": {
        "test_the_readmes_walkthrough_plays_a_hand_against_a_real_server": 52,
    },
    "tests/test_nodes.py": {
        "test_two_nodes_lose_no_update_conserve_chips_and_audit_ok": 51,
    },
    "tests/test_generated_clients.py": {
        "*": 104,
    },
    "tests/test_operating.py": {
        "test_redis_going_away_after_the_start_is_waited_out_past_redis_wait": 44,
        "test_serve_gives_up_on_a_redis_url_that_never_answers_after_redis_wait": 40,
        "test_log_level_warning_drops_the_info_lines": 30,
    },
    "tests/rules/test_properties.py": {
        "test_chips_are_conserved_and_replay_equals_live_state": 35,
    },
    "tests/browser/test_admin_protection.py": {
        "*": 25,
    },
    "tests/test_request_bodies.py": {  # (one `guts serve` for the module)
        "*": 42,
    },
    "tests/api/test_stream.py": {
        "test_a_subscriber_that_never_reads_is_dropped_and_holds_nobody_up": 24,
    },
    "tests/archive/test_archive_processes.py": {
        "test_postgres_killed_while_hands_are_played_loses_nothing": 24,
        "test_an_archiver_killed_mid_batch_loses_nothing_and_archives_nothing_twice": 24,
    },
    "tests/test_cluster_dispatcher.py": {
        "test_the_dispatcher_waits_out_a_cluster_that_is_down": 20,
    },
    # Modules that mostly wait on the clock (deadlines of 1-2 s, failovers, retries): their
    # CPU is a tenth of their time. In their collected place they ran last, together, and the
    # suite's last 70 s left the cores 65% idle (2026-12-07, 4 workers: 133 core-s idle in
    # all, 60 of them there); listed, they start early beside the busy ones, and the run
    # ends on short tests that idle workers take from the busy ones. (Tried, 2026-12-07: the
    # unlisted modules of many short busy tests, tests/api, rules, eventlog and the spec's
    # fuzzing, after the other unlisted ones, so that every run ends on them: 344 s against
    # 313 s, 559 CPU-s busy against 500; more idle seconds in the middle of the run, where the
    # modules that wait then ran together, and about as many at the end. Not kept.) Their time, that
    # run:
    "tests/test_quarantine.py": {"*": 77},
    "tests/test_replication.py": {"*": 38},
    "tests/wallet/test_debits.py": {"*": 35},
    "tests/workers/test_webhooks.py": {"*": 34},
    "tests/api/test_operations.py": {"*": 29},
    "tests/test_cluster_failover.py": {"*": 25},
    "tests/test_cluster_fail_fast.py": {"*": 22},
}


def _unit(nodeid: str) -> tuple[str, float] | None:
    """The unit `nodeid` is scheduled in (its module, or itself) and its weight, if listed."""
    module, _, test = nodeid.partition("::")
    listed = LONGEST.get(module, {})
    if "*" in listed:
        return module, listed["*"]
    weight = listed.get(test.split("[", 1)[0])
    return None if weight is None else (nodeid, weight)


def _run_lengths(total: int, workers: int) -> list[int]:
    """How many tests worksteal's first split gives each worker, in order."""
    lengths = []
    for remaining in range(workers, 0, -1):
        lengths.append((total - sum(lengths)) // remaining)
    return lengths


def spread(nodeids: Sequence[str], workers: int) -> list[int]:
    """The new order of `nodeids` (as their indices) for `workers` workers."""
    if workers < 2:
        return list(range(len(nodeids)))
    units: dict[str, list[int]] = {}  # a module's tests together, any other test alone
    weights: dict[str, float] = {}
    light: list[int] = []
    for index, nodeid in enumerate(nodeids):
        listed = _unit(nodeid)
        if listed is None:
            light.append(index)
            continue
        unit, weights[unit] = listed
        units.setdefault(unit, []).append(index)
    loads = [0.0] * workers
    shares: list[list[str]] = [[] for _ in range(workers)]
    for unit in sorted(units, key=lambda unit: (-weights[unit], units[unit][0])):
        worker = loads.index(min(loads))
        loads[worker] += weights[unit]
        shares[worker].append(unit)
    order: list[int] = []
    rest = iter(light)
    for worker, length in enumerate(_run_lengths(len(nodeids), workers)):
        listed = shares[worker]
        others = max(0, length - sum(len(units[unit]) for unit in listed))
        given, owed = 0, 0.0
        for unit in listed:
            # Each listed test followed by its share of the others: the longest starts first,
            # and the tests that start servers do not all run at the same moment.
            order.extend(units[unit])
            owed += others * weights[unit] / loads[worker]
            take = min(round(owed), others) - given
            order.extend(islice(rest, take))  # (fewer when the others ran out: a selection
            given += take  # such as -k can leave fewer than the workers' runs ask for)
        order.extend(islice(rest, others - given))
    order.extend(rest)
    return order


def worker_count() -> int:
    """The number of xdist workers in this run (0 when not run by xdist)."""
    return int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
