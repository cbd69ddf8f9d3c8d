"""Operating `guts serve`, over real processes: what gunicorn refuses is problem+json naming
its limit; every line on stderr is one JSON object in one format, at the `--log-level` asked
for; a REDIS_URL that never answers is waited for `--redis-wait` seconds, one that goes away
later for as long as it takes; the Dockerfile caches its dependencies apart from the code.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from service.processes.redis_server import RedisServer, free_port
from tests.test_cli import (
    OPERATOR_KEY,
    START_TIMEOUT_S,
    STOP_TIMEOUT_S,
    Served,
    _child_pids,
    _env,
    _processes,
    _status,
)
from tests.waiting import eventually

REPO = Path(__file__).resolve().parents[1]
LIMIT_REQUEST_LINE = (
    4094  # service/processes/gunicorn_conf.py, docs/operations.md "Limits", openapi.yaml
)
ISO_MS_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
LEVELS = ("debug", "info", "warning", "error", "critical")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One `guts serve` for the tests that only send it requests."""
    tmp = tmp_path_factory.mktemp("operating")
    running = Served(tmp / "data", tmp)
    try:
        running.wait_healthy()
        yield running
    finally:
        running.kill()


@pytest.fixture
def serve() -> Iterator[list[Served]]:
    """`guts serve` processes a test starts; each still running at the end is stopped."""
    started: list[Served] = []
    yield started
    for running in started:
        running.kill()


def _raw(port: int, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send `request` as it is; the status, headers (lower-case names) and body answered."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(request)
        received = b""
        while chunk := conn.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), headers, body


