"""One chaos run: the topology up, a webhook registered to the harness's receiver, clients
playing many tables while faults are injected on a schedule, then the faults stop, the clients
finish their hands, everything is read back and checked; a report (a dict, printed as text and
optionally written as JSON)."""

from __future__ import annotations

import dataclasses
import random
import shutil
import statistics
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import requests

from service.projections.webhook_messages import EVENT_NAMES
from tests.chaos import checker
from tests.chaos.faults import MASTER_FAULTS, SURVIVED, Fault, Injector, measure, schedule
from tests.chaos.readback import read_back
from tests.chaos.receiver import Receiver
from tests.chaos.topology import OPERATOR_KEY, Topology
from tests.chaos.workload import Client, History, Record, TablePlayer, play

AFTER_S = 5.0
"""How long the clients play on after the last fault."""


@dataclass
class Options:
    duration: float = 120.0
    failovers: int = 4
    seed: int = 1
    tables: int = 12
    min_replicas: int = 1
    replicas: int = 1  # replicas per master
    forced_failover: bool = False  # CLUSTER FAILOVER FORCE among the failovers
    deadline_tables: bool = True  # a third of the tables with 1 s deadlines and auto_resolve
    other_faults: bool = True  # API node, dispatcher, PostgreSQL, replica kills between them
    keep: bool = False  # the logs and the history kept after a clean run too
    full_coverage: bool = False  # cluster-require-full-coverage (Redis's default: yes)
    serve_dispatchers: int = 2  # each API node's own dispatchers, beside the two `guts dispatch`
    pace_s: float = 0.0  # each table's client: a step at most this often (0: as fast as answered)


def run(options: Options) -> dict[str, Any]:
    rng = random.Random(options.seed)
    kinds = (*SURVIVED, "failover_force") if options.forced_failover else SURVIVED
    plan = schedule(options.failovers, kinds, options.other_faults, rng)
    tables = [f"chaos-{options.seed}-{n}" for n in range(options.tables)]
    history = History()
    with (
        Topology(
            options.min_replicas,
            replicas=options.replicas,
            full_coverage=options.full_coverage,
            serve_dispatchers=options.serve_dispatchers,
        ) as topology,
        Receiver(seed=options.seed) as receiver,
    ):
        hook = requests.post(
            topology.api[0].base + "/v1/webhooks",
            json={"url": receiver.url, "events": list(EVENT_NAMES)},
            headers={"Authorization": f"Bearer {OPERATOR_KEY}"},
            timeout=10,
        )
        hook.raise_for_status()
        stop, halt = threading.Event(), threading.Event()
        injector = Injector(topology, plan, options.duration / (len(plan) + 1), rng, tables)
        injector.halt = halt
        started = time.monotonic()
        bases = [node.base for node in topology.api]
        players = [
            TablePlayer(
                Client(bases, history, halt),
                table,
                options.deadline_tables and n % 3 == 0,
                random.Random(rng.random()),
            )
            for n, table in enumerate(tables)
        ]
        pool, playing = ThreadPoolExecutor(1), ThreadPoolExecutor(len(players))
        try:
            faults = pool.submit(injector.run)
            games = [
                playing.submit(play, player, stop, pace_s=options.pace_s) for player in players
            ]
            time.sleep(max(0.0, options.duration - (time.monotonic() - started)))
            faults.result()  # every fault of the plan is made, however long they took
            time.sleep(AFTER_S)  # and the service is seen playing on after the last one
            stop.set()
            for game in games:
                game.result()
        except BaseException:  # (SIGTERM, an error): the clients and the faults stop at once
            halt.set()
            raise
        finally:
            for executor in (pool, playing):
                executor.shutdown(wait=not halt.is_set(), cancel_futures=True)
        for fault in injector.faults:
            if fault.kind in MASTER_FAULTS:
                measure(fault, tables, history.attempts)
        observed = read_back(topology, history, receiver, tables)
        exits, uncaught = topology.dispatcher_exits(), topology.uncaught()
        server_errors = [(said, topology.logged(said)) for said in history.server_errors]
    violations, counts = checker.check(observed, tables)
    report = _report(options, started, history, injector, observed, violations, counts)
    report["dispatcher_exits"], report["uncaught"] = exits, uncaught
    report["server_errors"] = [
        {"answered": said, "logged": logged} for said, logged in server_errors
    ]
    _keep(topology.workdir, history, report, options.keep)
    return report


def _keep(workdir: Path, history: History, report: dict[str, Any], keep: bool) -> None:
    """The processes' logs and the history (JSON lines: the commands in `history.jsonl`,
    every attempt in `attempts.jsonl`) stay in `workdir` after a run that found a violation,
    or when asked (`keep`; its path in the report); else a run leaves nothing behind."""
    if not report["violations"] and not keep:
        shutil.rmtree(workdir, ignore_errors=True)
        return
    with open(workdir / "history.jsonl", "wb") as out:
        for record in history.records:
            out.write(orjson.dumps(dataclasses.asdict(record)) + b"\n")
    with open(workdir / "attempts.jsonl", "wb") as out:
        for attempt in history.attempts:
            out.write(orjson.dumps(attempt) + b"\n")
    report["workdir"] = str(workdir)


