"""A Redis that answers and refuses every write: at its memory limit (``maxmemory`` with the
``noeviction`` policy docs/operations.md asks for: ``OOM``) or unable to persist (``MISCONF``).

Each used to stop the clock and set tables aside: a command was a 409 "quarantined" (the append
took the refused write of its events for a corrupt log) or a 500; every dispatcher exited on
its heartbeat's write (restarted, to exit again), so no deadline was acted on; and /readyz said
ok. Now: each command is a 503 that writes nothing, reads are served, /readyz fails its Redis
check, the dispatcher waits, and once Redis takes writes the deadline is acted on, the same
requests succeed and no table was set aside.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from service.config import Settings
from service.processes.redis_server import find_redis_server, free_port
from tests.apiclient import Api
from tests.waiting import eventually
from workers.clock import build_dispatcher

KEY = {"Idempotency-Key": "made-while-redis-refused"}
WITHIN_S = 15.0  # a bound on a busy machine, not a timing


class RefusingRedis:
    """A redis-server of the test's own that can be made to refuse writes as `why` says."""

    def __init__(self, why: str, where: Path) -> None:
        self.why, self.where = why, where
        port = free_port()
        self.url = f"redis://127.0.0.1:{port}/0"
        saving = "3600 1" if why == "cannot persist" else ""  # (MISCONF needs save points)
        command = [find_redis_server(), "--port", str(port), "--bind", "127.0.0.1",
                   "--dir", str(where), "--save", saving, "--enable-protected-configs", "yes",
                   "--maxmemory-policy", "noeviction"]  # fmt: skip
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
        self.client = redis.Redis.from_url(self.url)
        eventually(
            self.client.ping,
            WITHIN_S,
            "the test's redis-server answers",
            tolerate=(redis.ConnectionError,),
        )

    def refuse(self) -> None:
        if self.why == "out of memory":
            self.client.config_set("maxmemory", "1")
        else:  # a snapshot that cannot be written: writes are refused until one is
            self.client.config_set("dir", "/proc/self")
            self._snapshot("err")

    def accept(self) -> None:
        if self.why == "out of memory":
            self.client.config_set("maxmemory", "0")
        else:
            self.client.config_set("dir", str(self.where))
            self._snapshot("ok")

    def _snapshot(self, status: str) -> None:
        eventually(
            lambda: not self.client.info("persistence")["rdb_bgsave_in_progress"],
            WITHIN_S,
            "no snapshot under way",
        )
        self.client.bgsave()
        eventually(
            lambda: (
                self.client.info("persistence")["rdb_last_bgsave_status"] == status
                and not self.client.info("persistence")["rdb_bgsave_in_progress"]
            ),
            WITHIN_S,
            f"a snapshot that ends {status}",
        )

    def stop(self) -> None:
        self.client.close()
        self.process.kill()
        self.process.wait(10)


@pytest.fixture(params=["out of memory", "cannot persist"])
def refusing(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RefusingRedis]:
    server = RefusingRedis(request.param, tmp_path)
    try:
        yield server
    finally:
        server.stop()


def _refused(response: Any) -> None:
    assert response.status_code == 503, (response.status_code, response.text[:300])
    assert response.headers["Content-Type"] == "application/problem+json"
    problem = response.json()
    assert problem["title"] == "Unavailable" and problem["type"].endswith("/unavailable")
    assert "refuses writes" in problem["detail"] and "nothing was written" in problem["detail"]


