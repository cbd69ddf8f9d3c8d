"""Webhooks against a real local receiver: every event arrives, signed as the Standard
Webhooks specification says (checked by a verifier written from the specification), through
failures, timeouts and a lost attempt; redirects are not followed; a delivery whose retries
ran out is dead until redelivered; a deleted webhook gets nothing more."""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.server
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from rq import Queue
from rq.serializers import JSONSerializer

from service.projections.broken_tenants import BrokenTenants
from service.projections.webhooks import WEBHOOKS_QUEUE, Schedule, WebhookStore
from tests.apiclient import Api, follow_webhooks
from tests.waiting import holds_within
from workers.webhook_queue import queue_all

FAST = Schedule(first_retry_s=0.1, max_wait_s=0.4, retry_for_s=30.0, timeout_s=0.5)


class Receiver:
    """A local HTTP server that answers each POST with the next planned answer ("ok", "500",
    "slow": later than the attempt's timeout, "redirect", "trickle": its head a line at a
    time for 6 s), then "ok"; it keeps what came."""

    def __init__(self, plan: list[str]) -> None:
        self.plan = list(plan)
        self.received: list[tuple[dict[str, str], bytes, str]] = []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the library's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                answer = receiver.plan.pop(0) if receiver.plan else "ok"
                headers = {k.lower(): v for k, v in self.headers.items()}
                receiver.received.append((headers, body, answer))
                if answer == "slow":
                    time.sleep(1.0)
                if answer == "trickle":  # a header line every 0.2 s, for 6 s: no read times out
                    self.wfile.write(b"HTTP/1.1 204 No Content\r\n")
                    for _ in range(30):
                        self.wfile.write(b"X-Drip: 1\r\n")
                        self.wfile.flush()
                        time.sleep(0.2)
                status = {"ok": 204, "500": 500, "slow": 204, "redirect": 302, "trickle": 204}[
                    answer
                ]
                self.send_response(status)
                if answer == "redirect":
                    self.send_header("Location", f"http://127.0.0.1:{self.server.server_port}/else")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self) -> None:  # noqa: N802 - what a followed redirect would send
                receiver.received.append(({"path": self.path}, b"", "followed"))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook?token=t0ps3cret"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def accepted(self) -> list[tuple[dict[str, str], bytes]]:
        return [(h, b) for h, b, answer in self.received if answer == "ok"]


@pytest.fixture
def receiver() -> Iterator[Callable[[list[str]], Receiver]]:
    made: list[Receiver] = []

    def make(plan: list[str]) -> Receiver:
        made.append(Receiver(plan))
        return made[-1]

    yield make
    for r in made:
        r.close()


def verify_signature(secret: str, headers: dict[str, str], body: bytes) -> None:
    """The Standard Webhooks check, as a receiver would write it from the specification."""
    key = base64.b64decode(secret.split("_", 1)[1])
    msg_id, timestamp = headers["webhook-id"], headers["webhook-timestamp"]
    signed = f"{msg_id}.{timestamp}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    given = [s.split(",", 1) for s in headers["webhook-signature"].split(" ")]
    assert any(v == "v1" and hmac.compare_digest(sig, expected) for v, sig in given)
    assert abs(time.time() - int(timestamp)) < 300


def _drive(
    api: Api,
    store: WebhookStore,
    run_jobs: Callable[[], None],
    table: str,
    done: Callable[[], bool],
    schedule: Schedule = FAST,
    within_s: float = 20.0,
) -> None:
    """What the dispatchers and a worker do, in turns, until `done()`."""
    deadline = time.monotonic() + within_s
    while not done():
        assert time.monotonic() < deadline, "the deliveries did not settle in time"
        follow_webhooks(api, table)
        store.queue_due(schedule)
        run_jobs()
        time.sleep(0.05)


def _register(api: Api, url: str, events: list[str]) -> dict[str, Any]:
    made = api.post("/v1/webhooks", {"url": url, "events": events})
    assert made.status_code == 201, made.text
    return dict(made.json())


def _deliveries(api: Api, webhook_id: str) -> list[dict[str, Any]]:
    return list(api.get(f"/v1/webhooks/{webhook_id}/deliveries").json()["deliveries"])