def _report(
    options: Options,
    started: float,
    history: History,
    injector: Injector,
    observed: checker.Observed,
    violations: list[checker.Violation],
    counts: dict[str, int],
) -> dict[str, Any]:
    """The run's figures; times in seconds from the run's start (its first command)."""
    failovers = [f for f in injector.faults if f.kind in MASTER_FAULTS]
    gaps = [f.unavailable_s for f in failovers]
    lost = " ".join(detail for kind, detail in violations if kind == "lost")
    late = checker.deadline_lateness(observed, observed.redis)
    return {
        "options": vars(options),
        "started_monotonic": started,  # (the clock of attempts.jsonl)
        "played_s": round(max(r.answered or r.sent for r in history.records) - started, 1),
        "commands": len(history.records),
        "acknowledged": counts.get("acknowledged", 0),
        "lost": counts.get("lost", 0),
        "lost_commands": [_lost(r, started) for r in history.records if r.key in lost],
        "forked_tables": len({d.split("@")[0].split(":")[0] for k, d in violations if k == "fork"}),
        "outcome_unknown": sum(1 for r in history.records if r.status is None),
        "server_errors_500": len(history.server_errors),
        "faults": [
            {
                "kind": f.kind,
                "target": f.target,
                "at_s": round(f.started - started, 1),
                "settled_s": round((f.settled or f.started) - f.started, 1),
                "unavailable_s": None if f.unavailable_s is None else round(f.unavailable_s, 2),
                "promoted_s": _since(f, f.promoted),
                "replicated_s": _since(f, f.replicated),
                "failed_attempts": f.failed_commands,
                "tables": f.tables,
                "others_held_s": None if f.others_held_s is None else round(f.others_held_s, 2),
            }
            for f in injector.faults
        ],
        "fault_errors": injector.errors,
        "unavailability_s": _spread(gaps),
        "unavailability_by_kind_s": {
            kind: _spread([f.unavailable_s for f in failovers if f.kind == kind])
            for kind in sorted({f.kind for f in failovers})
        },
        "promoted_s": _spread([f.promoted - f.started for f in failovers if f.promoted]),
        "others_held_s": _spread([f.others_held_s for f in failovers]),
        "answered_after_promotion_s": _spread(
            [
                f.started + f.unavailable_s - f.promoted
                for f in failovers
                if f.promoted and f.unavailable_s
            ]
        ),
        "answered_after_replicated_s": _spread(
            [
                f.started + f.unavailable_s - f.replicated
                for f in failovers
                if f.replicated and f.unavailable_s
            ]
        ),
        "deadlines_acted_on": {
            "count": len(late),
            "late_s_median": round(statistics.median(late), 2) if late else None,
            "late_s_max": round(max(late), 2) if late else None,
        },
        "audits_ok": sum(1 for r in observed.audits.values() if r and r.get("ok")),
        "audits": len(observed.audits),
        "webhooks_received": len(observed.webhooks),
        "webhooks_undelivered": observed.undelivered,
        "webhooks_drained_s": None if observed.drained_s is None else round(observed.drained_s, 1),
        "violations": [{"kind": k, "detail": d} for k, d in violations],
    }


def _spread(values: list[float | None] | list[float]) -> dict[str, float | None]:
    """The median and the max of `values` (those known), seconds."""
    known = [v for v in values if v is not None]
    if not known:
        return {"median": None, "max": None}
    return {"median": round(statistics.median(known), 2), "max": round(max(known), 2)}


def _since(fault: Fault, moment: float | None) -> float | None:
    """Seconds from `fault`'s start to `moment` (None: never)."""
    return None if moment is None else round(moment - fault.started, 2)


def _lost(record: Record, started: float) -> dict[str, Any]:
    version = record.answer.get("version")
    answered = round((record.answered or 0) - started, 2)
    return {"table": record.table, "command": record.command, "key": record.key,
            "version": version, "answered_s": answered}  # fmt: skip


def text(report: dict[str, Any]) -> str:
    """The report for people."""
    lines = [
        f"played {report['played_s']} s: {report['commands']} commands, "
        f"{report['acknowledged']} acknowledged, {report['lost']} lost, "
        f"{report['forked_tables']} tables forked, "
        f"{report['outcome_unknown']} outcome unknown, {report['server_errors_500']} 500s",
        f"audits ok: {report['audits_ok']} of {report['audits']}; webhooks received: "
        f"{report['webhooks_received']}; dispatcher exits: {report['dispatcher_exits']}; "
        f"uncaught exceptions: {report['uncaught']}",
        f"webhooks not delivered, as the store holds them: {report['webhooks_undelivered']}; "
        f"the last due arrived {report['webhooks_drained_s']} s after the rest was read back",
        f"unavailability per failover (s): {report['unavailability_s']}, by kind: "
        f"{report['unavailability_by_kind_s']}",
        f"  a replica promoted: {report['promoted_s']}; answered again after the promotion: "
        f"{report['answered_after_promotion_s']}; after the new master had a replica in sync: "
        f"{report['answered_after_replicated_s']}",
        f"  the other masters' tables, the longest attempt begun before the promotion: "
        f"{report['others_held_s']}",
        f"deadlines acted on by the dispatchers: {report['deadlines_acted_on']}",
    ]
    for fault in report["faults"]:
        lines.append(f"  {fault}")
    lines += [f"fault not injected: {e}" for e in report["fault_errors"]]
    lines += [f"  lost: {c}" for c in report["lost_commands"]]
    for error in report.get("server_errors", []):
        lines += [f"500: {error['answered']}", *(f"  {line}" for line in error["logged"])]
    kinds = Counter(v["kind"] for v in report["violations"])
    lines.append(f"violations: {len(report['violations'])} {dict(sorted(kinds.items()))}")
    lines += [f"  {v['kind']}: {v['detail']}" for v in report["violations"][:50]]
    if "workdir" in report:
        lines.append(f"logs and history kept in {report['workdir']}")
    return "\n".join(lines)
