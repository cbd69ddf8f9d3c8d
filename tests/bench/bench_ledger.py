"""The ledger: what a page costs, and what projecting costs the play.

1. Pages. A real Redis holds a ledger of more than 10,000 entries (tables of 6 players playing
   `three-card` hands, projected by the ledger projection). The p50/p99 of a 100-entry page
   read through `LedgerStore.page` (entries decoded): unfiltered, of one table, of one player;
   against a baseline in the same run: a bare `XRANGE ... COUNT 100` of a stream holding the
   same entries' JSON (what reading 100 stored entries costs at the least), decoded the same.
2. Play. `bench_hands`-style complete hands in-process (deal, 6 declares, resolve, evolved),
   without the ledger, with the rules' ledger folding every event (`ledger.step`), and with
   every hand's events projected into Redis (`LedgerStore.apply`, one round trip for the book
   and one script per hand, as the follower applies a batch); hands/s of each, one run.
3. Lag. With a follower running as the dispatchers run it, how long after an append its
   entry shows on an unfiltered page.
4. Use cases. The same hands through the application service on Redis: without a ledger,
   with one (every deal and declare looks the players' limits up), and with a loss limit for
   every player (every deal and declare catches the table's ledger up first).

Run on purpose:

    .venv/bin/python -m tests.bench.bench_ledger
"""

from __future__ import annotations

import hashlib
import random
import statistics
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import orjson
import redis

from service.application import TableService
from service.application.access import Caller
from service.audit.jobs import QueuedJobs
from service.eventlog.redis_store import RedisEventStore
from service.processes.redis_server import RedisServer
from service.projections.follower import Followed, Follower
from service.projections.ledger import LedgerStore
from service.rules import commands, ledger
from service.rules import events as ev
from service.rules.limits import Limits
from service.rules.ruleset import resolve_ruleset
from service.rules.state import TableState, evolve
from service.rules.views import OPERATOR, PLAYER
from service.tables import Tables

SEATS = 6
PAGE = 100


def _hands(
    table_id: str, hands: int, on_hand: Callable[[list[tuple[int, ev.Event]]], None]
) -> float:
    """Play `hands` complete hands at a new table, handing each hand's (version, event)s (the
    table's opening with the first) to `on_hand`; the seconds it took."""
    state = TableState()
    now = datetime(2026, 11, 22, tzinfo=UTC)
    rules = resolve_ruleset("three-card", {"ante_rule": "every_hand"})
    batch: list[tuple[int, ev.Event]] = []

    def apply(events: list[ev.Event]) -> None:
        for event in events:
            evolve(state, event)
            batch.append((state.version, event))

    apply(commands.create_table(table_id, rules, now))
    for i in range(SEATS):
        apply(commands.seat_player(state, f"p{i}", 10**9, now))
    seeds = [hashlib.sha256(f"{table_id}{i}".encode()).digest() for i in range(hands)]
    started = time.perf_counter()
    for i in range(hands):
        now += timedelta(milliseconds=1)
        apply(commands.deal(state, seeds[i], now))
        hand = state.hand
        assert hand is not None
        for n, seat in enumerate(list(hand.order)):
            apply(commands.declare(state, seat, "in" if (i + n) % 3 == 0 else "out", now))
        apply(commands.resolve(state, now))
        on_hand(batch)
        batch = []
    return time.perf_counter() - started


def _projector(store: LedgerStore, tenant: str, table_id: str) -> Callable:
    position = [0]

    def project(batch: list[tuple[int, ev.Event]]) -> None:
        assert store.apply(Followed(table_id, tenant, position[0], tuple(batch)))
        position[0] = batch[-1][0]

    return project


def _folder() -> Callable:
    book = ledger.Book()

    def fold(batch: list[tuple[int, ev.Event]]) -> None:
        for version, event in batch:
            ledger.step(book, version, event)

    return fold