def _get(target: str, *headers: str) -> bytes:
    lines = [f"GET {target} HTTP/1.1", "Host: guts", *headers, "Connection: close"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _path_for_line_of(length: int) -> str:
    """A path under /v1/tables whose `GET <path> HTTP/1.1` request line is `length` bytes."""
    fixed = len("GET  HTTP/1.1") + len("/v1/tables/")
    return "/v1/tables/" + "t" * (length - fixed)


REFUSED = {  # what gunicorn refuses -> (request, status, title, words of the detail)
    "request line one byte over": (
        _get(_path_for_line_of(LIMIT_REQUEST_LINE + 1)),
        414,
        "URI Too Long",
        f"limit of {LIMIT_REQUEST_LINE} bytes",
    ),
    "request line of 20 KB": (
        _get("/v1/tables/" + "t" * 20_000),
        414,
        "URI Too Long",
        f"limit of {LIMIT_REQUEST_LINE} bytes",
    ),
    "a header field over 8190 bytes": (
        _get("/healthz", "X-Padding: " + "p" * 9000),
        431,
        "Request Header Fields Too Large",
        "limit of 8190 bytes",
    ),
    "101 header fields": (
        _get("/healthz", *(f"X-Field-{i}: {i}" for i in range(101))),
        431,
        "Request Header Fields Too Large",
        "more than 100 header fields",
    ),
    "not HTTP": (b"HELLO THERE\r\n\r\n", 400, "Bad Request", "not valid HTTP"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_requests_gunicorn_refuses_are_problem_json_that_names_the_limit(
    served: Served, case: str
) -> None:
    request, status, title, detail = REFUSED[case]
    answered, headers, body = _raw(served.port, request)
    assert answered == status, body
    assert headers["content-type"] == "application/problem+json"
    problem = json.loads(body)
    assert problem["status"] == status and problem["title"] == title
    assert problem["type"] == "https://guts.example/problems/" + title.lower().replace(" ", "-")
    assert detail in problem["detail"]
    # (the request was not read: a new id, the same in the header, the body and the log line)
    assert re.fullmatch(r"[0-9a-f]{32}", problem["request_id"])
    assert headers["x-request-id"] == problem["request_id"]
    logged = lambda: [  # noqa: E731
        line
        for line in _lines(served.stderr_path.read_text())
        if line.get("request_id") == problem["request_id"]
    ]
    eventually(logged, 5, "the request logged with its id", detail=served.output)


def test_a_request_line_at_the_limit_reaches_the_app(served: Served) -> None:
    path = _path_for_line_of(LIMIT_REQUEST_LINE)
    request = _get(path, f"Authorization: Bearer {OPERATOR_KEY}")
    answered, headers, body = _raw(served.port, request)
    assert answered == 404, body  # the app's answer: no such table
    assert json.loads(body)["detail"].startswith("no table")


@pytest.mark.parametrize(
    ("target", "status", "allowed"),
    [
        ("/v1/tables", 204, {"GET", "HEAD", "OPTIONS", "POST"}),
        ("/healthz", 204, {"GET", "HEAD", "OPTIONS"}),
        ("*", 204, {"DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT"}),
        ("/no/such/path", 404, set()),
    ],
)
def test_options_answers_with_allow_on_any_target(
    served: Served, target: str, status: int, allowed: set[str]
) -> None:
    request = f"OPTIONS {target} HTTP/1.1\r\nHost: guts\r\nConnection: close\r\n\r\n"
    answered, headers, body = _raw(served.port, request.encode())
    assert answered == status, body
    assert {m.strip() for m in headers["allow"].split(",") if m.strip()} == allowed
    if status == 404:
        assert headers["content-type"] == "application/problem+json"


def test_metrics_under_gunicorn_show_each_workers_process_and_the_pools(served: Served) -> None:
    """Under gunicorn (PROMETHEUS_MULTIPROC_DIR), the process metrics of every worker, by pid,
    and the per-process gauges summed over the workers."""
    import requests

    (master,) = _child_pids(served.process.pid, "gunicorn")
    workers = [pid for pid, ppid, _, _ in _processes() if ppid == master]
    assert workers

    def sampled() -> tuple[str, list[tuple[str, str]]] | None:
        # Each worker samples its gauges after its own requests, and which worker takes a
        # request is the kernel's choice: ask until every one has answered some.
        for _ in range(10):
            assert requests.get(served.base + "/livez", timeout=5).status_code == 200
        text = requests.get(served.base + "/metrics", timeout=5).text
        memory = re.findall(r'^process_resident_memory_bytes\{pid="(\d+)"\} (\S+)$', text, re.M)
        return (text, memory) if {int(pid) for pid, _ in memory} >= set(workers) else None

    text, memory = eventually(sampled, 30, f"every worker of {workers} in the process metrics")
    assert all(float(value) > 1_000_000 for _, value in memory)
    assert re.search(r"^guts_open_streams \d", text, re.M), text
    assert re.search(r'^guts_redis_pool_connections\{state="in_use"\} \d', text, re.M), text
    assert re.search(r'^guts_postgres_pool_connections\{state="idle"\} \d', text, re.M), text
    assert re.search(r"^python_info\{", text, re.M), text


# --- logs ---------------------------------------------------------------------------------


def _log_lines(running: Served) -> list[dict[str, Any]]:
    """Every line `guts serve` wrote on stderr (see `_lines`); stdout stays empty."""
    assert running.stdout_path.read_text() == ""
    return _lines(running.stderr_path.read_text())


def _lines(text: str) -> list[dict[str, Any]]:
    """`text` as log lines, each one JSON object with the common keys (else the test fails)."""
    entries = []
    for line in text.splitlines():
        entry = json.loads(line)
        assert isinstance(entry, dict), line
        assert ISO_MS_UTC.fullmatch(entry["ts"]), line
        assert entry["level"] in LEVELS, line
        assert isinstance(entry["logger"], str) and entry["logger"], line
        assert isinstance(entry["msg"], str) and entry["msg"], line
        entries.append(entry)
    return entries


def test_every_line_serve_logs_is_one_json_object_in_one_format(
    serve: list[Served], tmp_path: Path
) -> None:
    running = Served(tmp_path / "data", tmp_path)
    serve.append(running)
    running.wait_healthy()
    created = running.call("POST", "/v1/tables", {"preset": "three-card"})
    assert created.status_code == 201, created.text
    token = "not-a-token-" + "x" * 20
    assert (
        running.call("GET", f"/v1/tables/{created.json()['table_id']}", key=token).status_code
        == 401
    )
    assert running.call("GET", "/v1/tables/nowhere").status_code == 404
    assert _raw(running.port, REFUSED["request line of 20 KB"][0])[0] == 414
    (worker,) = _child_pids(running.process.pid, "worker")  # the supervisor's lines too
    os.kill(worker, signal.SIGKILL)
    restarted = lambda: "worker restarted" in running.output()  # noqa: E731
    eventually(restarted, START_TIMEOUT_S, "the worker restarted", detail=running.output)
    assert running.terminate() == 0, running.output()

    entries = _log_lines(running)
    sources = {entry["logger"] for entry in entries}
    for source in ("guts.serve", "guts.supervisor", "guts.access", "guts.dispatcher"):
        assert source in sources, sources
    assert "gunicorn.error" in sources and "rq.worker" in sources, sources
    access = [entry for entry in entries if entry["logger"] == "guts.access"]
    statuses = {(entry["endpoint"], entry["status"]) for entry in access}
    assert ("/v1/tables", 201) in statuses and ("/v1/tables/<table_id>", 401) in statuses
    refused = [entry for entry in entries if entry.get("status") == 414]
    assert [entry["level"] for entry in refused] == ["warning"]
    died = [entry for entry in entries if entry["logger"] == "guts.supervisor"]
    assert died[0]["level"] == "warning" and died[0]["child"] == "worker", died
    text = running.stderr_path.read_text()
    assert OPERATOR_KEY not in text and token not in text


def test_log_level_warning_drops_the_info_lines(serve: list[Served], tmp_path: Path) -> None:
    running = Served(tmp_path / "data", tmp_path, args=("--log-level", "warning"))
    serve.append(running)
    running.wait_healthy(said=False)
    assert running.call("POST", "/v1/tables", {"preset": "three-card"}).status_code == 201
    assert _raw(running.port, REFUSED["not HTTP"][0])[0] == 400
    assert running.terminate() == 0, running.output()

    entries = _log_lines(running)
    assert {entry["level"] for entry in entries} <= {"warning", "error", "critical"}, entries
    assert "InvalidRequestLine" in [entry.get("refusal") for entry in entries], entries


def test_worker_and_dispatcher_run_alone_log_the_same_way(
    redis_url: str, redis_client: Any, tmp_path: Path
) -> None:
    env = _env(REDIS_URL=redis_url)
    burst = subprocess.run(
        [sys.executable, "-m", "service.cli", "worker", "--burst", "--log-level", "debug"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert burst.returncode == 0, burst.stderr
    assert burst.stdout == ""
    assert "rq.worker" in {entry["logger"] for entry in _lines(burst.stderr)}

    stderr_path = tmp_path / "dispatch.err"
    with open(stderr_path, "wb") as stderr:
        dispatcher = subprocess.Popen(
            [sys.executable, "-m", "service.cli", "dispatch"],
            cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
        )  # fmt: skip
    try:
        started = lambda: "dispatcher started" in stderr_path.read_text()  # noqa: E731
        eventually(started, START_TIMEOUT_S, "the dispatcher started", detail=stderr_path.read_text)
        dispatcher.send_signal(signal.SIGTERM)
        assert dispatcher.wait(STOP_TIMEOUT_S) == 0, stderr_path.read_text()
    finally:
        if dispatcher.poll() is None:
            dispatcher.kill()
            dispatcher.wait()
    lines = _lines(stderr_path.read_text())
    (line,) = [entry for entry in lines if entry["msg"] == "dispatcher started"]
    assert line["logger"] == "guts.dispatcher" and line["prefix"] == "guts", line
    assert {entry["logger"] for entry in lines} <= {"guts.dispatcher", "guts.lease"}, lines


# --- waiting for Redis --------------------------------------------------------------------


def test_serve_gives_up_on_a_redis_url_that_never_answers_after_redis_wait(
    serve: list[Served], tmp_path: Path
) -> None:
    url = f"redis://:hunter2-secret@127.0.0.1:{free_port()}/0"
    running = Served(tmp_path / "data", tmp_path, _env(REDIS_URL=url), ("--redis-wait", "2"))
    serve.append(running)
    assert running.process.wait(START_TIMEOUT_S + STOP_TIMEOUT_S) == 1, running.output()
    entries = _log_lines(running)
    last = entries[-1]
    assert last["level"] == "error" and last["logger"] == "guts", last
    assert "did not answer in 2 s (--redis-wait)" in last["msg"], last
    assert "redis://:***@127.0.0.1" in last["msg"]
    text = running.stderr_path.read_text()
    assert "hunter2-secret" not in text
    assert "Traceback" not in text and not [entry for entry in entries if "exc" in entry]
    assert _status(running.base + "/healthz") is None  # everything it started has stopped


def test_redis_going_away_after_the_start_is_waited_out_past_redis_wait(
    serve: list[Served], tmp_path: Path
) -> None:
    port = free_port()
    env = _env(REDIS_URL=f"redis://127.0.0.1:{port}/0")
    with RedisServer(port=port, data_dir=tmp_path / "redis", appendonly=True):
        running = Served(tmp_path / "data", tmp_path, env, ("--redis-wait", "1"))
        serve.append(running)
        running.wait_healthy()
        created = running.call("POST", "/v1/tables", {"preset": "three-card"})
        assert created.status_code == 201, created.text
    degraded = lambda: _status(running.base + "/healthz") == 503  # noqa: E731
    eventually(degraded, START_TIMEOUT_S, "/healthz 503", detail=running.output)
    # A dispatcher's fourth failure in a row comes after waits of 0.5, 1 and 2 s (the second
    # "in 2.0 s": service.pacing.REDIS_AWAY): 3.5 times --redis-wait, room for a wrong give-up
    # to have happened.
    fourth = lambda: running.output().count("trying again in 2.0 s") >= 2  # noqa: E731
    eventually(
        fourth, START_TIMEOUT_S, "a dispatcher's fourth failure in a row", detail=running.output
    )
    assert running.process.poll() is None, running.output()
    with RedisServer(port=port, data_dir=tmp_path / "redis", appendonly=True):
        running.wait_healthy()
        table = created.json()["table_id"]
        seated = running.call(
            "POST", f"/v1/tables/{table}/players", {"player_id": "a", "buy_in": 9}
        )
        assert seated.status_code == 201, seated.text
        assert running.terminate() == 0, running.output()
    assert "giving up" not in running.output()


# --- the image ----------------------------------------------------------------------------


def _dockerfile_steps() -> list[list[str]]:
    text = re.sub(r"\\\n", " ", (REPO / "Dockerfile").read_text())  # continued lines joined
    return [
        line.split(None, 1)
        for line in text.splitlines()
        if re.match(r"(COPY|RUN|FROM|WORKDIR|USER|CMD)\b", line)
    ]


def test_the_image_installs_the_locked_dependencies_then_the_wheel_as_a_numeric_user() -> None:
    """The order is read (the build itself is the next test, where a Docker daemon answers): a
    change to the code must not invalidate the dependency layer, the project is a built wheel
    (not an editable checkout), and the process runs as a numeric uid (docs/operations.md)."""
    steps = _dockerfile_steps()
    final = max(i for i, (kind, _) in enumerate(steps) if kind == "FROM")
    assert "AS wheel" in steps[0][1] and "pip wheel" in " ".join(r for k, r in steps[:final])
    runtime = steps[final:]
    kinds = [kind for kind, _ in runtime]
    manifests = runtime.index(["COPY", "pyproject.toml requirements.lock /app/"])
    dependencies = next(i for i, (_, rest) in enumerate(runtime) if "-c requirements.lock" in rest)
    wheel = runtime.index(["COPY", "--from=wheel /wheels /wheels"])
    project = next(i for i, (_, rest) in enumerate(runtime) if "--no-deps /wheels/" in rest)
    assert manifests < dependencies < wheel < project, runtime
    assert kinds[dependencies] == kinds[project] == "RUN"
    assert "pip check" in runtime[project][1]
    assert not any(kind == "COPY" and rest.startswith(". ") for kind, rest in runtime)
    assert not any("-e ." in rest for _, rest in steps)
    (user,) = [rest for kind, rest in runtime if kind == "USER"]
    assert user.strip().isdigit(), user
    assert "GUTS_DATABASE_URL" in (REPO / "Dockerfile").read_text()


def test_hadolint_finds_nothing_in_the_dockerfile() -> None:
    hadolint = Path(sys.executable).parent / "hadolint"
    result = subprocess.run(
        [str(hadolint), "--no-color", str(REPO / "Dockerfile")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0 and not result.stdout.strip(), result.stdout + result.stderr


def _docker_answers() -> bool:
    try:
        result = subprocess.run(["docker", "info"], capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0


def test_the_image_builds_runs_and_plays_where_a_docker_daemon_answers(tmp_path: Path) -> None:
    if not _docker_answers():
        pytest.skip("NOT CHECKED: no Docker daemon answers here (docker build/run not tried)")
    tag = f"guts-test:{os.getpid()}"
    built = subprocess.run(
        ["docker", "build", "-t", tag, str(REPO)], capture_output=True, text=True, timeout=1200
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    port = free_port()
    name = f"guts-test-{os.getpid()}"
    run = [
        "docker", "run", "--rm", "-d", "--init", "--name", name,
        "-p", f"127.0.0.1:{port}:8000", "-e", f"GUTS_OPERATOR_KEYS={OPERATOR_KEY}", tag,
    ]  # fmt: skip
    started = subprocess.run(run, capture_output=True, text=True, timeout=120)
    assert started.returncode == 0, started.stderr
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 180
        ready = None
        while time.monotonic() < deadline:
            try:
                ready = requests.get(f"{base}/readyz", timeout=2)
                if ready.status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            time.sleep(1)
        assert ready is not None and ready.status_code == 200, ready and ready.text
        auth = {"Authorization": f"Bearer {OPERATOR_KEY}"}
        created = requests.post(f"{base}/v1/tables", json={"preset": "three-card"}, headers=auth)
        assert created.status_code == 201, created.text
        inspected = subprocess.run(
            ["docker", "exec", name, "id", "-u"], capture_output=True, text=True, timeout=30
        )
        assert inspected.stdout.strip() == "10001"
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=60)
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True, timeout=120)
