"""The recommended production topology on this machine, every piece a real process:

- a Redis Cluster (tests/cluster.py: 3 masters + 3 replicas, AOF fsynced always);
- a plain `redis-server` for RQ's queues (`GUTS_QUEUE_REDIS_URL`);
- a private PostgreSQL for the archive (the `pgserver` wheel, as tests/postgres.py's private
  server and `guts serve`'s embedded one: private, so that killing it -9 touches nobody else);
- two `guts serve` nodes (each: gunicorn, its dispatchers, an RQ worker) and two `guts
  dispatch`, all with `GUTS_REDIS_CLUSTER=1` and `GUTS_REDIS_MIN_REPLICAS` as given.

Each guts process runs in its own session, so a fault kills it with all its children (a node
lost whole), and `stop` ends everything, even after a failure."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from types import TracebackType

import psutil
import requests

from service.archive.database import EmbeddedPostgres, connect, migrate
from service.processes.redis_server import RedisServer, free_port
from tests.cluster import LocalCluster

REPO = Path(__file__).resolve().parents[2]
OPERATOR_KEY = "chaos-operator-key"
AUDITOR_KEY = "chaos-auditor-key"
START_TIMEOUT_S = 60.0


NODE_TIMEOUT_MS = 2000
"""The cluster's ``cluster-node-timeout`` (docs/operations.md)."""


class GutsProcess:
    """`guts serve` (given a port) or `guts dispatch`, in a session of its own, logging to a
    file; restartable on the same port."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], logs: Path) -> None:
        self.name, self.args, self.env = name, args, env
        self.log = logs / f"{name}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.exits = 0  # exits it made by itself (restarted)
        self.lock = threading.Lock()

    def start(self) -> None:
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "service.cli", *self.args],
                cwd=REPO,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                start_new_session=True,
            )
        self.starts += 1

    def kill(self) -> None:
        """kill -9, with every process it started (its children run in process groups of
        their own, and would otherwise be told to stop gracefully, which a crash is not)."""
        if self.process is None:
            return
        try:
            top = psutil.Process(self.process.pid)
            children = top.children(recursive=True)
        except psutil.NoSuchProcess:
            children = []
        _signal_group(self.process, signal.SIGKILL)
        # Until every descendant is gone: one forked while this looked (a gunicorn worker the
        # master was starting) would outlive the kill, keep the port and answer /livez while
        # the restarted node fails to bind it (CI, 2026-12-02: api-0 refused every
        # connection after its restart).
        while children:
            for child in children:
                with contextlib.suppress(psutil.NoSuchProcess):
                    for grandchild in child.children(recursive=True):
                        with contextlib.suppress(psutil.NoSuchProcess):
                            grandchild.kill()
                    child.kill()
            _, alive = psutil.wait_procs(children, timeout=5)
            children = alive
        self.process.wait()

    def crash(self) -> None:
        """kill -9 and start again (a fault)."""
        with self.lock:
            self.kill()
            self.start()

    def restart_if_exited(self) -> None:
        """Start it again if it exited by itself, as systemd would."""
        with self.lock:
            if self.process is not None and self.process.poll() is not None:
                self.exits += 1
                self.start()

    def stop(self) -> None:
        """SIGTERM (it stops its children), SIGKILL to whatever is left after 15 s."""
        if self.process is None:
            return
        if self.process.poll() is None:
            _signal_group(self.process, signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                pass
        _signal_group(self.process, signal.SIGKILL)
        self.process.wait()


def _signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    try:
        os.killpg(process.pid, signum)
    except ProcessLookupError:
        pass


class ApiNode(GutsProcess):
    """`guts serve` on a port of its own; `base` is its URL."""

    def __init__(self, name: str, env: dict[str, str], logs: Path, workers: int) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        args = ["serve", "--port", str(self.port), "--workers", str(workers)]
        super().__init__(name, [*args, "--data-dir", str(logs / name)], env, logs)

    def start(self) -> None:
        """Once nothing listens on its port any more (a killed node's orphaned worker exits
        when it sees its master gone, within about a second), as a restart by systemd would
        find it after the old unit's processes are gone."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", self.port)) != 0:
                    break
            time.sleep(0.1)
        super().start()

    def wait_healthy(self, seconds: float = START_TIMEOUT_S) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited:\n{self.log.read_text()[-3000:]}")
            try:
                if requests.get(self.base + "/livez", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"{self.name} not up in {seconds} s:\n{self.log.read_text()[-3000:]}")


