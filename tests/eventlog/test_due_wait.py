"""A dispatcher's wait on the due index's wake list. Redis ends a blocking wait only at a tick
of its timer (10 a second by default: a ``BLPOP`` for 30 ms returns after about 100 ms), so a
wait that ends at a due blocks only until `DueIndex.TIMER_S` before its end, and looks at the
list without blocking after that (bench_deadlines: healthy p99 80-97 ms before, 3-4 ms
after)."""

from __future__ import annotations

import threading
import time

from service.eventlog.due_index import DueIndex


def _sent(redis_client, wait) -> tuple[bool, list[list[str]]]:
    """What `wait()` returned, and the commands it sent (MONITOR)."""
    with redis_client.monitor() as monitor:
        woke = wait()
        redis_client.ping()  # the last command the monitor waits for
        seen: list[list[str]] = []
        while not seen or seen[-1][0] != "PING":
            words = monitor.next_command()["command"].split()
            seen.append([words[0].upper(), *words[1:]])
    return woke, [c for c in seen if c[0] in ("BLPOP", "LPOP")]


def test_a_wait_that_ends_at_a_due_blocks_until_redis_timer_before_it_then_looks(redis_client):
    index = DueIndex(redis_client, prefix="test")
    woke, sent = _sent(redis_client, lambda: index.wait(0.25, precise=True))
    assert not woke
    (blocking, *looks) = sent
    assert blocking[0] == "BLPOP" and float(blocking[-1]) == 0.25 - DueIndex.TIMER_S
    assert looks and all(c == ["LPOP", index.wake_key] for c in looks)


def test_a_wait_shorter_than_redis_timer_only_looks(redis_client):
    index = DueIndex(redis_client, prefix="test")
    woke, sent = _sent(redis_client, lambda: index.wait(0.05, precise=True))
    assert not woke and sent and all(c[0] == "LPOP" for c in sent)


def test_a_wait_to_look_again_blocks_once_for_all_of_it(redis_client):
    index = DueIndex(redis_client, prefix="test")
    woke, sent = _sent(redis_client, lambda: index.wait(0.25))
    assert not woke and sent == [["BLPOP", index.wake_key, "0.25"]]


def test_a_record_of_an_earlier_due_wakes_a_precise_wait(redis_client):
    index = DueIndex(redis_client, prefix="test")
    index.record("later", 1, time.time() + 3600)
    # That record (into an empty index) left a token, which would end the wait at once: the
    # wait must be woken by the record below, made while it blocks.
    redis_client.delete(index.wake_key)
    woke: list[bool] = []
    waiting = threading.Thread(target=lambda: woke.append(index.wait(5.0, precise=True)))
    waiting.start()
    deadline = time.monotonic() + 10
    while not any(_blocked_in_blpop(c) for c in redis_client.client_list()):
        assert time.monotonic() < deadline and waiting.is_alive(), "the wait never blocked"
        time.sleep(0.01)  # (until it blocks: the record must come while it waits)
    index.record("sooner", 1, time.time() + 60)
    waiting.join(10)
    assert woke == [True]


def _blocked_in_blpop(client: dict[str, str]) -> bool:
    """Whether a connection (a line of CLIENT LIST) is blocked in a BLPOP now: its last
    command alone would still say blpop once the BLPOP has returned."""
    return client.get("cmd") == "blpop" and "b" in client.get("flags", "")