def test_every_event_arrives_signed_through_failures_and_a_timeout(
    api: Api, redis_client, run_jobs, receiver
):
    target = receiver(["500", "slow", "500"])
    hook = _register(api, target.url, ["player_seated", "chips_added"])
    assert hook["secret"].startswith("whsec_")
    table = api.table("three-card")
    for player in ("ann", "bob"):
        api.seat(table, player)
    api.post(f"/v1/tables/{table}/players/0/chips", {"amount": 5})
    store = WebhookStore(redis_client)

    def settled() -> bool:
        found = _deliveries(api, hook["webhook_id"])
        return len(found) == 3 and all(d["status"] == "delivered" for d in found)

    _drive(api, store, run_jobs, table, settled)
    found = _deliveries(api, hook["webhook_id"])
    assert sum(d["attempts"] for d in found) >= 3 + 3  # three failed attempts, three good
    accepted = target.accepted()
    ids = [h["webhook-id"] for h, _ in accepted]
    assert sorted(set(ids)) == sorted(d["delivery_id"] for d in found)  # each one arrived
    for headers, body in accepted:
        verify_signature(hook["secret"], headers, body)
    # every attempt of a delivery carried its one webhook-id
    tried = {h["webhook-id"] for h, _, _ in target.received}
    assert tried == set(ids)
    bodies = sorted((json.loads(b) for _, b in accepted), key=lambda b: b["data"]["version"])
    assert [b["type"] for b in bodies][-3:] == ["player_seated", "player_seated", "chips_added"]
    assert all(b["data"]["table_id"] == table and b["data"]["tenant"] == "default" for b in bodies)
    versions = [b["data"]["version"] for b in bodies]
    assert versions == sorted(set(versions))
    assert "t0ps3cret" not in json.dumps(found)  # the URL's token is in no recorded error
    path = f"/v1/webhooks/{hook['webhook_id']}/deliveries"
    first = api.get(f"{path}?limit=2").json()
    rest = api.get(f"{path}?limit=2&after={first['next_after']}").json()
    paged = [d["delivery_id"] for d in first["deliveries"] + rest["deliveries"]]
    assert paged == [d["delivery_id"] for d in found]


def test_a_redirect_is_not_followed(api: Api, redis_client, run_jobs, receiver):
    target = receiver(["redirect"] * 50)
    hook = _register(api, target.url, ["player_seated"])
    table = api.table("three-card")
    api.seat(table, "ann")
    store = WebhookStore(redis_client)
    _drive(
        api,
        store,
        run_jobs,
        table,
        lambda: (
            bool(_deliveries(api, hook["webhook_id"]))
            and _deliveries(api, hook["webhook_id"])[0]["attempts"] >= 2
        ),
    )
    (delivery,) = _deliveries(api, hook["webhook_id"])
    assert delivery["status"] == "pending" and delivery["last_status"] == 302
    assert "redirect" in delivery["last_error"]
    answers = [answer for _, _, answer in target.received]
    assert len(answers) >= 2 and set(answers) == {"redirect"}  # /else was never asked for


def test_retries_run_out_into_dead_and_a_redelivery_succeeds(
    api: Api, redis_client, run_jobs, receiver
):
    target = receiver(["500"] * 5)
    hook = _register(api, target.url, ["player_seated"])
    table = api.table("three-card")
    api.seat(table, "ann")
    store = WebhookStore(redis_client)
    short = Schedule(first_retry_s=0.1, max_wait_s=0.1, retry_for_s=0.3, timeout_s=0.5)

    def status() -> str:
        found = _deliveries(api, hook["webhook_id"])
        return str(found[0]["status"]) if found else "none"

    _drive(api, store, run_jobs, table, lambda: status() == "dead", short)
    (delivery,) = _deliveries(api, hook["webhook_id"])
    assert delivery["attempts"] >= 2 and delivery["next_attempt_at"] is None
    again = api.post(
        f"/v1/webhooks/{hook['webhook_id']}/deliveries/{delivery['delivery_id']}/redeliver"
    )
    assert again.status_code == 202 and again.json()["status"] == "pending"
    target.plan = []  # the receiver is back
    _drive(api, store, run_jobs, table, lambda: status() == "delivered")
    assert target.accepted()[-1][0]["webhook-id"] == delivery["delivery_id"]


