"""The hot tier in its own cache Redis (decision 0021) against the hot tier in the Redis
that persists turns and tasks (append-only file), on one loaded database.

    cd bench && ../.venv/bin/python hot_redis.py --memories 1000000

Loads N memories as recall_scale.py does (same skew, vectors and bulk import), then
alternates API servers (2 processes each) between the two settings, round by round, in
alternating order, so the machine's drift hits both alike: ``one`` points
``TETHER_HOT_REDIS_URL`` at the durable Redis (what a deployment with one Redis does),
``split`` at the harness's cache Redis (what the embedded runtime does). Each round
warms the large partitions, then reads them cold one at a time (each after the
previous one's fill landed, as recall_scale's cold class) and hot. The durable Redis's
append-only file grows only with the ``one`` rounds' copies, and its rewrites run while
they do. Prints p50/p90/p95/p99 end to end per setting and class, and split / one.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import time

import httpx
import recall_scale as rs
import redis
from _harness import Run, api_server, hot_redis_url, services

_PCT = Run().pct


def _round(
    port: int, bench: rs.Bench, large: list[int], args: argparse.Namespace
) -> tuple[list[float], list[float]]:
    cold: list[float] = []
    hot: list[float] = []
    headers = {"Authorization": f"Bearer {bench.token}", "Content-Type": "application/json"}
    bench.warm("search", large)
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=60) as c:
        for j in range(args.cold):
            i = large[j % len(large)]
            bench.make_cold(i, "")
            path, body = rs.BODIES["search"](bench.population, i, bench.rng)
            started = time.perf_counter()
            answer = c.post(path, content=body)
            cold.append((time.perf_counter() - started) * 1000)
            answer.raise_for_status()
            rs.settle(bench.redis_client, bench.population, [i])
        for j in range(args.hot):
            path, body = rs.BODIES["search"](bench.population, large[j % len(large)], bench.rng)
            started = time.perf_counter()
            c.post(path, content=body).raise_for_status()
            hot.append((time.perf_counter() - started) * 1000)
    return cold, hot


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--cold", type=int, default=50, help="cold reads per round")
    parser.add_argument("--hot", type=int, default=100, help="hot reads per round")
    args = parser.parse_args()
    os.environ["TETHER_RECALL__LOCAL_MEGABYTES"] = "2048"  # as recall_scale's default
    rs.warm_up()
    rng = random.Random(1)
    pools = asyncio.run(rs.template_vectors(64, rng))
    rng = random.Random(args.memories)
    seen: dict[str, dict[str, list[float]]] = {}
    with services() as (database_url, redis_url):
        targets = {"one": redis_url, "split": hot_redis_url()}
        token, population, maker = rs.populate(database_url, redis_url, args.memories, pools, rng)
        large = population.pick(5_000, 5_000, 300, rng)
        durable = redis.Redis.from_url(redis_url)
        print(f"# N={args.memories:,}, {len(large)} partitions of 5,000; {args.rounds} rounds")
        for r in range(args.rounds):
            for name in list(targets) if r % 2 == 0 else list(targets)[::-1]:
                os.environ["TETHER_HOT_REDIS_URL"] = targets[name]
                client = redis.Redis.from_url(targets[name])
                with api_server(database_url, redis_url, 2) as port:
                    bench = rs.Bench(port, token, population, client, rng, database_url, maker)
                    cold, hot = _round(port, bench, large, args)
                runs = seen.setdefault(name, {"cold": [], "hot": []})
                runs["cold"] += cold
                runs["hot"] += hot
                aof = durable.info("persistence").get("aof_current_size", 0) / 1e6
                print(
                    f"round {r} {name:5}  cold p50 {_PCT(cold, 0.5):6.2f} p95 "
                    f"{_PCT(cold, 0.95):6.2f}  hot p50 {_PCT(hot, 0.5):6.2f} p95 "
                    f"{_PCT(hot, 0.95):6.2f} ms  (durable Redis's append-only file {aof:.0f} MB)",
                    flush=True,
                )
    print("## end to end (ms), all rounds")
    for kind in ("cold", "hot"):
        for name, runs in seen.items():
            v = runs[kind]
            print(
                f"{kind:4} {name:5} n={len(v):4}  p50 {_PCT(v, 0.5):6.2f}  p90 {_PCT(v, 0.9):6.2f}"
                f"  p95 {_PCT(v, 0.95):6.2f}  p99 {_PCT(v, 0.99):6.2f}"
            )
        one, split = seen["one"][kind], seen["split"][kind]
        print(
            f"{kind:4} split / one: p50 {_PCT(split, 0.5) / _PCT(one, 0.5):.2f}x  "
            f"p95 {_PCT(split, 0.95) / _PCT(one, 0.95):.2f}x"
        )


if __name__ == "__main__":
    main()
