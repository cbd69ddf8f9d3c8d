"""Operations: liveness and readiness probes checked dependency by dependency, and the
request id that ties a response to its log lines and problem body.

Every check runs against real servers: the suite's Redis and PostgreSQL, a real dispatcher
loop and archiver, and a PostgreSQL or Redis that is not there (a closed port) or that
never answers (a socket that accepts and stays silent).
"""

from __future__ import annotations

import http.client
import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest
import requests

from service.config import Settings
from service.infrastructure import open_archive, store_client
from service.logs import StderrLines
from service.processes.redis_server import free_port
from tests.apiclient import Api, follow_webhooks
from tests.metrics import Samples, samples
from tests.waiting import eventually
from workers.dispatcher import build_archiver, build_dispatcher

DEADLINE_S = 15.0


class Dispatching:
    """A real dispatcher loop (and, when asked, the archiver) on the suite's Redis and
    PostgreSQL, each in a thread, stopped at the end."""

    def __init__(self, redis_url: str, database_url: str) -> None:
        self.settings = Settings(redis_url=redis_url, database_url=database_url)
        self.client = store_client(self.settings)
        self.archive = open_archive(self.settings, size=2)
        assert self.archive is not None
        self.archiver = build_archiver(self.settings, self.client, self.archive)
        self.stops: list[threading.Event] = []
        self.threads: list[threading.Thread] = []

    def _start(self, target: Callable[..., None], *args: Any) -> threading.Event:
        stop = threading.Event()
        thread = threading.Thread(target=target, args=(*args, stop), daemon=True)
        thread.start()
        self.stops.append(stop)
        self.threads.append(thread)
        return stop

    def dispatcher(self) -> threading.Event:
        dispatcher = build_dispatcher(self.settings, self.client, self.archive)
        return self._start(dispatcher.run)

    def archiving(self) -> threading.Event:
        notices = self.archiver.store.notices  # type: ignore[attr-defined]
        return self._start(self.archiver.run, self.client, notices)

    def close(self) -> None:
        for stop in self.stops:
            stop.set()
        for thread in self.threads:
            thread.join(10)
        self.archive.close()  # type: ignore[union-attr]
        self.client.close()


@pytest.fixture
def dispatching(api: Api, redis_url: str, database_url: str) -> Iterator[Dispatching]:
    running = Dispatching(redis_url, database_url)
    try:
        yield running
    finally:
        running.close()


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never says anything (a hung dependency)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield listener.getsockname()[1]


def _ready(api: Api, path: str = "/readyz") -> requests.Response:
    return api.get(path, token=None)


# --- /livez and /readyz ------------------------------------------------------------------


def test_livez_answers_while_the_process_serves_whatever_its_dependencies(
    serve_with: Callable[..., Api],
):
    dead = serve_with(redis_url=f"redis://127.0.0.1:{free_port()}/0")
    answer = dead.get("/livez", token=None)
    assert answer.status_code == 200
    assert answer.json()["status"] == "ok"
    assert dead.get("/readyz", token=None).status_code == 503


def test_ready_only_while_a_dispatcher_beats_its_heartbeat(api: Api, dispatching: Dispatching):
    for path in ("/readyz", "/healthz"):
        silent = _ready(api, path)
        assert silent.status_code == 503, silent.text
        assert silent.headers["Retry-After"] == "1"
        body = silent.json()
        assert body["status"] == "degraded"
        assert body["checks"]["dispatcher"]["ok"] is False
        assert body["checks"]["dispatcher"]["last_beat_s"] is None
        assert body["checks"]["redis"]["ok"] is True
        assert body["checks"]["postgres"]["ok"] is True
    stop = dispatching.dispatcher()
    dispatching.archiving()
    ready = eventually(lambda: (r := _ready(api)).status_code == 200 and r, DEADLINE_S, "ready")
    body = ready.json()
    assert body["status"] == "ok" and body["quarantined"] == []
    assert set(body["checks"]) == {"redis", "postgres", "dispatcher", "archive"}
    assert all(check["ok"] is True for check in body["checks"].values()), body
    assert body["checks"]["dispatcher"]["alive"] == 1
    assert 0 <= body["checks"]["dispatcher"]["last_beat_s"] <= 5
    assert _ready(api, "/healthz").json()["checks"].keys() == body["checks"].keys()
    stop.set()  # a dispatcher that stops says so: no longer counted
    eventually(lambda: _ready(api).status_code == 503, DEADLINE_S, "not ready")
    assert _ready(api).json()["checks"]["dispatcher"]["ok"] is False


