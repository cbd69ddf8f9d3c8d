"""The chaos run's clients: threads playing hands on many tables through both API nodes, every
command with an `Idempotency-Key` and retried with the same key (and body) on 5xx, 429 and
connection errors until it has a definite answer; the history of every command (its key, what
was sent and what was answered) and of every attempt (when, which table, whether the service
answered), for the checker and for the unavailability figures."""

from __future__ import annotations

import itertools
import random
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import requests

from tests.chaos.topology import OPERATOR_KEY

RETRY_FOR_S = 90.0
"""How long one command is retried before the client gives up on it (its outcome unknown)."""
TIMEOUT_S = 10.0
RETRY_S = (0.05, 0.25)
"""A command's retries: the first 50 ms after a failed attempt, the wait doubling up to 250 ms
(not the 503's `Retry-After`, whole seconds): the unavailability measured is the service's,
give or take a quarter of a second, not the client's own waits (a cap of 1 s made up to a
second of each failover's figure)."""
DEADLINE_RULES = {"decision_timeout_s": 1, "auto_resolve": True}
"""Deadline tables: a seat that does not declare is out after 1 s, and the table resolves by
itself: the dispatchers act there."""
BUY_IN, TOP_UP = 200, 100


@dataclass
class Record:
    """One command, from its first attempt to its definite answer (`status` None: the client
    gave up, its outcome unknown)."""

    key: str
    table: str
    command: str
    path: str
    body: dict[str, Any] | None
    method: str = "POST"
    sent: float = 0.0
    answered: float | None = None
    status: int | None = None
    answer: dict[str, Any] = field(default_factory=dict)
    attempts: int = 0
    replayed: bool = False

    @property
    def acknowledged(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


class Halted(Exception):
    """The run was abandoned (SIGTERM, an error): a client stops where it is."""


@dataclass
class History:
    """Every command and every attempt, appended from many threads."""

    records: list[Record] = field(default_factory=list)
    attempts: list[tuple[float, float, str, bool, bool]] = field(default_factory=list)
    """(started, ended, table, answered, a command) of every attempt: of a command, or of a
    read of its table's state (not a command)."""
    server_errors: list[str] = field(default_factory=list)
    """Every 500 answered (retried: never acceptable), as "METHOD path: detail"."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, record: Record) -> None:
        with self.lock:
            self.records.append(record)

    def attempt(self, started: float, table: str, answered: bool, command: bool = True) -> None:
        with self.lock:
            self.attempts.append((started, time.monotonic(), table, answered, command))


class Client:
    """Sends commands to the API nodes in turn, retrying each with its key until answered."""

    def __init__(self, bases: list[str], history: History, halt: threading.Event) -> None:
        self.bases = bases
        self.history = history
        self.halt = halt  # set when the run is abandoned: every send and read raises Halted
        self.session = requests.Session()
        self.turn = itertools.cycle(range(len(bases)))

    def send(self, record: Record, token: str = OPERATOR_KEY) -> Record:
        """Send `record`'s command until it has a definite answer (or RETRY_FOR_S passed)."""
        headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": record.key}
        record.sent = record.sent or time.monotonic()
        self.history.add(record)
        wait = RETRY_S[0]
        while time.monotonic() - record.sent < RETRY_FOR_S:
            self._go_on()
            record.attempts += 1
            began = time.monotonic()
            base = self.bases[next(self.turn)]
            try:
                response = self.session.request(
                    record.method,
                    base + record.path,
                    json=record.body,
                    headers=headers,
                    timeout=TIMEOUT_S,
                )
            except requests.RequestException:
                response = None
            if response is not None and response.status_code < 500 and response.status_code != 429:
                self.history.attempt(began, record.table, True)
                record.status, record.answered = response.status_code, time.monotonic()
                record.answer = _json(response)
                record.replayed = response.headers.get("Idempotent-Replayed") == "true"
                return record
            self.history.attempt(began, record.table, False)
            if response is not None and response.status_code == 500:
                detail = _json(response).get("detail") or response.text[:200]
                with self.history.lock:
                    self.history.server_errors.append(f"{record.method} {record.path}: {detail}")
            self._go_on(wait)
            wait = min(wait * 2, RETRY_S[1])
        return record

    def read(self, path: str, table: str) -> dict[str, Any] | None:
        """A GET of `table`'s `path`, retried like a command for a while (each attempt in the
        history); its body (None if never answered)."""
        started = time.monotonic()
        while time.monotonic() - started < RETRY_FOR_S:
            self._go_on()
            began = time.monotonic()
            try:
                base = self.bases[next(self.turn)]
                response = self.session.get(
                    base + path,
                    headers={"Authorization": f"Bearer {OPERATOR_KEY}"},
                    timeout=TIMEOUT_S,
                )
                if response.status_code == 200:
                    self.history.attempt(began, table, True, command=False)
                    return _json(response)
            except requests.RequestException:
                pass
            self.history.attempt(began, table, False, command=False)
            self._go_on(0.2)
        return None

    def _go_on(self, after_s: float = 0.0) -> None:
        """Wait `after_s`; Halted at once if the run is abandoned meanwhile."""
        if self.halt.wait(after_s):
            raise Halted()


def _json(response: requests.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


class TablePlayer:
    """Plays one table from its current state (read before each step), so a lost or refused
    command never leaves it stuck: seats, hands (deal, declare, resolve), top-ups, leaves."""

    def __init__(self, client: Client, table: str, deadlines: bool, rng: random.Random) -> None:
        self.client, self.table, self.deadlines, self.rng = client, table, deadlines, rng
        self.tokens: dict[int, str] = {}
        self.players = itertools.count()
        self.skipping: tuple[int, set[int]] = (0, set())  # (hand, seats left to the deadline)

    def command(
        self,
        name: str,
        path: str,
        body: Any = None,
        method: str = "POST",
        token: str = OPERATOR_KEY,
    ) -> Record:
        record = Record(uuid.uuid4().hex, self.table, name, path, body, method)
        return self.client.send(record, token)

    def create(self) -> bool:
        rules = {"preset": "three-card", "table_id": self.table, "ante": 1}
        if self.deadlines:
            rules["rules"] = DEADLINE_RULES  # type: ignore[assignment]
        if self.command("create", "/v1/tables", rules).status not in (200, 201):
            return False
        for _ in range(3):
            self.seat()
        return True

    def seat(self) -> None:
        body = {"player_id": f"{self.table}-p{next(self.players)}", "buy_in": BUY_IN}
        done = self.command("seat", f"/v1/tables/{self.table}/players", body)
        if done.acknowledged:
            self.tokens[int(done.answer["seat"])] = str(done.answer["token"])

    def step(self, finishing: bool) -> bool:
        """One thing done on the table; False once there is nothing to do (when finishing: no
        hand in play)."""
        view = self.client.read(f"/v1/tables/{self.table}", self.table)
        if view is None:
            return not finishing
        hand = view.get("hand")
        if hand is None:
            if finishing:
                return False
            self.between_hands(view)
        elif hand["phase"] == "declaring":
            self.declare(hand)
        elif hand["phase"] == "showdown" and not self.deadlines:
            self.command("resolve", f"/v1/tables/{self.table}/resolve", {})
        else:
            time.sleep(0.1)  # the dispatchers' turn (a deadline, an automatic resolve)
        return True

    def between_hands(self, view: dict[str, Any]) -> None:
        seats = {s["seat"]: s for s in view["seats"] if s["status"] != "left"}
        for seat, state in seats.items():
            if state["stack"] < 3 * TOP_UP // 2 or self.rng.random() < 0.05:
                self.command(
                    "top_up", f"/v1/tables/{self.table}/players/{seat}/chips", {"amount": TOP_UP}
                )
        if seats and self.rng.random() < 0.05:
            seat = self.rng.choice(sorted(seats))
            self.command("leave", f"/v1/tables/{self.table}/players/{seat}", None, "DELETE")
            self.tokens.pop(seat, None)
        while len(self.tokens) < 3:
            self.seat()
        self.command("deal", f"/v1/tables/{self.table}/deal", {})

    def declare(self, hand: dict[str, Any]) -> None:
        number, declared = hand["number"], set(hand.get("declared", []))
        if self.skipping[0] != number:
            skip = {s for s in hand["order"] if self.deadlines and self.rng.random() < 0.3}
            self.skipping = (number, skip)
        waiting = [s for s in hand["order"] if s not in declared and s not in self.skipping[1]]
        if not waiting:
            time.sleep(0.1)  # the rest is left to the deadline
            return
        if _passed(hand["deadline"]):
            time.sleep(0.1)  # too late to declare: the dispatchers' turn
            return
        seat = waiting[0]
        token = self.tokens.get(seat)
        if token is None:  # a seat whose seating answer was lost: the deadline decides it
            self.skipping[1].add(seat)
            return
        body = {"decision": self.rng.choice(("in", "out"))}
        self.command("declare", f"/v1/tables/{self.table}/declare", body, token=token)


def _passed(deadline: str) -> bool:
    return datetime.fromisoformat(deadline.replace("Z", "+00:00")) <= datetime.now(UTC)


def play(
    player: TablePlayer, stop: threading.Event, finish_s: float = 60.0, pace_s: float = 0.0
) -> None:
    """Play until `stop`, a step at most every `pace_s` (0: each as soon as the one before is
    answered), then finish the hand in play (for at most `finish_s`)."""
    if not player.create():
        return
    while not stop.is_set():
        began = time.monotonic()
        player.step(finishing=False)
        if pace_s:
            stop.wait(pace_s - (time.monotonic() - began))
    until = time.monotonic() + finish_s
    while time.monotonic() < until and player.step(finishing=True):
        pass