class Topology:
    """Everything above, started by `__enter__` and stopped by `__exit__` whatever happened."""

    def __init__(
        self,
        min_replicas: int = 1,
        web_workers: int = 1,
        replicas: int = 1,
        full_coverage: bool = False,
        serve_dispatchers: int = 2,
    ) -> None:
        self.min_replicas = min_replicas
        self.serve_dispatchers = serve_dispatchers  # each API node's own (GUTS_DISPATCHERS)
        self.web_workers = web_workers
        self.workdir = Path(tempfile.mkdtemp(prefix="guts-chaos-run-"))
        self.cluster = LocalCluster(
            replicas=replicas,
            node_timeout_ms=NODE_TIMEOUT_MS,
            durable=True,
            full_coverage=full_coverage,  # (docs/operations.md recommends no)
        )
        self.queues = RedisServer()
        self.postgres = EmbeddedPostgres(self.workdir / "postgres")
        self.database_url = ""
        self.api: list[ApiNode] = []
        self.dispatchers: list[GutsProcess] = []
        self.stopping = threading.Event()
        self.keeper = threading.Thread(target=self._keep, daemon=True)

    def _keep(self) -> None:
        """Restart a `guts dispatch` that exits (`guts serve` restarts its own children)."""
        while not self.stopping.wait(0.5):
            for process in self.dispatchers:
                process.restart_if_exited()

    def env(self) -> dict[str, str]:
        drop = ("REDIS_URL", "GUNICORN_CMD_ARGS", "GUTS_DATABASE_URL")
        env = {k: v for k, v in os.environ.items() if k not in drop}
        env.update(
            REDIS_URL=self.cluster.url,
            GUTS_REDIS_CLUSTER="1",
            GUTS_ALLOW_PRIVATE_URLS="1",  # (the webhooks' receiver is on 127.0.0.1)
            # every node: a process started while REDIS_URL's is away reaches the others
            GUTS_REDIS_CLUSTER_NODES=",".join(f"127.0.0.1:{port}" for port in self.cluster.ports),
            GUTS_REDIS_MIN_REPLICAS=str(self.min_replicas),
            GUTS_QUEUE_REDIS_URL=self.queues.url,
            GUTS_DATABASE_URL=self.database_url,
            GUTS_OPERATOR_KEYS=OPERATOR_KEY,
            GUTS_AUDITOR_KEYS=AUDITOR_KEY,
            GUTS_TOKEN_SECRET="chaos-token-secret",
            GUTS_FOLLOW_LEASE_S="3",
            GUTS_WEBHOOK_FIRST_RETRY_S="1",
            GUTS_WEBHOOK_MAX_WAIT_S="5",
            GUTS_REDIS_WAIT_S="0",
            GUTS_LOG_LEVEL="warning",
        )
        return env

    def __enter__(self) -> Topology:
        try:
            self.cluster.__enter__()
            self.queues.start()
            self.database_url = self.postgres.start()
            with connect(self.database_url) as conn:
                migrate(conn)
            logs = self.workdir
            for n in range(2):
                node_env = {**self.env(), "GUTS_DISPATCHERS": str(self.serve_dispatchers)}
                self.api.append(ApiNode(f"api-{n}", node_env, logs, self.web_workers))
                self.dispatchers.append(
                    GutsProcess(f"dispatch-{n}", ["dispatch"], self.env(), logs)
                )
            for process in [*self.api, *self.dispatchers]:
                process.start()
            self.keeper.start()
            for node in self.api:
                node.wait_healthy()
        except BaseException:
            self.stop()
            raise
        return self

    def uncaught(self) -> dict[str, int]:
        """The exceptions that ended a guts process, by type, as their logs say."""
        said = re.compile(r'"msg":"uncaught (\w+)')
        logs = [process.log.read_text() for process in [*self.api, *self.dispatchers]]
        return dict(Counter(kind for log in logs for kind in said.findall(log)))

    def logged(self, answered: str) -> list[str]:
        """The API nodes' log lines of the error a 500 answered with: its body names a reference
        ("ref X"), its log line the same reference and the traceback."""
        ref = re.search(r"ref (\w+)", answered)
        if ref is None:
            return []
        mark = f"ref={ref.group(1)}"
        return [
            line[-4000:]
            for node in self.api
            for line in node.log.read_text().splitlines()
            if mark in line
        ]

    def dispatcher_exits(self) -> int:
        """How often a dispatcher exited by itself: the `guts dispatch` processes (restarted
        here) and those of each `guts serve` (restarted by its supervisor, which logs it)."""
        said = re.compile(r'"msg":"dispatcher-\d+ \(pid \d+\) exited')
        logged = sum(len(said.findall(node.log.read_text())) for node in self.api)
        return logged + sum(process.exits for process in self.dispatchers)

    def postgres_pid(self) -> int | None:
        server = getattr(self.postgres, "_server", None)
        return None if server is None else server.get_pid()

    def stop(self) -> None:
        self.stopping.set()
        if self.keeper.is_alive():
            self.keeper.join()
        for process in [*self.api, *self.dispatchers]:
            process.stop()
        self.cluster.stop()
        self.queues.stop()
        self.postgres.stop()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()
