"""A real 3-master Redis Cluster for the tests: three `redis-server --cluster-enabled yes` on
free ports (their cluster bus on free ports too: the default, port + 10,000, may not exist),
each given a third of the slots and introduced to the others (what `redis-cli
--cluster create` does, done with the cluster's own commands, so only `redis-server` is
needed), stopped at the end. With `replicas`, each master gets that many replicas (``CLUSTER
REPLICATE``), so a master can be killed, stopped (SIGSTOP) and continued, or a replica forced
to take over (``CLUSTER FAILOVER FORCE``), as in the production topology
(docs/operations.md); with `durable`, every node has `appendonly yes`, `appendfsync always`
and its own log file, so a node killed and restarted on its files rejoins as production's
would (the chaos harness, tests/chaos). Replicas rejoin without Redis's default 5 s wait for
more replicas before a full sync (`repl-diskless-sync-delay 0`)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

import redis

from service.processes.redis_server import find_redis_server, free_port
from tests.waiting import eventually

SLOTS = 16384


def until(done: Callable[[], bool], what: str, within_s: float = 30, every_s: float = 0.02) -> None:
    """Wait for `done` (looked at every `every_s`), failing with `what` after `within_s`: the
    cluster tests' `eventually` (tests/waiting.py), with the bound and the look they share."""
    eventually(done, within_s, what, every_s=every_s)


class _Exited(Exception):
    """A node's process exited before it answered."""