def test_not_ready_while_postgresql_is_down(
    api: Api, dispatching: Dispatching, serve_with: Callable[..., Api]
):
    dispatching.dispatcher()
    dispatching.archiving()
    eventually(lambda: _ready(api).status_code == 200, DEADLINE_S, "ready")
    closed = f"postgresql://guts@127.0.0.1:{free_port()}/guts"
    broken = serve_with(database_url=closed)
    answer = _ready(broken)
    assert answer.status_code == 503, answer.text
    body = answer.json()
    assert body["status"] == "degraded"
    assert body["checks"]["postgres"]["ok"] is False
    assert body["checks"]["postgres"]["error"]
    assert body["checks"]["redis"]["ok"] is True
    assert body["checks"]["dispatcher"]["ok"] is True
    assert _ready(api).status_code == 200  # the same moment, the same Redis, a live PostgreSQL


def test_not_ready_while_postgresql_takes_no_writes(
    dispatching: Dispatching, serve_with: Callable[..., Api]
):
    """A PostgreSQL that answers and takes no writes (a standby, or read-only by setting, as an
    operator sets it on a full disk) archives nothing: /readyz said ok (a SELECT 1)."""
    from tests.postgres import fresh_database

    dispatching.dispatcher()
    with fresh_database() as url:
        name = url.rsplit("/", 1)[1].split("?")[0]
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
            served = serve_with(database_url=url)
            answer = _ready(served)
            assert answer.status_code == 503, answer.text
            check = answer.json()["checks"]["postgres"]
            assert check["ok"] is False and "takes no writes" in check["error"], check
            assert answer.json()["checks"]["redis"]["ok"] is True
            admin.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = off')
            assert _ready(served).json()["checks"]["postgres"]["ok"] is True


def test_not_ready_while_the_archive_lags_past_its_limit(
    dispatching: Dispatching, serve_with: Callable[..., Api]
):
    strict = serve_with(archive_lag_limit=2)
    dispatching.dispatcher()
    before = _ready(strict).json()["checks"]["archive"]
    assert before["ok"] is False and before["lag_events"] is None  # never measured
    table = strict.table("three-card")
    for i in range(3):
        strict.seat(table, f"p{i}")
    dispatching.archiver.sweep()  # measures the lag it found, then archives it
    lagging = _ready(strict)
    assert lagging.status_code == 503
    archive = lagging.json()["checks"]["archive"]
    assert archive["ok"] is False and archive["limit"] == 2
    assert archive["lag_events"] >= 4 and archive["lag_tables"] == 1  # created + 3 seated
    dispatching.archiver.sweep()  # nothing was left behind
    caught_up = _ready(strict)
    assert caught_up.status_code == 200, caught_up.text
    assert caught_up.json()["checks"]["archive"]["lag_events"] == 0


def test_a_hung_postgresql_does_not_hang_the_probe(
    dispatching: Dispatching, serve_with: Callable[..., Api], silent_port: int
):
    dispatching.dispatcher()
    hung = serve_with(database_url=f"postgresql://guts@127.0.0.1:{silent_port}/guts")
    started = time.monotonic()
    answer = _ready(hung)
    assert time.monotonic() - started < 3
    assert answer.status_code == 503
    assert "within 1 s" in answer.json()["checks"]["postgres"]["error"]


def test_a_hung_redis_does_not_hang_the_probe(serve_with: Callable[..., Api], silent_port: int):
    hung = serve_with(redis_url=f"redis://127.0.0.1:{silent_port}/0", database_url=None)
    started = time.monotonic()
    answer = _ready(hung)
    assert time.monotonic() - started < 3
    assert answer.status_code == 503
    body = answer.json()
    assert body["status"] == "down" and body["checks"]["redis"]["ok"] is False
    assert body["checks"]["dispatcher"]["ok"] is False


# --- X-Request-Id --------------------------------------------------------------------------


def _raw_get(api: Api, path: str, request_id: bytes) -> tuple[int, str | None, bytes]:
    """GET with an X-Request-Id of any bytes (requests would refuse some)."""
    where = urlsplit(api.base)
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=10)
    try:
        conn.putrequest("GET", path)
        conn.putheader("X-Request-Id", request_id)
        conn.endheaders()
        answer = conn.getresponse()
        return answer.status, answer.getheader("X-Request-Id"), answer.read()
    finally:
        conn.close()


def test_a_good_request_id_is_echoed(api: Api):
    for sent in ("abc-123", "x" * 128, "!~{}[]", "7"):
        answer = api.get("/livez", token=None, headers={"X-Request-Id": sent})
        assert answer.headers["X-Request-Id"] == sent


