"""Faults on a schedule, each on the running topology, each recorded (what, on what, when it
started, when the system was whole again), and the unavailability a master failover caused:
on the tables whose slots that master held, from the first command that failed to the next
one the service answered."""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import psutil
import redis
from redis.crc import key_slot

from service.eventlog.redis_store import table_key_tag
from tests.chaos.topology import Topology

MASTER_FAULTS = ("kill_master", "sigstop_master", "failover_force")
"""The faults that make a replica a master (a failover)."""
SURVIVED = ("kill_master", "sigstop_master")
"""The failovers today's code survives; `failover_force` (CLUSTER FAILOVER FORCE: the replica
takes over without waiting for the master's writes) loses acknowledged commands until
acknowledgements wait for replication (issue 31)."""
OTHERS = ("kill_api", "kill_replica", "kill_dispatcher", "kill_postgres")
SETTLE_S = 60.0


@dataclass
class Fault:
    kind: str
    target: str
    started: float
    master_port: int | None = None  # the master that failed over (its tables: `slots`)
    slots: set[int] = field(default_factory=set)
    settled: float | None = None
    promoted: float | None = None  # when the map of the slots first named another master
    replicated: float | None = None  # when that master first had a replica in sync
    unavailable_s: float | None = None  # the worst table's, for failovers
    failed_commands: int = 0
    tables: int = 0  # the run's tables on the failed master
    others_held_s: float | None = None  # the other masters' tables: the longest attempt begun
    # between the fault and the promotion (a request held by the failed master's requests)


def schedule(failovers: int, kinds: tuple[str, ...], others: bool, rng: random.Random) -> list[str]:
    """`failovers` master faults cycling through `kinds`, with the other faults (when `others`)
    interleaved after every master fault, each at least once."""
    plan: list[str] = []
    extra = list(OTHERS)
    rng.shuffle(extra)
    for n in range(failovers):
        plan.append(kinds[n % len(kinds)])
        if others:
            plan.append(extra[n % len(extra)])
    if others:
        plan += extra[failovers:]  # each other fault at least once
    return plan


class Injector:
    """Runs the faults of `plan`, one every `interval` seconds, on `topology`."""

    def __init__(
        self,
        topology: Topology,
        plan: list[str],
        interval: float,
        rng: random.Random,
        tables: list[str],
    ) -> None:
        self.topology, self.plan, self.interval, self.rng = topology, plan, interval, rng
        self.tables = tables
        self.faults: list[Fault] = []
        self.errors: list[str] = []
        self.halt = threading.Event()  # set when the run is abandoned: no fault more

    def run(self) -> None:
        """Every fault of the plan, `interval` apart (each waits for the last to settle)."""
        for kind in self.plan:
            if self.halt.wait(self.interval):
                return  # the run abandoned
            try:
                self.faults.append(self.inject(kind))
            except Exception as error:  # noqa: BLE001 (recorded and reported: a fault that failed)
                self.errors.append(f"{kind}: {error!r}")

    def inject(self, kind: str) -> Fault:
        action: Callable[[], Fault] = getattr(self, kind)
        fault = action()
        self.topology.cluster.wait_settled(SETTLE_S)
        fault.settled = time.monotonic()
        return fault

    # --- Redis -----------------------------------------------------------------------------

    def _master(self) -> tuple[int, set[int]]:
        """The master holding most of the run's tables (the busiest), and its slots."""
        owners = self.topology.cluster.slot_owner()
        masters = self.topology.cluster.masters()
        self.rng.shuffle(masters)
        slots = {m: {s for s, port in owners.items() if port == m} for m in masters}
        port = max(masters, key=lambda m: len(tables_of(slots[m], self.tables)))
        return port, slots[port]

    def kill_master(self) -> Fault:
        port, slots = self._master()
        fault = Fault("kill_master", f"redis:{port}", time.monotonic(), port, slots)
        self.topology.cluster.kill(port)
        watching = self._watch_replicated(fault, self._wait_promoted(fault))
        self.topology.cluster.restart(port)  # it rejoins as the new master's replica
        watching.join()
        return fault

    def sigstop_master(self) -> Fault:
        port, slots = self._master()
        fault = Fault("sigstop_master", f"redis:{port}", time.monotonic(), port, slots)
        self.topology.cluster.pause(port)
        watching = self._watch_replicated(fault, self._wait_promoted(fault))
        time.sleep(1.0)  # past the promotion, as a stalled machine would be
        self.topology.cluster.resume(port)
        watching.join()
        return fault

    def failover_force(self) -> Fault:
        replica = self.rng.choice(self.topology.cluster.replicas_now())
        with self.topology.cluster.client(replica) as client:
            master = int(client.info("replication")["master_port"])
            owners = self.topology.cluster.slot_owner()
            slots = {slot for slot, port in owners.items() if port == master}
            fault = Fault("failover_force", f"redis:{replica}", time.monotonic(), master, slots)
            client.execute_command("CLUSTER FAILOVER", "FORCE")
        self._watch_replicated(fault, self._wait_promoted(fault)).join()
        return fault

    def kill_replica(self) -> Fault:
        port = self.rng.choice(self.topology.cluster.replicas_now())
        fault = Fault("kill_replica", f"redis:{port}", time.monotonic())
        self.topology.cluster.kill(port)
        time.sleep(1.0)
        self.topology.cluster.restart(port)
        return fault

    def _wait_promoted(self, fault: Fault) -> int:
        """Until another node holds the slots of the fault's master (`fault.promoted`: then);
        that node's port."""
        some, old = next(iter(fault.slots)), fault.master_port
        deadline = time.monotonic() + SETTLE_S
        while (owner := self.topology.cluster.slot_owner().get(some, old)) == old:
            if time.monotonic() > deadline:
                raise RuntimeError(f"no replica took over from {old} in {SETTLE_S} s")
            time.sleep(0.02)
        fault.promoted = time.monotonic()
        assert owner is not None
        return owner

    def _watch_replicated(self, fault: Fault, master: int) -> threading.Thread:
        """A thread started to set `fault.replicated` (`_wait_replicated`) while the fault
        goes on."""
        watching = threading.Thread(target=self._wait_replicated, args=(fault, master))
        watching.start()
        return watching

    def _wait_replicated(self, fault: Fault, master: int) -> None:
        """Until the master on `master` has a replica in sync (`fault.replicated`: then, as
        polled; nothing past SETTLE_S)."""
        deadline = time.monotonic() + SETTLE_S
        while time.monotonic() < deadline:
            try:
                with self.topology.cluster.client(master, 1.0) as client:
                    info = client.info("replication")
            except redis.RedisError:
                info = {}
            if any(
                isinstance(v, dict) and v.get("state") == "online"
                for k, v in info.items()
                if k.startswith("slave")
            ):
                fault.replicated = time.monotonic()
                return
            time.sleep(0.02)

    # --- the service's processes -----------------------------------------------------------

    def kill_api(self) -> Fault:
        node = self.rng.choice(self.topology.api)
        fault = Fault("kill_api", node.name, time.monotonic())
        node.crash()
        node.wait_healthy()
        return fault

    def kill_dispatcher(self) -> Fault:
        process = self.rng.choice(self.topology.dispatchers)
        fault = Fault("kill_dispatcher", process.name, time.monotonic())
        process.crash()
        return fault

    def kill_postgres(self) -> Fault:
        pid = self.topology.postgres_pid()
        fault = Fault("kill_postgres", f"postgres:{pid}", time.monotonic())
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
            _wait_gone(pid)  # (reaped by init: PostgreSQL sees a zombie's pid as a live postmaster)
        self.topology.postgres.restart()
        return fault