class LocalCluster:
    """Three masters on 127.0.0.1 (and `replicas` replicas of each); `url` names the first
    master (a cluster client finds the rest). `node_timeout_ms` is the cluster's
    ``cluster-node-timeout``: how long a master must be unreachable before a replica takes
    over. `full_coverage` is ``cluster-require-full-coverage``: Redis's default (yes) makes
    every node refuse every command (``CLUSTERDOWN``) while any slot has no master, so a
    master lost stops the whole cluster until its replica is promoted; with no, the other
    masters serve their slots meanwhile, as docs/operations.md recommends."""

    def __init__(
        self,
        nodes: int = 3,
        replicas: int = 0,
        node_timeout_ms: int = 15000,
        *,
        durable: bool = False,
        full_coverage: bool = True,
    ) -> None:
        self.nodes = nodes
        self.replicas = replicas
        self.node_timeout_ms = node_timeout_ms
        self.durable = durable
        self.full_coverage = full_coverage
        self.stopped: set[int] = set()  # the ports of the nodes SIGSTOPped
        self.master_ports: list[int] = []
        self.ports: list[int] = []
        self.bus_ports: list[int] = []
        self.processes: list[subprocess.Popen[bytes]] = []
        self.workdir = Path(tempfile.mkdtemp(prefix="guts-cluster-"))

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.ports[0]}/0"

    def __enter__(self) -> LocalCluster:
        binary = find_redis_server()
        try:
            clients = [self._add_node(binary) for _ in range(self.nodes * (1 + self.replicas))]
            self.master_ports = self.ports[: self.nodes]
            share = SLOTS // self.nodes
            for n, client in enumerate(clients[: self.nodes]):
                last = SLOTS - 1 if n == self.nodes - 1 else (n + 1) * share - 1
                client.execute_command("CLUSTER ADDSLOTS", *range(n * share, last + 1))
            for port, bus in zip(self.ports[1:], self.bus_ports[1:], strict=True):
                clients[0].execute_command("CLUSTER MEET", "127.0.0.1", port, bus)
            until(lambda: all(_knows(c, len(self.ports)) for c in clients), "the nodes to meet")
            ids = [c.execute_command("CLUSTER MYID") for c in clients[: self.nodes]]
            for n, client in enumerate(clients[self.nodes :]):
                until(lambda c=client, i=ids[n % self.nodes]: _replicates(c, i), "a replica")
            until(lambda: all(_state_ok(c) and _synced(c) for c in clients), "the cluster up")
            for client in clients:
                client.close()
        except BaseException:
            self.stop()
            raise
        return self

    def _add_node(self, binary: str) -> redis.Redis:
        """A node started on free ports, answering; started again on others when it exits
        first (a port taken between `free_port` and the node's bind: tests start servers in
        parallel)."""
        for _ in range(5):
            port, bus = free_port(), free_port()
            process = self._start(binary, port, bus)
            self.ports.append(port)
            self.bus_ports.append(bus)
            self.processes.append(process)
            try:
                return self._wait_up(port, process)
            except _Exited:
                for kept in (self.ports, self.bus_ports, self.processes):
                    kept.pop()
        raise RuntimeError("no local Redis Cluster node started on 5 pairs of free ports")

    def _start(self, binary: str, port: int, bus: int) -> subprocess.Popen[bytes]:
        directory = self.workdir / str(port)
        directory.mkdir(exist_ok=True)
        durable = ["--appendonly", "yes", "--appendfsync", "always", "--logfile", "redis.log"]
        return subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1",
             "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
             "--cluster-port", str(bus), "--cluster-node-timeout", str(self.node_timeout_ms),
             "--repl-diskless-sync-delay", "0", "--save", "", "--dir", str(directory),
             "--cluster-require-full-coverage", "yes" if self.full_coverage else "no",
             *(durable if self.durable else ["--appendonly", "no"])],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip

    def client(self, port: int, timeout_s: float = 5.0) -> redis.Redis:
        """A plain client of the node on `port` (a stopped node's commands time out)."""
        return redis.Redis(
            host="127.0.0.1", port=port, socket_timeout=timeout_s, socket_connect_timeout=timeout_s
        )

    def role(self, port: int) -> str | None:
        """The node's role, ``master`` or ``slave``; None when it does not answer."""
        if port not in self.live():
            return None
        try:
            with self.client(port, 1.0) as client:
                return _role(client)
        except redis.RedisError:
            return None

    def masters(self) -> list[int]:
        """The ports of the nodes that are masters of slots now (as each live node says of
        itself, and as the cluster's map of the slots says)."""
        owners = set(self.slot_owner().values())
        return [port for port in self.live() if port in owners and self.role(port) == "master"]

    def replicas_now(self) -> list[int]:
        """The ports of the nodes that are replicas now."""
        return [port for port in self.live() if self.role(port) == "slave"]

    def live(self) -> list[int]:
        """The ports of the nodes running (not stopped)."""
        running = zip(self.ports, self.processes, strict=True)
        return [p for p, process in running if process.poll() is None and p not in self.stopped]

    def slot_owner(self) -> dict[int, int]:
        """Each slot's master's port, as the first node that answers sees it ({} if none)."""
        for port in self.live():
            try:
                with self.client(port, 1.0) as client:
                    ranges = client.execute_command("CLUSTER SLOTS")
            except redis.RedisError:
                continue
            owners: dict[int, int] = {}
            for first, last, master, *_ in ranges:
                owners.update(dict.fromkeys(range(first, last + 1), int(master[1])))
            return owners
        return {}

    def settled(self) -> bool:
        """Every node up and saying the cluster is ok, `nodes` masters holding slots, and every
        other node a replica in sync with its master."""
        if len(self.live()) != len(self.ports):
            return False
        try:
            if not all(
                _state_ok(self.client(p, 1.0)) and _synced(self.client(p, 1.0)) for p in self.ports
            ):
                return False
        except redis.RedisError:
            return False
        return (
            len(self.masters()) == self.nodes
            and len(self.replicas_now()) == len(self.ports) - self.nodes
        )

    def wait_settled(self, within_s: float = 30) -> float:
        """Wait for `settled`; the seconds it took (AssertionError past `within_s`)."""
        started = time.monotonic()
        until(self.settled, "the cluster settled", within_s)
        return time.monotonic() - started

    def pause(self, port: int) -> None:
        """SIGSTOP the node on `port` (as a stalled machine)."""
        os.kill(self.processes[self.ports.index(port)].pid, signal.SIGSTOP)
        self.stopped.add(port)

    def resume(self, port: int) -> None:
        """SIGCONT the node on `port`."""
        os.kill(self.processes[self.ports.index(port)].pid, signal.SIGCONT)
        self.stopped.discard(port)

    def replica_of(self, master_port: int) -> int:
        """The port of a live replica of the master on `master_port`."""
        for port in self.live():
            info = self.client(port).info("replication")
            if info.get("role") == "slave" and int(info.get("master_port", 0)) == master_port:
                return port
        raise LookupError(f"no live replica of {master_port}")

    def kill(self, port: int) -> None:
        """kill -9 the node on `port`."""
        process = self.processes[self.ports.index(port)]
        if port in self.stopped:
            self.resume(port)
        process.kill()
        process.wait()

    def restart(self, port: int) -> None:
        """Start the node on `port` again, killed first if it runs (it rejoins with its
        nodes.conf: a master that a replica replaced comes back as that one's replica)."""
        self.kill(port)
        n = self.ports.index(port)
        self.processes[n] = self._start(find_redis_server(), port, self.bus_ports[n])
        self._wait_up(port).close()

    def wait_ok(self, within_s: float = 30) -> None:
        """Until every live node says the cluster is ok and every replica is in sync."""
        until(
            lambda: all(_state_ok(self.client(p)) and _synced(self.client(p)) for p in self.live()),
            "every live node ok and every replica in sync",
            within_s,
        )

    def _wait_up(self, port: int, process: subprocess.Popen[bytes] | None = None) -> redis.Redis:
        """A client of the node on `port` once it answers (_Exited when `process`, the node,
        exits first)."""
        client = redis.Redis(host="127.0.0.1", port=port)
        deadline = time.monotonic() + 30  # (a node replaying its AOF on a loaded machine)
        while True:
            try:
                client.ping()
                return client
            except redis.ConnectionError:
                if process is not None and process.poll() is not None:
                    client.close()
                    raise _Exited(port) from None
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    def stop(self) -> None:
        for port in list(self.stopped):
            self.resume(port)
        for process in self.processes:
            process.kill()
            process.wait()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()


def _state_ok(client: redis.Redis) -> bool:
    info = client.execute_command("CLUSTER INFO")  # redis-py parses it into a dict
    return str(dict(info).get("cluster_state")) == "ok"


def _knows(client: redis.Redis, count: int) -> bool:
    info = client.execute_command("CLUSTER INFO")
    return int(dict(info).get("cluster_known_nodes", 0)) >= count


def _replicates(client: redis.Redis, master_id: bytes) -> bool:
    """Made a replica of `master_id` (refused until gossip has told it of that master)."""
    try:
        client.execute_command("CLUSTER REPLICATE", master_id)
    except redis.ResponseError:
        return False
    return True


def _role(client: redis.Redis) -> str:
    return str(client.info("replication").get("role"))


def _synced(client: redis.Redis) -> bool:
    """A master, or a replica whose link to its master is up and in sync."""
    info = client.info("replication")
    return info.get("role") == "master" or (
        info.get("master_link_status") == "up" and not info.get("master_sync_in_progress")
    )