def test_a_receiver_at_a_private_address_gets_nothing_unless_allowed(
    api: Api, redis_client, run_jobs, receiver, monkeypatch
):
    """A worker without GUTS_ALLOW_PRIVATE_URLS makes no attempt to a receiver on 127.0.0.1
    (it sends nothing, and records the attempt as failed, saying why); allowed, it arrives."""
    target = receiver([])
    hook = _register(api, target.url, ["player_seated"])
    table = api.table("three-card")
    api.seat(table, "ann")
    store = WebhookStore(redis_client)
    monkeypatch.setenv("GUTS_ALLOW_PRIVATE_URLS", "")  # (the jobs read the worker's settings)

    def attempted() -> bool:
        found = _deliveries(api, hook["webhook_id"])
        return bool(found) and found[0]["attempts"] >= 2

    _drive(api, store, run_jobs, table, attempted)
    (delivery,) = _deliveries(api, hook["webhook_id"])
    assert delivery["status"] == "pending" and delivery["last_status"] is None
    assert delivery["last_error"] == "PrivateAddress" and target.received == []
    monkeypatch.setenv("GUTS_ALLOW_PRIVATE_URLS", "1")
    _drive(api, store, run_jobs, table, lambda: bool(target.received))
    assert _deliveries(api, hook["webhook_id"])[0]["status"] == "delivered"


def test_a_slow_receivers_retries_wait_behind_every_first_attempt(
    api: Api, redis_client, run_jobs, receiver
):
    """A receiver that holds each attempt for the whole timeout (0.5 s here, 10 s by default)
    has a backlog of retries; the worker takes them only when no first attempt waits, so a
    new event for another receiver is delivered before them, whenever they were queued."""
    slow = receiver(["slow"] * 100)
    hook = _register(api, slow.url, ["player_seated"])
    table = api.table("three-card", seats=10)
    for player in range(6):
        api.seat(table, f"p{player}")
    follow_webhooks(api, table)
    store = WebhookStore(redis_client)
    assert store.queue_due(FAST) == 6
    run_jobs()  # six first attempts, each held 0.5 s: all failed, retried after 0.1 s
    assert [d["last_error"] for d in _deliveries(api, hook["webhook_id"])] == ["TimeoutError"] * 6
    retried, queued = time.monotonic() + 10, 0  # (a bound on a busy machine)
    while (queued := queued + store.queue_due(FAST)) < 6 and time.monotonic() < retried:
        time.sleep(0.02)
    assert queued == 6  # the retries, queued before anything else
    before, answers = _another_receivers_event(api, store, run_jobs, receiver, slow, table)
    assert before == 0 and len(answers) == 8, answers  # (then the seventh event, the retries)


def _another_receivers_event(
    api: Api, store: WebhookStore, run_jobs: Callable[[], None], receiver: Any, slow: Receiver,
    table: str,
) -> tuple[int, list[str]]:  # fmt: skip
    """A new event for another receiver, once `slow`'s attempts are queued (and one for
    `slow`): where the other's attempt came among those the worker made (0: first), and
    their answers in the order made."""
    fast = receiver([])
    other = _register(api, fast.url, ["player_seated"])
    order: list[tuple[dict[str, str], bytes, str]] = []
    slow.received = fast.received = order  # (one list: the order the worker made them in)
    api.seat(table, "late")
    follow_webhooks(api, table)
    assert store.queue_due(FAST) >= 2  # the other's first attempt, the slow one's new event
    run_jobs()
    (new,) = _deliveries(api, other["webhook_id"])
    assert new["status"] == "delivered"
    made = [h["webhook-id"] for h, _, _ in order]
    return made.index(new["delivery_id"]), [answer for _, _, answer in order]


def test_a_failing_receivers_new_events_wait_behind_every_other_receivers(
    api: Api, redis_client, run_jobs, receiver
):
    """Once a receiver's last attempt failed, even its new events' first attempts wait with its
    retries, behind every other receiver's attempts; once one of its attempts succeeds, its
    new events are first attempts again."""
    slow = receiver(["slow"] * 100)
    hook = _register(api, slow.url, ["player_seated"])
    table = api.table("three-card", seats=10)
    api.seat(table, "p0")
    follow_webhooks(api, table)
    store = WebhookStore(redis_client)
    assert store.queue_due(FAST) == 1
    run_jobs()  # held 0.5 s: failed
    assert store.failing("default") == {hook["webhook_id"]}
    for player in range(1, 7):
        api.seat(table, f"p{player}")
    follow_webhooks(api, table)
    assert store.queue_due(FAST) >= 6  # six new events (and maybe the first one's retry)
    before, answers = _another_receivers_event(api, store, run_jobs, receiver, slow, table)
    assert before == 0, answers
    slow.plan = []  # (it answers again)
    _drive(api, store, run_jobs, table, lambda: not store.failing("default"))