def _wait_gone(pid: int) -> None:
    deadline = time.monotonic() + SETTLE_S
    while psutil.pid_exists(pid):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the killed postmaster {pid} was never reaped")
        time.sleep(0.1)


def tables_of(slots: set[int], tables: list[str], prefix: str = "guts") -> list[str]:
    """The tables whose keys live in `slots`."""
    return [
        t for t in tables if key_slot(f"{prefix}:{{{table_key_tag(t)}}}:meta".encode()) in slots
    ]


SLOW_S = 0.5
"""An attempt that took longer than this counts as the service being away (it held the
command: redis-py's cluster client retries through a failover before it answers)."""


def measure(
    fault: Fault, tables: list[str], attempts: list[tuple[float, float, str, bool, bool]]
) -> None:
    """Set `fault.unavailable_s`: on each of the failed master's tables, from the first attempt
    after the fault (a command, or a read of the table) that failed or was held longer than
    SLOW_S (before the fault settled) to the end of the next command answered in time; the
    worst table's. (A read answered does not end it: a promoted master without a replica
    serves reads, not commands.)"""
    mine = set(tables_of(fault.slots, tables))
    fault.tables = len(mine)
    until = fault.settled or fault.started
    fault.others_held_s = max(
        (
            ended - began
            for began, ended, table, _, _ in attempts
            if table not in mine and fault.started <= began <= (fault.promoted or until)
        ),
        default=0.0,
    )
    first_bad: dict[str, float] = {}
    last_bad: dict[str, float] = {}
    worst = 0.0
    for began, ended, table, answered, command in sorted(attempts):
        if table not in mine or ended < fault.started:
            continue
        fault.failed_commands += not answered and command
        start = first_bad.get(table)
        if not answered or ended - began > SLOW_S:
            if start is None and began <= until:
                first_bad[table] = max(began, fault.started)
            last_bad[table] = ended
        elif start is not None and command:
            worst = max(worst, ended - start)
            mine.discard(table)  # only the first outage after the fault counts
            del first_bad[table]
    for table, start in first_bad.items():  # never answered again
        worst = max(worst, last_bad[table] - start)
    fault.unavailable_s = worst
