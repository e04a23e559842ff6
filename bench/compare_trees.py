"""Two source trees' API servers against each other on one loaded database: a change
measured against its base in the same run, so the machine's drift hits both alike.

    git worktree add /tmp/base <base-commit>; git worktree add /tmp/change <commit>
    cd bench && ../.venv/bin/python compare_trees.py --trees /tmp/base,/tmp/change

Loads N memories as recall_scale.py does (same skew, vectors and bulk import), then
alternates API servers (2 processes each, the tree's code on ``PYTHONPATH``) round by
round, in alternating order, with the hot Redis emptied before each. Each round measures,
with recall_scale's classes (``Bench.cold``, ``Bench.hot``: c=1, one connection): search
cold-large, search hot-large, search hot-small and context hot-large. Prints p50/p95 per
round, then p50/p90/p95/p99 per tree and class over all rounds, and second / first.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
from pathlib import Path

import recall_scale as rs
import redis
from _harness import Run, api_server, hot_redis_url, services

_PCT = Run().pct


def _round(
    bench: rs.Bench, large: list[int], small: list[int], args: argparse.Namespace
) -> dict[str, list[float]]:
    classes = {
        "search cold-large": lambda: bench.cold("search", large, args.cold),
        "search hot-large": lambda: bench.hot("search", large, args.hot)[0],
        "search hot-small": lambda: bench.hot("search", small, args.hot)[0],
        "context hot-large": lambda: bench.hot("context", large, args.hot)[0],
    }
    return {name: measure().run.latencies_ms for name, measure in classes.items()}


def _line(name: str, v: list[float]) -> str:
    return (
        f"{name:18} n={len(v):5}  p50 {_PCT(v, 0.5):6.2f}  p90 {_PCT(v, 0.9):6.2f}"
        f"  p95 {_PCT(v, 0.95):6.2f}  p99 {_PCT(v, 0.99):6.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trees", required=True, help="two checkouts: base,change")
    parser.add_argument("--memories", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--cold", type=int, default=50, help="cold reads per round")
    parser.add_argument("--hot", type=int, default=300, help="hot reads per class and round")
    args = parser.parse_args()
    trees = [Path(t).resolve() for t in args.trees.split(",")]
    if len(trees) != 2 or not all((t / "platform" / "tether").is_dir() for t in trees):
        parser.error("--trees: two checkouts of this repository, comma-separated")
    os.environ["TETHER_RECALL__LOCAL_MEGABYTES"] = "2048"  # as recall_scale's default
    rs.warm_up()
    rng = random.Random(1)
    pools = asyncio.run(rs.template_vectors(64, rng))
    rng = random.Random(args.memories)
    seen: dict[Path, dict[str, list[float]]] = {tree: {} for tree in trees}
    with services() as (database_url, redis_url):
        token, population, maker = rs.populate(database_url, redis_url, args.memories, pools, rng)
        large = population.pick(5_000, 5_000, 300, rng)
        small = population.pick(5, 50, 150, rng)
        client = redis.Redis.from_url(hot_redis_url())
        print(f"# N={args.memories:,}, {len(large)} partitions of 5,000; {args.rounds} rounds")
        for r in range(args.rounds):
            for tree in trees if r % 2 == 0 else trees[::-1]:
                os.environ["PYTHONPATH"] = f"{tree / 'platform'}{os.pathsep}{tree}"
                client.flushall()  # each tree's round starts from cold tiers
                with api_server(database_url, redis_url, 2) as port:
                    bench = rs.Bench(port, token, population, client, rng, database_url, maker)
                    measured = _round(bench, large, small, args)
                for name, latencies in measured.items():
                    seen[tree].setdefault(name, []).extend(latencies)
                cells = "  ".join(
                    f"{name} {_PCT(v, 0.5):.1f}/{_PCT(v, 0.95):.1f}" for name, v in measured.items()
                )
                print(f"round {r} {tree.name}: p50/p95 {cells}", flush=True)
    print("## end to end (ms), all rounds")
    first, second = trees
    for name in seen[first]:
        a, b = seen[first][name], seen[second][name]
        print(f"{_line(name, a)}  {first.name}\n{_line(name, b)}  {second.name}")
        print(
            f"{name:18} {second.name} / {first.name}: p50 {_PCT(b, 0.5) / _PCT(a, 0.5):.2f}x"
            f"  p95 {_PCT(b, 0.95) / _PCT(a, 0.95):.2f}x  p99 {_PCT(b, 0.99) / _PCT(a, 0.99):.2f}x"
        )


if __name__ == "__main__":
    main()
