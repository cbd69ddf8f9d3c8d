"""The recommended Redis topology, for real: a Redis Cluster of three masters, each with one
replica, every node a `redis-server` on free ports with `appendonly yes`, `appendfsync always`
and `cluster-node-timeout 2000` (docs/operations.md), and `repl-diskless-sync-delay 0` (a
replica that rejoins is synced at once, not after Redis's default 5 s wait for more replicas).
Made as tests/cluster.py makes its cluster, with the cluster's own commands (ADDSLOTS, MEET,
then REPLICATE), so only `redis-server` is needed. A node can be killed (-9), stopped (SIGSTOP)
and continued, and restarted on its port and its files (it rejoins, as a replica of whoever
holds its slots by then)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import redis

from service.processes.redis_server import find_redis_server, free_port
from tests.cluster import SLOTS, _state_ok

NODE_TIMEOUT_MS = 2000


@dataclass
class Node:
    """One `redis-server` of the cluster: its ports, its directory and its process."""

    port: int
    bus: int
    directory: Path
    process: subprocess.Popen[bytes] | None = None
    stopped: bool = False  # SIGSTOPped

    def client(self, timeout: float = 2.0) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=timeout, socket_connect_timeout=timeout)

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


@dataclass
class ReplicatedCluster:
    """`masters` masters with `replicas` replicas each on 127.0.0.1; `url` names a node that is
    up (a cluster client finds the rest)."""

    masters: int = 3
    replicas: int = 1
    node_timeout_ms: int = NODE_TIMEOUT_MS
    nodes: list[Node] = field(default_factory=list)
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="guts-chaos-")))

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.nodes[0].port}/0"

    def start(self) -> ReplicatedCluster:
        try:
            for _ in range(self.masters * (1 + self.replicas)):
                port = free_port()
                node = Node(port, free_port(), self.workdir / str(port))
                node.directory.mkdir()
                self.nodes.append(node)
                self.launch(node)
            for node in self.nodes:
                _until(lambda n=node: self._answers(n), 10, f"redis on {node.port} to start")
            clients = [node.client() for node in self.nodes]
            for client, (first, last) in zip(clients, _shares(self.masters), strict=False):
                client.execute_command("CLUSTER ADDSLOTS", *range(first, last + 1))
            for node in self.nodes[1:]:
                clients[0].execute_command("CLUSTER MEET", "127.0.0.1", node.port, node.bus)
            self._replicate(clients)
            self.wait_settled(60)
            for client in clients:
                client.close()
        except BaseException:
            self.stop()
            raise
        return self

    def _replicate(self, clients: list[redis.Redis]) -> None:
        ids = [c.execute_command("CLUSTER MYID").decode() for c in clients[: self.masters]]
        deadline = time.monotonic() + 30
        for n, client in enumerate(clients[self.masters :]):
            master = ids[n % self.masters]
            while True:  # a replica must have heard of its master (gossip) first
                try:
                    client.execute_command("CLUSTER REPLICATE", master)
                    break
                except redis.ResponseError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)

    def launch(self, node: Node) -> None:
        """Start (or restart) `node` on its ports and its files."""
        node.process = subprocess.Popen(
            [find_redis_server(), "--port", str(node.port), "--bind", "127.0.0.1",
             "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
             "--cluster-port", str(node.bus), "--cluster-node-timeout", str(self.node_timeout_ms),
             "--appendonly", "yes", "--appendfsync", "always", "--save", "",
             "--repl-diskless-sync-delay", "0",
             "--dir", str(node.directory), "--logfile", "redis.log"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        node.stopped = False

    # --- what the cluster looks like now ---------------------------------------------------

    def _answers(self, node: Node) -> bool:
        try:
            with node.client(1.0) as client:
                return bool(client.ping())
        except redis.RedisError:
            return False

    def role(self, node: Node) -> str | None:
        """The node's role, `master` or `slave`; None when it does not answer."""
        if not node.alive or node.stopped:
            return None
        try:
            with node.client(1.0) as client:
                return str(client.execute_command("ROLE")[0].decode())
        except redis.RedisError:
            return None

    def masters_now(self) -> list[Node]:
        return [n for n in self.nodes if self.role(n) == "master" and self._has_slots(n)]

    def replicas_now(self) -> list[Node]:
        return [n for n in self.nodes if self.role(n) == "slave"]

    def _has_slots(self, node: Node) -> bool:
        with node.client(1.0) as client:
            return bool(client.execute_command("CLUSTER SLOTS"))

    def slot_owner(self) -> dict[int, int]:
        """Each slot's master's port, as a node that answers sees it ({} if none answers)."""
        for node in self.nodes:
            if self.role(node) is None:
                continue
            try:
                with node.client(1.0) as client:
                    ranges = client.execute_command("CLUSTER SLOTS")
            except redis.RedisError:
                continue
            owners: dict[int, int] = {}
            for first, last, master, *_ in ranges:
                owners.update(dict.fromkeys(range(first, last + 1), int(master[1])))
            return owners
        return {}

    def settled(self) -> bool:
        """Every node up and saying the cluster is ok, `masters` masters holding slots, each
        replica's link to its master up."""
        if any(self.role(n) is None for n in self.nodes):
            return False
        try:
            for node in self.nodes:
                with node.client(1.0) as client:
                    if not _state_ok(client):
                        return False
                    info = client.info("replication")
                    if info["role"] == "slave" and info.get("master_link_status") != "up":
                        return False
        except redis.RedisError:
            return False
        return len(self.masters_now()) == self.masters

    def wait_settled(self, seconds: float) -> float:
        """Wait for `settled`; the seconds it took (RuntimeError past `seconds`)."""
        started = time.monotonic()
        _until(self.settled, seconds, "the Redis Cluster to settle")
        return time.monotonic() - started

    # --- faults ----------------------------------------------------------------------------

    def kill(self, node: Node) -> None:
        if node.process is not None and node.process.poll() is None:
            if node.stopped:
                os.kill(node.process.pid, signal.SIGCONT)
            node.process.kill()
            node.process.wait()

    def pause(self, node: Node) -> None:
        assert node.process is not None
        os.kill(node.process.pid, signal.SIGSTOP)
        node.stopped = True

    def resume(self, node: Node) -> None:
        assert node.process is not None
        os.kill(node.process.pid, signal.SIGCONT)
        node.stopped = False

    def restart(self, node: Node) -> None:
        self.kill(node)
        self.launch(node)
        _until(lambda: self._answers(node), 30, f"redis on {node.port} to restart")

    def stop(self) -> None:
        for node in self.nodes:
            self.kill(node)
        shutil.rmtree(self.workdir, ignore_errors=True)


def _shares(masters: int) -> list[tuple[int, int]]:
    """The first and last slot of each master's share of the slots."""
    bounds = [n * (SLOTS // masters) for n in range(masters)] + [SLOTS]
    return [(bounds[n], bounds[n + 1] - 1) for n in range(masters)]


def _until(done: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            raise RuntimeError(f"waited {seconds} s for {what}")
        time.sleep(0.05)
