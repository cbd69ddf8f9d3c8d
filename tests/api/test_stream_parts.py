"""The live feed's small parts, alone: a stream's mailbox and the node's stream slots (the
slots under gunicorn are tested in tests/test_stream_capacity.py)."""

from __future__ import annotations

import os
import threading

from service.api.mailbox import Mailbox
from service.api.stream_slots import StreamSlots, default_capacity, free_index


def test_a_mailbox_is_bounded_in_order_and_takes_a_forced_last_word() -> None:
    box = Mailbox(2)
    assert box.empty() and box.take(0.01) == (False, None)
    assert box.offer(1) and box.offer(2) and not box.offer(3)
    assert box.full()
    box.force("end")
    assert [box.take(0.01) for _ in range(4)] == [
        (True, 1),
        (True, 2),
        (True, "end"),
        (False, None),
    ]


def test_a_mailbox_wakes_its_reader_when_an_item_comes() -> None:
    box = Mailbox(4)
    got: list[tuple[bool, object]] = []
    reader = threading.Thread(target=lambda: got.append(box.take(30)))
    reader.start()
    assert box.offer("event")
    reader.join(30)
    assert got == [(True, "event")]


def test_the_default_capacity_leaves_each_worker_a_tenth_of_its_connections() -> None:
    assert default_capacity(6000, 2) == 2 * (6000 - 600)
    assert default_capacity(500, 2) == 2 * (500 - 100)  # at least 100 kept
    assert default_capacity(100, 1) == 50  # at most half
    assert free_index({0, 1, 3}) == 2


def test_slots_are_counted_across_forked_workers_and_cleared_for_a_dead_one() -> None:
    slots = StreamSlots(3)
    slots.assign(0)
    assert slots.take()
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # a second worker: takes its places in the same count
        slots.assign(1)
        answers = [slots.take(), slots.take(), slots.take()]
        os.write(write, bytes(answers))
        os._exit(0)
    os.waitpid(child, 0)
    assert list(os.read(read, 3)) == [1, 1, 0]  # the node's third place, then none
    assert slots.open() == 3 and slots.held == 1 and not slots.take()
    slots.clear(1)  # the master: that worker exited
    assert slots.open() == 1 and slots.take()
    slots.give_back()
    slots.give_back()
    assert slots.open() == 0