def test_an_attempt_lost_with_its_worker_is_made_again(api: Api, redis_client, run_jobs, receiver):
    target = receiver([])
    hook = _register(api, target.url, ["player_seated"])
    table = api.table("three-card")
    api.seat(table, "ann")
    follow_webhooks(api, table)  # the dispatcher derived the delivery, then died
    store = WebhookStore(redis_client)  # another dispatcher
    assert store.queue_due(FAST, lease_s=0.2) == 1
    Queue(WEBHOOKS_QUEUE, connection=redis_client, serializer=JSONSerializer).empty()  # lost
    assert store.queue_due(FAST, lease_s=0.2) == 0  # leased: not yet
    queue_due = lambda: store.queue_due(FAST, lease_s=0.2)  # noqa: E731
    queued = holds_within(queue_due, 10, every_s=0.02)  # (a bound on a busy machine)
    assert queued == 1  # the lease ran out: queued again (once)
    run_jobs()
    (delivery,) = _deliveries(api, hook["webhook_id"])
    assert delivery["status"] == "delivered" and len(target.accepted()) == 1


def test_an_attempt_a_receiver_drags_out_ends_at_its_timeout_and_is_made_again(
    api: Api, redis_client, run_jobs, receiver
):
    """Every read of the answer comes within the attempt's timeout (0.5 s), and the head never
    ends (6 s): the attempt ends at its timeout all the same (it held the worker until RQ ended
    the job, 3 timeouts), a failed attempt recorded as such, made again, and delivered."""
    target = receiver(["trickle"])
    hook = _register(api, target.url, ["player_seated"])
    table = api.table("three-card")
    api.seat(table, "ann")
    follow_webhooks(api, table)
    store = WebhookStore(redis_client)
    assert store.queue_due(FAST, lease_s=0.2) == 1
    run_jobs()
    (delivery,) = _deliveries(api, hook["webhook_id"])
    assert delivery["status"] == "pending" and delivery["attempts"] == 1, delivery
    assert delivery["last_error"] == "TimeoutError", delivery
    queue_due = lambda: store.queue_due(FAST, lease_s=0.2)  # noqa: E731
    queued = holds_within(queue_due, 10, every_s=0.02)  # (a bound on a busy machine)
    assert queued == 1
    run_jobs()
    (delivery,) = _deliveries(api, hook["webhook_id"])
    assert delivery["status"] == "delivered" and len(target.accepted()) == 1


def test_an_attempt_still_queued_when_its_lease_runs_out_is_not_queued_twice(
    api: Api, redis_client, run_jobs, receiver
):
    target = receiver([])
    hook = _register(api, target.url, ["player_seated"])
    table = api.table("three-card")
    api.seat(table, "ann")
    follow_webhooks(api, table)
    store = WebhookStore(redis_client)
    queue = Queue(WEBHOOKS_QUEUE, connection=redis_client, serializer=JSONSerializer)
    assert store.queue_due(FAST, lease_s=0.2) == 1
    lease_over = time.time() + 0.3
    while time.time() < lease_over:  # the workers are behind: the job waits past its lease
        time.sleep(0.05)
    assert store.queue_due(FAST, lease_s=0.2) == 0
    assert queue.count == 1
    run_jobs()
    (delivery,) = _deliveries(api, hook["webhook_id"])
    assert delivery["status"] == "delivered" and delivery["attempts"] == 1
    assert len(target.accepted()) == 1