def test_every_response_gets_a_request_id_of_its_own(api: Api):
    ids = {api.get("/livez", token=None).headers["X-Request-Id"] for _ in range(3)}
    assert len(ids) == 3 and all(len(i) == 32 and int(i, 16) >= 0 for i in ids)


@pytest.mark.parametrize(
    "sent",
    [b"x" * 129, "h\u00e9llo".encode(), b"a\x01b", b"a b", b"tab\there", b"\x7f", b""],
    ids=["too-long", "non-ascii", "control", "space", "tab", "del", "empty"],
)
def test_a_bad_request_id_is_replaced(api: Api, sent: bytes):
    status, answered, _ = _raw_get(api, "/livez", sent)
    assert status == 200
    assert answered is not None and answered.encode() != sent
    assert len(answered) == 32 and int(answered, 16) >= 0


def test_problem_bodies_carry_the_request_id(api: Api):
    missing = api.get("/v1/tables/nope", headers={"X-Request-Id": "trace-404"})
    assert missing.status_code == 404
    assert missing.headers["Content-Type"] == "application/problem+json"
    assert missing.json()["request_id"] == "trace-404" == missing.headers["X-Request-Id"]
    unauthorized = api.get("/v1/tables", token=None)
    assert unauthorized.status_code == 401
    assert unauthorized.json()["request_id"] == unauthorized.headers["X-Request-Id"]
    status, answered, body = _raw_get(api, "/v1/tables/nope", b"bad id")
    assert status == 401 and json.loads(body)["request_id"] == answered


def test_the_log_lines_a_request_causes_carry_its_id(
    serve_with: Callable[..., Api], capsys: pytest.CaptureFixture[str]
):
    dead = serve_with(redis_url=f"redis://127.0.0.1:{free_port()}/0")
    handler = StderrLines()
    logging.getLogger("guts").addHandler(handler)
    try:
        capsys.readouterr()
        answer = dead.get("/v1/tables/t1", headers={"X-Request-Id": "trace-me"})
        assert answer.status_code == 503
        assert answer.json()["request_id"] == "trace-me"
        lines = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line]
    finally:
        logging.getLogger("guts").removeHandler(handler)
    access = [line for line in lines if line["logger"] == "guts.access"]
    errors = [line for line in lines if line["level"] == "error"]
    assert [line["request_id"] for line in access] == ["trace-me"]
    assert errors and all(line["request_id"] == "trace-me" for line in errors), lines


# --- /metrics --------------------------------------------------------------------------------


def _samples(api: Api) -> Samples:
    """Every sample on /metrics, by name."""
    return samples(api.get("/metrics", token=None).text)


def _one(found: Samples, name: str, **labels: str) -> float:
    values = [value for have, value in found.get(name, []) if labels.items() <= have.items()]
    assert len(values) == 1, (name, labels, found.get(name))
    return values[0]


@pytest.mark.parametrize("kind", ["another type", "values that are not numbers"])
def test_vitals_that_do_not_read_back_neither_fail_metrics_nor_stop_the_clock(
    api: Api, dispatching: Dispatching, kind: str
):
    """They were a 500 on every scrape of /metrics, and the dispatcher's every tick that acted
    on a due table ended in an error (its lateness could not be counted)."""
    client = dispatching.client
    lateness, lag = "guts:vitals:due-lateness", "guts:vitals:archive-lag"
    for key in (lateness, lag):
        client.delete(key)
        if kind == "another type":
            client.rpush(key, "x")
        else:
            client.hset(key, mapping={"count": "\xff", "sum": "x", "events": "e", "at": "?"})
    scraped = api.get("/metrics", token=None)
    assert scraped.status_code == 200, scraped.text
    assert _ready(api).status_code in (200, 503)  # (it says what it could not read; no 500)
    dispatching.dispatcher()
    table = api.table("three-card", decision_timeout_s=1)
    for i in range(2):
        api.seat(table, f"p{i}")
    dealt = api.post(f"/v1/tables/{table}/deal")
    assert dealt.status_code == 201, dealt.text
    # The dispatcher closes the hand at its deadline; its lateness is counted afresh.
    counted = lambda: _samples(api).get("guts_due_lateness_seconds_count", [({}, 0)])  # noqa: E731
    eventually(lambda: counted()[0][1] >= 1, DEADLINE_S, "a deadline's lateness counted")
    hand = api.get(f"/v1/tables/{table}").json()["hand"]
    assert hand is None or hand.get("phase") != "declaring", hand
    dispatching.archiver.sweep()
    assert client.hget(lag, "events") is not None  # (the archiver's reading, afresh)


