"""Command throughput on a real 3-master Redis Cluster against one redis-server, in one run.
Run on purpose:

    .venv/bin/python -m tests.bench.bench_cluster [--hands 7200] [--threads 4] [--rounds 3]
    .venv/bin/python -m tests.bench.bench_cluster --replicated [...]

Commands go through `Tables.execute` (the path every API command takes under HTTP: decide on
the cached state, one conditional append script, snapshots, the due index) from `--threads`
threads on 24 three-seat tables (deal, three declarations, resolve per hand). Each store as
production builds it: through the store's shortcut around redis-py's pool (`redis_py_bypass`;
on the cluster each hot command goes to its slot's master directly, the rest through redis-py's
`RedisCluster`). After a warm-up, `--rounds` rounds of each, alternating (single, cluster,
and both through redis-py only: a second pair); medians reported. Goal: cluster >= 0.8x the
single Redis.

`--replicated` measures instead what acknowledged-means-replicated costs (issue 31): on a
3-master cluster with a replica each, rounds alternate between ``GUTS_REDIS_MIN_REPLICAS`` 0
and 1 (every append followed by ``WAIT 1``, in the same round trip); the ratio is N=1's
throughput over N=0's, both from this run.
"""

from __future__ import annotations

import argparse
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import redis
from redis.cluster import RedisCluster

from service.eventlog.redis_store import RedisEventStore
from service.processes.redis_server import RedisServer
from service.tables import Tables
from tests.cluster import LocalCluster
from tests.playing import new_table, play

TABLES = 24


def round_(
    client: redis.Redis, bypass: bool, hands: int, threads: int, min_replicas: int = 0
) -> float:
    """Commands per second of `hands` hands on each of the tables (acknowledged once
    `min_replicas` replicas hold them)."""
    if isinstance(client, RedisCluster):
        client.flushall(target_nodes=RedisCluster.PRIMARIES)
    else:
        client.flushall()
    store = RedisEventStore(client, bypass_redis_py=bypass, min_replicas=min_replicas)
    tables = Tables(store)
    ids = [f"bench-{n}" for n in range(TABLES)]
    for table_id in ids:
        new_table(tables, table_id, players=3)
    per = hands // TABLES
    started = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda t: play(tables, t, per), ids))
    took = time.perf_counter() - started
    return per * TABLES * 5 / took  # deal, three declarations, resolve


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hands", type=int, default=7200)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--replicated", action="store_true")
    args = parser.parse_args()
    if args.replicated:
        replicated(args.hands, args.threads, args.rounds)
        return
    with RedisServer() as server, LocalCluster() as cluster:
        single = redis.Redis.from_url(server.url)
        clustered = RedisCluster.from_url(cluster.url)
        found: dict[str, list[float]] = {
            "single": [],
            "cluster": [],
            "single, redis-py only": [],
            "cluster, redis-py only": [],
        }
        for client in (single, clustered):  # warm up: connections made, scripts loaded
            round_(client, True, 480, args.threads)  # type: ignore[arg-type]
        for _ in range(args.rounds):
            for name, client in (("single", single), ("cluster", clustered)):
                found[name].append(round_(client, True, args.hands, args.threads))  # type: ignore[arg-type]
                found[f"{name}, redis-py only"].append(
                    round_(client, False, args.hands, args.threads)  # type: ignore[arg-type]
                )
            print({k: round(v[-1]) for k, v in found.items()}, flush=True)
        medians = {k: statistics.median(v) for k, v in found.items()}
        for name, rate in medians.items():
            print(f"{name}: {rate:,.0f} commands/s ({rate / medians['single']:.2f}x single)")
        plain = medians["cluster, redis-py only"] / medians["single, redis-py only"]
        print(f"through redis-py only: cluster {plain:.2f}x single")


def replicated(hands: int, threads: int, rounds: int) -> None:
    """N=0 against N=1 on a cluster with a replica per master (see the module doc)."""
    with LocalCluster(replicas=1) as cluster:
        client = RedisCluster.from_url(cluster.url)
        found: dict[int, list[float]] = {0: [], 1: []}
        round_(client, True, 480, threads, 1)  # type: ignore[arg-type]
        for _ in range(rounds):
            for n in (0, 1):
                found[n].append(round_(client, True, hands, threads, n))  # type: ignore[arg-type]
            print({f"N={n}": round(v[-1]) for n, v in found.items()}, flush=True)
        base, acked = statistics.median(found[0]), statistics.median(found[1])
        print(f"N=0: {base:,.0f} commands/s; N=1: {acked:,.0f} ({acked / base:.2f}x N=0)")


if __name__ == "__main__":
    main()