def test_a_deleted_webhook_gets_nothing_more(api: Api, redis_client, run_jobs, receiver):
    target = receiver([])
    hook = _register(api, target.url, ["player_seated"])
    table = api.table("three-card")
    api.seat(table, "ann")
    follow_webhooks(api, table)
    assert api.delete(f"/v1/webhooks/{hook['webhook_id']}").status_code == 204
    store = WebhookStore(redis_client)
    store.queue_due(FAST)
    run_jobs()
    api.seat(table, "bob")
    follow_webhooks(api, table)
    store.queue_due(FAST)
    run_jobs()
    assert target.received == []
    assert api.get(f"/v1/webhooks/{hook['webhook_id']}/deliveries").status_code == 404


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.com/x",
        "/relative",
        "http://user:pw@example.com/x",
        "javascript:x",
        "http://[::1/x",  # (a bracket not closed: Python's URL parser raises; it was a 500)
        "http://example.com:99999/x",
        "http://example.com:http/x",
        "http://example.com/a b",
        "http://example.com/\r\nX-Injected: 1",
    ],
)
def test_urls_that_are_not_plain_http_are_422(api: Api, url: str):
    refused = api.post("/v1/webhooks", {"url": url, "events": ["hand_finished"]})
    assert refused.status_code == 422 and "url" in refused.json()["errors"]


PRIVATE_HOSTS = [
    "127.0.0.1:8080",
    "localhost",
    "hooks.localhost",
    "10.0.0.7",
    "192.168.1.20",
    "169.254.169.254",
    "[::1]",
    "[fd00::1]",
    "[::ffff:127.0.0.1]",
]


@pytest.mark.parametrize("host", PRIVATE_HOSTS)
def test_a_url_naming_a_private_host_is_422_unless_allowed(serve_with: Any, host: str):
    """Without GUTS_ALLOW_PRIVATE_URLS a webhook or a wallet at a host that is plainly not
    public is refused at once (a name is left to the check of each call's connection);
    with it (the tests' servers), both are taken."""
    denied, allowed = serve_with(allow_private_urls=False), serve_with()
    url = f"http://{host}/hook"
    for path, method, body in (
        ("/v1/webhooks", "POST", {"url": url, "events": ["hand_finished"]}),
        ("/v1/wallet", "PUT", {"url": url, "currency": "EUR", "chip_value_minor": 100}),
    ):
        refused = denied.call(method, path, body)
        assert refused.status_code == 422, refused.text
        assert "public host" in refused.json()["errors"]["url"][0], refused.text
        taken = allowed.call(method, path, body)
        assert taken.status_code in (200, 201), taken.text
    named = denied.post(
        "/v1/webhooks", {"url": "https://hooks.casino.example/h", "events": ["hand_finished"]}
    )
    assert named.status_code == 201, named.text


def test_unknown_events_are_422_and_the_secret_is_shown_once(api: Api):
    refused = api.post("/v1/webhooks", {"url": "http://127.0.0.1:9/", "events": ["everything"]})
    assert refused.status_code == 422 and "events" in refused.json()["errors"]
    made = _register(api, "http://127.0.0.1:9/", ["table_ended"])
    listed = api.get("/v1/webhooks").json()["webhooks"]
    assert [h["webhook_id"] for h in listed] == [made["webhook_id"]]
    assert "secret" not in listed[0] and made["secret"] not in json.dumps(listed)


def test_a_tenant_whose_keys_break_the_pass_holds_up_no_other_tenants_deliveries(
    api: Api, redis_client, receiver, caplog: pytest.LogCaptureFixture
):
    """One tenant's key of the wrong type (written outside the service) once failed every
    pass of the webhook duty, every tenant's deliveries with it: the pass goes tenant by
    tenant, and names the broken one once a minute."""
    target = receiver([])
    _register(api, target.url, ["player_seated"])
    table = api.table("three-card")
    api.seat(table, "ann")
    follow_webhooks(api, table)
    store = WebhookStore(redis_client)
    redis_client.sadd(store.tenants_key, "aaa-broken")  # (looked at before "default")
    redis_client.set("guts:{%hooks:aaa-broken}:due", "not a sorted set")
    with pytest.raises(redis.ResponseError):  # (what one pass over every tenant meets)
        store.queue_due(FAST)
    broken = BrokenTenants("webhooks", logging.getLogger("guts.dispatcher"))
    with caplog.at_level(logging.ERROR, logger="guts.dispatcher"):
        assert queue_all(store, FAST, broken=broken) == 1
        assert queue_all(store, FAST, broken=broken) == 0  # (claimed: leased)
    said = [r.getMessage() for r in caplog.records if "aaa-broken" in r.getMessage()]
    assert len(said) == 1 and "cannot be served" in said[0], said  # once, not per pass