@pytest.mark.parametrize(
    "key", ["guts:{%tables}:created:default", "guts:{%due}:index", "guts:{%due}:versions"]
)
def test_a_shared_key_of_another_type_is_built_again_and_stops_no_dispatcher(
    api: Api, dispatching: Dispatching, key: str
):
    """A key every table shares (the table list, the due index) holding another type of value
    ended every dispatcher that met it (restarted, to meet it again: no deadline acted on),
    and the table list's was a 500 on every GET /v1/tables."""
    client = dispatching.client
    listed = api.table("three-card")
    client.delete(key)
    client.set(key, "written by hand")
    if "tables" in key:
        refused = api.get("/v1/tables")
        assert refused.status_code == 409, refused.text
        assert refused.json()["title"] == "Record Failed Verification"

    def dealt_table() -> str:  # (a hand whose deadline is 1 s away)
        table = api.table("three-card", decision_timeout_s=1)
        for i in range(2):
            api.seat(table, f"p{i}")
        dealt = api.post(f"/v1/tables/{table}/deal")
        assert dealt.status_code == 201, dealt.text  # (the due index's key: it was a 409)
        return table

    early = dealt_table()  # (its due is left out of the index, and indexed again below)
    stop = dispatching.dispatcher()
    eventually(
        lambda: client.type(key) in (b"zset", b"hash", b"none"), DEADLINE_S, f"{key} built again"
    )
    tables = [early, dealt_table()]
    # The dispatcher runs on: it closes both hands at their deadlines, and lists every table.
    for table in tables:
        hand = lambda t=table: api.get(f"/v1/tables/{t}").json()["hand"] or {}  # noqa: E731
        eventually(
            lambda h=hand: h().get("phase") != "declaring",
            DEADLINE_S,
            f"the hand at {table} closed",
        )
    page = eventually(lambda: api.get("/v1/tables").json(), DEADLINE_S, "the tables listed")
    assert {listed, *tables} <= {t["table_id"] for t in page["tables"]}
    assert not stop.is_set() and all(thread.is_alive() for thread in dispatching.threads)


def test_metrics_show_the_process_streams_lateness_lag_backlog_and_pools(
    serve_with: Callable[..., Api], dispatching: Dispatching
):
    api = serve_with()  # (a server of its own: the suite's may hold other tests' streams)
    dispatching.dispatcher()
    hook = api.post("/v1/webhooks", {"url": "http://127.0.0.1:9/h", "events": ["player_seated"]})
    assert hook.status_code == 201, hook.text
    table = api.table("three-card", decision_timeout_s=1)
    tokens = [api.seat(table, f"p{i}")["token"] for i in range(2)]
    follow_webhooks(api, table)  # two deliveries, pending (no worker delivers them here)
    dealt = api.post(f"/v1/tables/{table}/deal")
    assert dealt.status_code == 201, dealt.text
    dispatching.archiver.sweep()
    stream = requests.get(
        f"{api.base}/v1/tables/{table}/stream",
        headers={"Authorization": f"Bearer {tokens[0]}"},
        stream=True,
        timeout=10,
    )
    try:
        assert stream.status_code == 200
        # The dispatcher closes the hand at its deadline (1 s), counting how late it was.
        closed = lambda: _samples(api).get("guts_due_lateness_seconds_count", [({}, 0)])  # noqa: E731
        eventually(lambda: closed()[0][1] >= 1, DEADLINE_S, "a deadline's lateness counted")
        samples = _samples(api)
        assert _one(samples, "guts_open_streams") == 1
    finally:
        stream.close()
    count = _one(samples, "guts_due_lateness_seconds_count")
    assert count >= 1
    assert _one(samples, "guts_due_lateness_seconds_bucket", le="+Inf") == count
    assert 0 <= _one(samples, "guts_due_lateness_seconds_sum") < 10 * count
    assert _one(samples, "guts_archive_lag_events") >= 4  # what the sweep found behind
    assert _one(samples, "guts_webhook_backlog") == 2
    assert _one(samples, "guts_redis_pool_connections", state="in_use") >= 1  # (this request)
    assert _one(samples, "guts_redis_pool_connections", state="idle") >= 0
    in_use = _one(samples, "guts_postgres_pool_connections", state="in_use")
    assert 0 <= in_use <= 4
    assert _one(samples, "guts_postgres_pool_connections", state="idle") >= 0
    assert _one(samples, "process_resident_memory_bytes") > 1_000_000
    assert _one(samples, "process_cpu_seconds_total") > 0
    assert _one(samples, "process_open_fds") > 0
    assert "python_info" in samples
    eventually(
        lambda: _one(_samples(api), "guts_open_streams") == 0, DEADLINE_S, "the stream closed"
    )