def test_a_redis_refusing_writes_is_waited_out_and_sets_no_table_aside(
    refusing: RefusingRedis,
    serve_with: Callable[..., Api],
    caplog: pytest.LogCaptureFixture,
) -> None:
    api = serve_with(redis_url=refusing.url, database_url=None)
    dealt = api.table("three-card", decision_timeout_s=1)
    tokens = [api.seat(dealt, f"p{i}")["token"] for i in range(2)]
    waiting = api.table("three-card")
    for i in range(2):
        api.seat(waiting, f"w{i}")
    caplog.set_level("WARNING", logger="guts.dispatcher")
    settings = Settings(redis_url=refusing.url)
    dispatcher = build_dispatcher(settings, redis.Redis.from_url(refusing.url), None)
    stop = threading.Event()
    thread = threading.Thread(target=dispatcher.run, args=(stop,), daemon=True)
    thread.start()
    try:
        assert api.post(f"/v1/tables/{dealt}/deal").status_code == 201
        before = {t: api.get(f"/v1/tables/{t}").json()["version"] for t in (dealt, waiting)}
        refusing.refuse()

        _refused(api.post("/v1/tables", {"preset": "three-card"}, headers=KEY))
        _refused(api.post(f"/v1/tables/{waiting}/players", {"player_id": "x", "buy_in": 10}))
        _refused(api.post(f"/v1/tables/{waiting}/deal"))
        _refused(api.post(f"/v1/tables/{dealt}/declare", {"decision": "in"}, token=tokens[0]))
        hook = {"url": "http://127.0.0.1:9/h", "events": ["hand_finished"]}
        _refused(api.post("/v1/webhooks", hook))
        ready = api.get("/readyz", token=None)
        assert ready.status_code == 503, ready.text
        check = ready.json()["checks"]["redis"]
        said = "OutOfMemoryError" if refusing.why == "out of memory" else "MISCONF"
        assert not check["ok"] and said in check["error"], check
        # The dispatcher meets the refusal (its heartbeat, the deadline) and waits.
        eventually(
            lambda: any("Redis cannot serve" in r.getMessage() for r in caplog.records),
            WITHIN_S,
            "the dispatcher waits for Redis",
        )
        assert thread.is_alive()
        for table, version in before.items():  # read as they were: nothing written
            view = api.get(f"/v1/tables/{table}")
            assert view.status_code == 200 and view.json()["version"] == version, view.text
        assert dispatcher.index.quarantined() == {}

        refusing.accept()
        # The deadline that fell due meanwhile is acted on; the same requests now succeed.
        eventually(
            lambda: (
                api.get(f"/v1/tables/{dealt}").json()["hand"] is None
                or api.get(f"/v1/tables/{dealt}").json()["hand"]["phase"] != "declaring"
            ),
            WITHIN_S,
            "the deadline acted on",
        )
        made = api.post("/v1/tables", {"preset": "three-card"}, headers=KEY)
        assert made.status_code == 201, made.text
        assert api.post(f"/v1/tables/{waiting}/deal").status_code == 201
        eventually(
            lambda: api.get("/readyz", token=None).status_code == 200, WITHIN_S, "ready again"
        )
        assert thread.is_alive() and dispatcher.index.quarantined() == {}
        assert api.get("/healthz", token=None).json()["quarantined"] == []
    finally:
        stop.set()
        thread.join(10)


def test_a_redis_busy_with_someones_script_is_waited_out(
    serve_with: Callable[..., Api], caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    """A script run by hand past ``busy-reply-threshold`` makes Redis answer ``BUSY`` to every
    command until it ends: that was a 500 and a dispatcher that exited (an unexpected error);
    it is Redis unavailable for now (503), waited out, and then everything works again."""
    server = RefusingRedis("busy", tmp_path)
    try:
        api = serve_with(redis_url=server.url, database_url=None)
        dealt = api.table("three-card", decision_timeout_s=1)
        for i in range(2):
            api.seat(dealt, f"p{i}")
        caplog.set_level("WARNING", logger="guts.dispatcher")
        client = redis.Redis.from_url(server.url)
        dispatcher = build_dispatcher(Settings(redis_url=server.url), client, None)
        stop = threading.Event()
        thread = threading.Thread(target=dispatcher.run, args=(stop,), daemon=True)
        thread.start()
        assert api.post(f"/v1/tables/{dealt}/deal").status_code == 201
        server.client.config_set("busy-reply-threshold", "100")
        looping = redis.Redis.from_url(server.url)  # (its own connection: it waits for ever)
        script = threading.Thread(
            target=lambda: _killed(looping, "local n = 0 while true do n = n + 1 end"),
            daemon=True,
        )
        script.start()
        busy = redis.Redis.from_url(server.url)
        eventually(lambda: _is_busy(busy), WITHIN_S, "Redis answers BUSY")
        answer = api.post("/v1/tables", {"preset": "three-card"}, headers=KEY)
        assert answer.status_code == 503, answer.text
        assert answer.json()["title"] == "Unavailable"
        eventually(
            lambda: any("Redis cannot serve" in r.getMessage() for r in caplog.records),
            WITHIN_S,
            "the dispatcher waits for Redis",
        )
        assert thread.is_alive()
        busy.script_kill()
        script.join(10)

        def acted_on() -> bool:
            answer = api.get(f"/v1/tables/{dealt}")
            if answer.status_code == 503:  # (Redis unavailable for now: one CI run's first
                return False  # request after the kill; waited out like any other)
            assert answer.status_code == 200, answer.text
            return bool((answer.json()["hand"] or {}).get("phase") != "declaring")

        eventually(acted_on, WITHIN_S, "the deadline acted on")
        assert api.post("/v1/tables", {"preset": "three-card"}, headers=KEY).status_code == 201
        assert thread.is_alive() and dispatcher.index.quarantined() == {}
    finally:
        stop.set()
        thread.join(10)
        server.stop()


def _killed(client: redis.Redis, script: str) -> None:
    """Run `script` until it is killed ("Script killed by user"; or its client's timeout)."""
    with contextlib.suppress(redis.RedisError):
        client.eval(script, 0)


def _is_busy(client: redis.Redis) -> bool:
    try:
        client.ping()
    except redis.ResponseError as error:
        return str(error).startswith("BUSY")
    return False
