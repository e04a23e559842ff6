"""Cold reads against how a partition's rows lie in the table, and Postgres's buffer pool.

    cd bench && ../.venv/bin/python row_layout.py --memories 1000000
    cd bench && ../.venv/bin/python row_layout.py --configs interleaved:128,interleaved:6000

A relationship's own import stores its rows side by side ("grouped"); memories written
over time by many relationships at once are scattered over the table's pages
("interleaved": recall_scale's default). A cold read of a 5,000-memory partition reads
every page that holds one of its rows: about 1,000 pages grouped, 4,000-5,000 interleaved
at 1M memories, which a buffer pool of Postgres's default 128 MB cannot keep.

For each ``layout:megabytes`` of ``--configs`` (a fresh embedded Postgres + Redis each,
loaded as recall_scale loads N memories), prints the heap pages of ten large partitions,
then p50/p95/p99 end to end of /search and /v1/context cold reads of the large
partitions, of /search cold reads of the large ones without their snapshots, and of small
ones (recall_scale's ``Bench.cold``: one at a time, each after the previous fill).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random

import asyncpg
import recall_scale as rs
import redis
from _harness import Run, api_server, hot_redis_url, services

from tether.runtime.embedded_postgres import default_shared_buffers_mb

_PCT = Run().pct
_PAGES = (
    "SELECT count(DISTINCT (ctid::text::point)[0])::int FROM memories WHERE relationship_id = $1"
)


async def _pages(database_url: str, ids: list[object]) -> list[int]:
    connection = await asyncpg.connect(database_url)
    try:
        return [await connection.fetchval(_PAGES, rid) for rid in ids]
    finally:
        await connection.close()


def _measure(config: str, n: int, pools: rs.Pools, requests: int) -> None:
    layout, megabytes = config.split(":")
    rng = random.Random(n)
    with services(int(megabytes)) as (database_url, redis_url):
        token, population, maker = rs.populate(database_url, redis_url, n, pools, rng, layout)
        large = population.pick(5_000, 5_000, 300, rng)
        small = population.pick(5, 50, 150, rng)
        pages = asyncio.run(_pages(database_url, [population.ids[i] for i in large[:10]]))
        print(f"\n## {layout}, shared_buffers {megabytes} MB: heap pages of 10 large {pages}")
        client = redis.Redis.from_url(hot_redis_url())
        with api_server(database_url, redis_url, 2) as port:
            bench = rs.Bench(port, token, population, client, rng, database_url, maker)
            classes = (
                ("search cold-large", "search", large, ""),
                ("context cold-large", "context", large, ""),
                ("search cold-large from rows", "search", large, "drop"),
                ("search cold-small", "search", small, ""),
            )
            for name, endpoint, indexes, before in classes:
                v = bench.cold(endpoint, indexes, requests, before).run.latencies_ms
                print(
                    f"{config:18} {name:28} n={len(v)}  p50 {_PCT(v, 0.5):6.2f}"
                    f"  p95 {_PCT(v, 0.95):6.2f}  p99 {_PCT(v, 0.99):6.2f}",
                    flush=True,
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=1_000_000)
    parser.add_argument(
        "--configs",
        default="grouped:128,interleaved:128,interleaved:default",
        help="comma-separated layout:megabytes (default: the embedded runtime's pool)",
    )
    parser.add_argument("--requests", type=int, default=100, help="per class and config")
    args = parser.parse_args()
    for config in args.configs.split(","):
        if config.partition(":")[0] not in rs.LAYOUTS:
            parser.error(f"--configs: {config!r}: the layout is one of {sorted(rs.LAYOUTS)}")
    os.environ["TETHER_RECALL__LOCAL_MEGABYTES"] = "2048"  # as recall_scale's default
    rs.warm_up()
    pools = asyncio.run(rs.template_vectors(64, random.Random(1)))
    configs = [
        c.replace(":default", f":{default_shared_buffers_mb()}") for c in args.configs.split(",")
    ]
    print(f"# N={args.memories:,}; {args.requests} cold reads per class; configs {configs}")
    for config in configs:
        _measure(config, args.memories, pools, args.requests)


if __name__ == "__main__":
    main()
