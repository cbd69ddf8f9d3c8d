"""Command throughput on a real 3-master Redis Cluster against one redis-server, in one run.
Run on purpose:

    .venv/bin/python -m tests.bench.bench_cluster [--hands 7200] [--threads 4] [--rounds 3]

Commands go through `Tables.execute` (the path every API command takes under HTTP: decide on
the cached state, one conditional append script, snapshots, the due index) from `--threads`
threads on 24 three-seat tables (deal, three declarations, resolve per hand). Each store as
production builds it: through the store's shortcut around redis-py's pool (`redis_py_bypass`;
on the cluster each hot command goes to its slot's master directly, the rest through redis-py's
`RedisCluster`). After a warm-up, `--rounds` rounds of each, alternating (single, cluster,
and both through redis-py only: a second pair); medians reported. Goal: cluster >= 0.8x the
single Redis.
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


def round_(client: redis.Redis, bypass: bool, hands: int, threads: int) -> float:
    """Commands per second of `hands` hands on each of the tables."""
    if isinstance(client, RedisCluster):
        client.flushall(target_nodes=RedisCluster.PRIMARIES)
    else:
        client.flushall()
    tables = Tables(RedisEventStore(client, bypass_redis_py=bypass))
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
    args = parser.parse_args()
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


if __name__ == "__main__":
    main()