def _percentiles(samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    return f"p50 {statistics.median(ms):.3f} ms, p99 {p99:.3f} ms"


def _timed(call: Callable[[], object], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return samples


def pages(client: redis.Redis) -> None:
    store = LedgerStore(client, prefix="bench")
    tables = [f"t{i}" for i in range(10)]
    for table_id in tables:
        _hands(table_id, 150, _projector(store, "casino", table_id))
    total = int(client.get(store.key("casino", "seq")) or 0)
    assert total >= 10_000, total
    # The baseline: the same entries' JSON in a stream, read 100 at a time.
    stream = "bench:{%baseline}:entries"
    raw = client.hmget(store.key("casino", "entries"), list(range(1, total + 1)))
    pipe = client.pipeline(transaction=False)
    for seq, data in enumerate(raw, start=1):
        pipe.xadd(stream, {"e": data}, id=f"{seq}-0")
    pipe.execute()
    rng = random.Random(7)
    runs = 2000
    starts = [rng.randrange(0, total - PAGE) for _ in range(runs)]
    cursor = iter(starts * 2)

    def bare() -> None:
        rows = client.xrange(stream, f"{next(cursor) + 1}-0", "+", count=PAGE)
        assert len([orjson.loads(f[b"e"]) for _, f in rows]) == PAGE

    def unfiltered() -> None:
        assert len(store.page("casino", str(next(cursor)), PAGE)[0]) == PAGE

    by_table = iter(rng.choice(tables) for _ in range(runs))
    by_player = iter(f"p{rng.randrange(SEATS)}" for _ in range(runs))

    def table_page() -> None:
        store.page("casino", None, PAGE, table_id=next(by_table))

    def player_page() -> None:
        store.page("casino", None, PAGE, player_id=next(by_player))

    print(
        f"ledger of {total:,} entries ({len(tables)} tables, {SEATS} players); {PAGE}-entry pages:"
    )
    baseline = _timed(bare, runs)
    print(f"  baseline, bare XRANGE COUNT {PAGE} + decode: {_percentiles(baseline)}")
    for name, call in (
        ("unfiltered", unfiltered),
        ("by table", table_page),
        ("by player", player_page),
    ):
        samples = _timed(call, runs)
        ratio = sorted(samples)[int(runs * 0.99)] / sorted(baseline)[int(runs * 0.99)]
        print(f"  {name}: {_percentiles(samples)} (p99 {ratio:.2f}x the baseline's)")


def play(client: redis.Redis) -> None:
    hands = 2000
    _hands("warm", 300, lambda batch: None)
    bare = _hands("bare", hands, lambda batch: None)
    folded = _hands("folded", hands, _folder())
    projected = _hands(
        "projected", hands, _projector(LedgerStore(client, prefix="play"), "c", "projected")
    )
    print(f"play, {hands} complete 6-seat hands in-process:")
    print(f"  without the ledger: {hands / bare:,.0f} hands/s")
    print(
        f"  with the rules' ledger folding every event: {hands / folded:,.0f} hands/s "
        f"({bare / folded:.2f}x the throughput)"
    )
    print(
        f"  with every hand projected into Redis (one book read + one script per hand): "
        f"{hands / projected:,.0f} hands/s ({bare / projected:.2f}x the throughput)"
    )


def _service_hands(
    client: redis.Redis, name: str, ledger_on: bool, limits: bool, hands: int
) -> float:
    """Hands/s through the application service's use cases on Redis (deal, 6 declares,
    resolve), with no ledger, with the ledger (each deal and declare looks the players' limits
    up: none are set), or with a limit for every player (each deal and declare catches the
    table's ledger up and reads the net loss)."""
    store = RedisEventStore(client, prefix=name)
    projection = LedgerStore(client, prefix=name) if ledger_on else None
    service = TableService(
        Tables(store),
        QueuedJobs(client, client, name),
        issue_token=lambda table, seat, joined: "token",
        ledger=projection,
        follower=Follower(store, [projection]) if projection is not None else None,
    )
    operator = Caller(OPERATOR, tenant="default")
    table = service.create_table(operator, "three-card", {"ante_rule": "every_hand"}).facts
    table_id = table["table_id"]
    for i in range(SEATS):
        service.seat(operator, table_id, f"p{i}", 10**9)
        if limits and projection is not None:
            projection.set_limits("default", f"p{i}", Limits(10**12, None))
    started = time.perf_counter()
    for i in range(hands):
        service.deal(operator, table_id)
        state = service.tables.load(table_id)
        assert state.hand is not None
        for n, seat in enumerate(list(state.hand.order)):
            player = Caller(PLAYER, table_id, seat, state.seats[seat].joined)
            service.declare(player, table_id, "in" if (i + n) % 3 == 0 else "out")
        service.resolve(operator, table_id)
    return hands / (time.perf_counter() - started)


def use_cases(client: redis.Redis) -> None:
    """Three rounds, the configurations alternating in each (the machine is noisy): each
    round's hands/s, and the median of the rounds' ratios to the round's run without."""
    hands = 300
    _service_hands(client, "warm", True, True, 50)
    print(
        f"use cases on Redis, {hands} complete 6-seat hands (deal, 6 declares, resolve), 3 rounds:"
    )
    configs = (
        ("without a ledger", False, False),
        ("with the ledger, no limits set", True, False),
        (
            "with a loss limit for every player (catch-up + net loss per deal and declare)",
            True,
            True,
        ),
    )
    rates: dict[str, list[float]] = {name: [] for name, _, _ in configs}
    for r in range(3):
        for k, (name, on, limited) in enumerate(configs):
            rates[name].append(_service_hands(client, f"uc{r}{k}", on, limited, hands))
    bare = rates[configs[0][0]]
    for name, _, _ in configs:
        ratios = [rate / base for rate, base in zip(rates[name], bare, strict=True)]
        shown = ", ".join(f"{rate:,.0f}" for rate in rates[name])
        print(f"  {name}: {shown} hands/s (median ratio {statistics.median(ratios):.2f}x)")


def lag(client: redis.Redis) -> None:
    """How long after an append its entry shows on an unfiltered page, with a follower
    running as the dispatcher runs it (notices; sweep every 5 s): 200 top-ups, one at a time."""
    store = RedisEventStore(client, prefix="lag")
    projection = LedgerStore(client, prefix="lag")
    follower = Follower(store, [projection])
    stop = threading.Event()
    thread = threading.Thread(target=follower.run, args=(client, store.notices, stop))
    thread.start()
    try:
        time.sleep(0.2)  # subscribed
        service = TableService(
            Tables(store), QueuedJobs(client, client, "lag"), issue_token=lambda *_: "token"
        )
        operator = Caller(OPERATOR, tenant="default")
        table_id = service.create_table(operator, "three-card", {}).facts["table_id"]
        service.seat(operator, table_id, "p0", 10)
        cursor = "0"
        samples = []
        for _ in range(200):
            while projection.page("default", cursor, 1000)[0]:
                cursor = projection.page("default", cursor, 1000)[1]
            started = time.perf_counter()
            service.top_up(operator, table_id, 0, 1)
            while True:
                rows, after = projection.page("default", cursor, 1000)
                if any(e["kind"] == "top_up" for e in rows):
                    samples.append(time.perf_counter() - started)
                    cursor = after
                    break
                time.sleep(0.0002)
        print(
            f"lag of an unfiltered page behind the log (append -> entry on the page): "
            f"{_percentiles(samples)}, max {max(samples) * 1000:.3f} ms"
        )
    finally:
        stop.set()
        thread.join()


def main() -> None:
    with RedisServer() as server:
        client = redis.Redis.from_url(server.url)
        pages(client)
        lag(client)
        play(client)
        use_cases(client)


if __name__ == "__main__":
    main()
