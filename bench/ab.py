"""Two source trees side by side in one run: a change against its base, on identical data,
with rounds alternating so that the machine's drift (other processes on its two cores)
hits both alike.

    git worktree add --detach /tmp/base <base-commit>
    cd bench && ../.venv/bin/python ab.py --trees /tmp/base,.. --memories 10000

Each tree gets its own embedded Postgres + Redis, migrated by that tree's code, and the
same N memories (same seed, _population.py). Then, round after round, in alternating
order, each tree's server (recall_scale's: two API processes as ``tether_app`` and the
worker as ``tether serve`` starts it, the tree's code on ``PYTHONPATH``) is measured:
hot and cold /search on small and large relationships at c=1 (recall_scale's classes),
and ingest: 20-turn batches at c=8 for a few seconds, accepted turns/s, and turns/s made
durable by the worker until the last is in Postgres. Prints each round, then per tree the
median over rounds and second / first. Besides latencies, each class records the CPU
time the server's processes (API, worker, Postgres) spent per request: on a machine
shared with other work, latency tails move with the neighbours, CPU per request far less.
A difference is noise until it holds in most rounds and exceeds the spread of the rounds
of one tree.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import random
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import redis
from _harness import HOT_REDIS_VARIABLE, cpu_ms, hot_redis_url, load, services
from _population import Pools, Population, populate, relationship_sizes, template_vectors
from ingest import batch, durable_count, relationship_ids, wait_durable
from recall_scale import Bench, server

from tether.core.settings import Settings
from tether.recall.text import warm_up

# Either release's migration runner, whichever the tree has.
_MIGRATE = """
import sys
try:
    from tether.core.migrations import upgrade
except ImportError:
    from tether.core.migrations import upgrade
upgrade(sys.argv[1])
"""


def _pythonpath(tree: Path) -> str:
    return f"{tree / 'platform'}{os.pathsep}{tree}"


@dataclass
class Loaded:
    """One tree's services, migrated by its code and loaded."""

    tree: Path
    database_url: str
    redis_url: str
    hot_redis_url: str
    token: str
    population: Population


@contextmanager
def _loaded(tree: Path, n: int, pools: Pools) -> Iterator[Loaded]:
    with services(migrate=False) as (database_url, redis_url):
        env = os.environ | {"PYTHONPATH": _pythonpath(tree)}
        subprocess.run([sys.executable, "-c", _MIGRATE, database_url], env=env, check=True)
        rng = random.Random(n)
        sizes = relationship_sizes(n, 5_000, 0.25, rng)
        token, population, _ = populate(database_url, redis_url, sizes, pools, rng)
        yield Loaded(tree, database_url, redis_url, hot_redis_url(), token, population)


def _round(loaded: Loaded, args: argparse.Namespace) -> dict[str, float]:
    """The classes and the ingest run against ``loaded``'s tree and data."""
    os.environ["PYTHONPATH"] = _pythonpath(loaded.tree)  # for the processes started now
    os.environ[HOT_REDIS_VARIABLE] = loaded.hot_redis_url
    rng, population = random.Random(3), loaded.population
    small, large = population.pick(5, 50, 100, rng), population.pick(5_000, 5_000, 10, rng)
    client = redis.Redis.from_url(loaded.hot_redis_url)
    client.flushall()
    found: dict[str, float] = {}
    with (
        tempfile.TemporaryDirectory() as data,
        server(loaded.database_url, loaded.redis_url, Path(data)) as (port, roots),
    ):
        bench = Bench(port, loaded.token, population, client, rng, roots)
        bench.warm("search", small)  # filled outside the CPU measured
        bench.warm("search", large)
        classes = {
            "search hot-small": lambda: bench.hot("search", small, args.requests),
            "search hot-large": lambda: bench.hot("search", large, args.requests),
            # A cold read's CPU includes the fill it starts.
            "search cold-small": lambda: bench.cold("search", small, args.cold),
            "search cold-large": lambda: bench.cold("search", large, args.cold // 3),
        }
        for name, measure in classes.items():
            seen = measure()
            found[f"{name} p50"] = seen.pct(0.5)
            found[f"{name} p95"] = seen.pct(0.95)
            found[f"{name} cpu"] = seen.cpu_ms
        settings = Settings(database_url=loaded.database_url, redis_url=loaded.redis_url)
        rids = asyncio.run(relationship_ids(settings, 2_000))
        base = asyncio.run(durable_count(settings))
        turns = itertools.islice(itertools.cycle(rids), 20_000)
        before = cpu_ms(roots)
        run = load(port, [batch(r, loaded.token, 20) for r in turns], 8, args.ingest_seconds)
        accepted = 20 * run.statuses.get(202, 0)
        drain = wait_durable(settings, base + accepted, 300)
        found["ingest accepted turns/s"] = accepted / run.seconds
        found["ingest durable turns/s"] = accepted / (run.seconds + drain)
        found["ingest cpu per turn"] = (cpu_ms(roots) - before) / max(accepted, 1)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trees", required=True, help="two checkouts: base,change")
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--requests", type=int, default=300, help="per hot class and round")
    parser.add_argument("--cold", type=int, default=60, help="small cold reads per round")
    parser.add_argument("--ingest-seconds", type=float, default=8)
    args = parser.parse_args()
    trees = [Path(t).resolve() for t in args.trees.split(",")]
    if len(trees) != 2 or not all((t / "platform" / "tether").is_dir() for t in trees):
        parser.error("--trees: two checkouts of this repository, comma-separated")
    warm_up()
    pools = asyncio.run(template_vectors(64, random.Random(1)))
    seen: dict[Path, dict[str, list[float]]] = {tree: {} for tree in trees}
    with ExitStack() as stack:
        loaded = {tree: stack.enter_context(_loaded(tree, args.memories, pools)) for tree in trees}
        print(f"# N={args.memories:,}; {args.rounds} rounds; {os.cpu_count()} CPUs", flush=True)
        for r in range(args.rounds):
            for tree in trees if r % 2 == 0 else trees[::-1]:
                found = _round(loaded[tree], args)
                for name, value in found.items():
                    seen[tree].setdefault(name, []).append(value)
                cells = "  ".join(f"{name} {value:.1f}" for name, value in found.items())
                print(f"round {r} {tree.name}: {cells}", flush=True)
    first, second = trees
    print(f"\n## median over {args.rounds} rounds, and the rounds' range")
    print("(latencies in ms; cpu: ms of API, worker and Postgres processes per request or turn)")
    print(f"| measure | {first.name} | {second.name} | {second.name} / {first.name} |")
    print("| --- | --- | --- | --- |")
    for name in seen[first]:
        a, b = seen[first][name], seen[second][name]
        ma, mb = statistics.median(a), statistics.median(b)
        print(
            f"| {name} | {ma:.1f} ({min(a):.1f}-{max(a):.1f}) | {mb:.1f} ({min(b):.1f}-"
            f"{max(b):.1f}) | {mb / ma:.2f} |"
        )


if __name__ == "__main__":
    main()
