"""A real 3-master Redis Cluster for the tests: three `redis-server --cluster-enabled yes` on
free ports (their cluster bus on free ports too: the default, port + 10,000, may not exist),
each given a third of the slots and introduced to the others (what `redis-cli
--cluster create` does, done with the cluster's own commands, so only `redis-server` is
needed), stopped at the end."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

import redis

from service.processes.redis_server import find_redis_server, free_port

SLOTS = 16384


class LocalCluster:
    """Three masters on 127.0.0.1; `url` names the first (a cluster client finds the rest)."""

    def __init__(self, nodes: int = 3) -> None:
        self.nodes = nodes
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
            for n in range(self.nodes):
                port, bus = free_port(), free_port()
                directory = self.workdir / str(port)
                directory.mkdir()
                self.processes.append(
                    subprocess.Popen(
                        [binary, "--port", str(port), "--bind", "127.0.0.1",
                         "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                         "--cluster-port", str(bus),
                         "--save", "", "--appendonly", "no", "--dir", str(directory)],
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )
                )  # fmt: skip
                self.ports.append(port)
                self.bus_ports.append(bus)
                del n
            clients = [self._wait_up(port) for port in self.ports]
            share = SLOTS // self.nodes
            for n, client in enumerate(clients):
                last = SLOTS - 1 if n == self.nodes - 1 else (n + 1) * share - 1
                client.execute_command("CLUSTER ADDSLOTS", *range(n * share, last + 1))
            for port, bus in zip(self.ports[1:], self.bus_ports[1:], strict=True):
                clients[0].execute_command("CLUSTER MEET", "127.0.0.1", port, bus)
            deadline = time.monotonic() + 30
            while not all(_state_ok(c) for c in clients):
                if time.monotonic() > deadline:
                    raise RuntimeError("the local Redis Cluster did not come up within 30 s")
                time.sleep(0.05)
            for client in clients:
                client.close()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_up(self, port: int) -> redis.Redis:
        client = redis.Redis(host="127.0.0.1", port=port)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                return client
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    def stop(self) -> None:
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
