"""The admission gate serves requests in the order they came, `at_once` at a time, and lets
streams past."""

from __future__ import annotations

import threading
import time

import pytest

from service.api.admission import Admission, FifoGate
from tests.waiting import eventually

BOUND_S = 10.0  # a bound on a busy machine, not a timing
EVERY_S = 0.001  # (threads of this process: they get there within a switch or two)


def test_a_place_that_comes_free_goes_to_the_longest_waiter():
    gate = FifoGate(1, patience_s=60)
    holding = gate.enter()
    served: list[tuple[int, int]] = []
    threads = []
    for n in range(5):  # they arrive one after the other
        thread = threading.Thread(target=lambda n=n: served.append((n, gate.enter())))
        thread.start()
        threads.append(thread)
        eventually(lambda n=n: gate.waiting == n + 1, BOUND_S, f"{n + 1} waiting", every_s=EVERY_S)
    for n in range(5):
        gate.leave(holding)  # a newcomer now would wait behind everyone already waiting
        eventually(lambda n=n: len(served) == n + 1, BOUND_S, f"{n + 1} served", every_s=EVERY_S)
        holding = served[-1][1]
    gate.leave(holding)
    for thread in threads:
        thread.join()
    assert [n for n, _ in served] == [0, 1, 2, 3, 4]


def test_at_once_holders_enter_without_waiting_and_the_next_waits():
    gate = FifoGate(2, patience_s=60)
    first = gate.enter()
    gate.enter()
    entered = threading.Event()
    thread = threading.Thread(target=lambda: (gate.enter(), entered.set()))
    thread.start()
    eventually(lambda: gate.waiting == 1, BOUND_S, "one waiting", every_s=EVERY_S)
    assert not entered.is_set()
    gate.leave(first)
    thread.join(timeout=10)
    assert entered.is_set()


def test_holders_in_past_their_patience_let_the_longest_waiter_in_beside_them():
    """Two requests stuck on a Redis node that stopped answering hold the gate's two places;
    past the gate's patience they no longer count, and the requests waiting behind them are
    let in, in the order they came, while the stuck ones still hold theirs."""
    gate = FifoGate(2, patience_s=0.2)
    stuck = [gate.enter(), gate.enter()]
    started = time.monotonic()
    served: list[tuple[int, int, float]] = []
    threads = []
    for n in range(2):
        thread = threading.Thread(
            target=lambda n=n: served.append((n, gate.enter(), time.monotonic() - started)),
            daemon=True,  # (a gate that never lets them in fails the test, and ends with it)
        )
        thread.start()
        threads.append(thread)
        eventually(lambda n=n: gate.waiting == n + 1, BOUND_S, f"{n + 1} waiting", every_s=EVERY_S)
    for thread in threads:
        thread.join(timeout=10)
    assert [n for n, *_ in served] == [0, 1]  # both in, first come first
    assert all(waited >= 0.2 for *_, waited in served)  # once the stuck ones were past it
    assert gate.waiting == 0
    for token in [*stuck, *(token for _, token, _ in served)]:
        gate.leave(token)
    assert gate.enter()  # every place given back: one free at once


def test_a_gate_needs_a_place():
    with pytest.raises(ValueError):
        FifoGate(0)


def test_streams_pass_a_full_gate_and_other_requests_are_served_whole():
    def app(environ, start_response):
        start_response("200 OK", [])
        return iter([b"a", b"b"])

    admitted = Admission(app, at_once=1)
    taken = admitted.gate.enter()  # the only place is taken
    stream = admitted({"PATH_INFO": "/v1/tables/t/stream"}, lambda *a: None)
    assert list(stream) == [b"a", b"b"]
    admitted.gate.leave(taken)
    assert admitted({"PATH_INFO": "/v1/tables/t"}, lambda *a: None) == [b"ab"]
    assert admitted.gate.waiting == 0


def test_the_body_is_read_before_waiting_for_a_place():
    read = threading.Event()

    class Input:
        def read(self, n: int) -> bytes:
            read.set()
            return b"x" * n

    def app(environ, start_response):
        start_response("200 OK", [])
        return [environ["wsgi.input"].read()]

    admitted = Admission(app, at_once=1)
    taken = admitted.gate.enter()  # the only place is taken
    answers: list[object] = []
    environ = {"PATH_INFO": "/v1/tables", "CONTENT_LENGTH": "3", "wsgi.input": Input()}
    thread = threading.Thread(target=lambda: answers.append(admitted(environ, lambda *a: None)))
    thread.start()
    eventually(lambda: admitted.gate.waiting == 1, BOUND_S, "one waiting", every_s=EVERY_S)
    assert read.is_set() and not answers  # read while it waits: a slow sender holds no place
    admitted.gate.leave(taken)
    thread.join(timeout=10)
    assert answers == [[b"xxx"]]


def test_a_waiter_killed_while_it_waits_gives_its_turn_back(monkeypatch):
    """A waiter interrupted in its wait (a greenlet killed) leaves the queue: the place goes
    to whoever comes next, not to the killed waiter."""
    import service.api.admission as admission

    class Killed(BaseException):
        pass

    class DyingEvent(threading.Event):
        def wait(self, timeout: float | None = None) -> bool:
            raise Killed

    class DyingTurn(admission._Turn):
        def __init__(self) -> None:
            super().__init__()
            self.event = DyingEvent()

    gate = FifoGate(1, patience_s=60)
    holding = gate.enter()
    monkeypatch.setattr(admission, "_Turn", DyingTurn)
    with pytest.raises(Killed):
        gate.enter()
    monkeypatch.undo()
    assert gate.waiting == 0
    gate.leave(holding)
    assert gate.enter()  # the place came back, not handed to the killed waiter
