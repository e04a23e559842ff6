"""Recall at scale: POST /search and /v1/context over HTTP on loopback with N memories.

    cd bench && ../.venv/bin/python recall_scale.py --memories 10000
    cd bench && ../.venv/bin/python recall_scale.py --memories 10000,1000000
    cd bench && ../.venv/bin/python recall_scale.py --memories 10000 --setup serve

For each N: a fresh embedded Postgres + Redis and N memories loaded as _population.py
says (a quarter of them in 5,000-memory relationships). The server is production's: two
API processes, a socket each (two pods, decision 0029), connecting as ``tether_app``
(row-level security), logging as ``tether serve`` does, and the Celery worker with beat
as ``tether serve`` starts it, so the reinforcement every recall queues is executed as
in service. ``--serve`` measures ``tether serve`` itself (what ``make run`` runs: one API
process, connecting as the database owner). One client process measures at c=1:

- hot: partitions in the hot tiers, each read once by the measuring process first;
- cold: the first request after the partition's version token and Redis copy were
  deleted, so it reads Postgres; one at a time, each after the previous one's fill;
- after: the same request sent again right after a cold one, while the fill the cold
  one started runs (what a conversation's next message meets if it comes at once);

for small (5-50 memories) and large (5,000) relationships; then /v1/context throughput
at ``--concurrency`` on hot partitions. Prints a table of p50 / p95 per class.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import redis
from _harness import (
    Run,
    api_pids,
    api_server,
    cpu_ms,
    hot_redis_url,
    load,
    post,
    postmaster_pid,
    served,
    services,
    worker,
)
from _population import (
    BODIES,
    Pools,
    Population,
    invalidate,
    populate,
    relationship_sizes,
    settle,
    template_vectors,
    unfilled,
)

from tether.recall.text import warm_up

_LENGTH = re.compile(rb"content-length: (\d+)", re.IGNORECASE)
_TIER = re.compile(rb'"tier":"([a-z]+)"')


@dataclass
class Seen:
    """Latencies of one class, and the tiers its /search answers named."""

    latencies_ms: list[float] = field(default_factory=list)
    tiers: Counter[str] = field(default_factory=Counter)
    cpu_ms: float = float("nan")  # of the server's and Postgres's processes, per request

    def pct(self, q: float) -> float:
        return Run().pct(self.latencies_ms, q)

    def line(self, name: str) -> str:
        tiers = dict(self.tiers) or "-"
        return (
            f"{name:30} n={len(self.latencies_ms):5}  p50={self.pct(0.5):7.2f}  "
            f"p95={self.pct(0.95):7.2f}  p99={self.pct(0.99):7.2f} ms  "
            f"cpu {self.cpu_ms:5.1f} ms/request  tiers={tiers}"
        )


async def _send(port: int, requests: list[bytes], seen: Seen, skip: int) -> None:
    """``requests`` one after another on one keep-alive connection, the first ``skip``
    of them not recorded."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        for n, request in enumerate(requests):
            started = time.perf_counter()
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = _LENGTH.search(head)
            body = await reader.readexactly(int(length.group(1)) if length else 0)
            if int(head[9:12]) != 200:
                raise RuntimeError(f"answer {head[:12]!r}: {body[:200]!r}")
            if n < skip:
                continue
            seen.latencies_ms.append((time.perf_counter() - started) * 1000)
            if tier := _TIER.search(body):
                seen.tiers[tier.group(1).decode()] += 1
    finally:
        writer.close()


@dataclass
class Bench:
    """The latency classes against one API port."""

    port: int
    token: str
    population: Population
    redis_client: redis.Redis  # the hot tier's Redis
    rng: random.Random
    roots: list[int] = field(default_factory=list)  # the server's processes (cpu_ms)

    def requests(self, endpoint: str, indexes: list[int], count: int) -> list[bytes]:
        chosen = [indexes[j % len(indexes)] for j in range(count)]
        bodies = (BODIES[endpoint](self.population, i, self.rng) for i in chosen)
        return [post(path, self.token, body) for path, body in bodies]

    def send(self, requests: list[bytes], seen: Seen | None = None, skip: int = 0) -> Seen:
        seen = Seen() if seen is None else seen
        asyncio.run(_send(self.port, requests, seen, skip))
        return seen

    def warm(self, endpoint: str, indexes: list[int]) -> None:
        """Every partition of ``indexes`` in both hot tiers (filled by earlier reads)."""
        for _ in range(3):
            if not (cold := unfilled(self.redis_client, self.population, indexes)):
                break
            load(self.port, self.requests(endpoint, cold, len(cold)), 4)
            settle(self.redis_client, self.population, cold)

    def hot(self, endpoint: str, indexes: list[int], count: int) -> Seen:
        """``count`` requests on one connection (so one API process), after it read each
        partition once (not recorded: from Redis if the other process filled it)."""
        self.warm(endpoint, indexes)
        once = self.requests(endpoint, indexes, len(indexes))
        before = cpu_ms(self.roots)
        seen = self.send(once + self.requests(endpoint, indexes, count), skip=len(once))
        seen.cpu_ms = (cpu_ms(self.roots) - before) / (len(once) + count)
        return seen

    def cold(self, endpoint: str, indexes: list[int], count: int, again: bool = False) -> Seen:
        """One cold read at a time, each after the previous one's fill; ``again``: what
        is measured is the same request sent right after the cold one."""
        seen, before = Seen(), cpu_ms(self.roots)
        for j in range(count):
            i = indexes[j % len(indexes)]
            invalidate(self.redis_client, self.population, [i])
            (request,) = self.requests(endpoint, [i], 1)
            self.send([request, request] if again else [request], seen, skip=int(again))
            settle(self.redis_client, self.population, [i])
        # With the fills the cold reads started, and the first of each pair (``again``).
        seen.cpu_ms = (cpu_ms(self.roots) - before) / count
        return seen

    def throughput(self, indexes: list[int], concurrency: int, seconds: float) -> Run:
        self.warm("context", indexes)
        return load(self.port, self.requests("context", indexes, 5_000), concurrency, seconds)


# The classes: (endpoint, temperature, size); temperature "after" is ``Bench.cold`` with
# ``again``.
CLASSES = [
    (endpoint, temperature, size)
    for endpoint in ("search", "context")
    for temperature in ("hot", "cold", "after")
    for size in ("small", "large")
]


def measure(bench: Bench, args: argparse.Namespace) -> dict[str, Seen | Run]:
    """Every latency class at c=1, then the throughput runs."""
    population, rng = bench.population, bench.rng
    small = population.pick(5, 50, 200, rng)
    large = population.pick(args.large_size, args.large_size, 50, rng)
    found: dict[str, Seen | Run] = {}
    for endpoint, temperature, size in CLASSES:
        indexes = small if size == "small" else large
        name = f"{endpoint} {temperature}-{size}"
        if temperature == "hot":
            seen = bench.hot(endpoint, indexes, args.requests)
        else:
            count = args.cold_requests // (1 if size == "small" else 3)
            seen = bench.cold(endpoint, indexes, count, again=temperature == "after")
        found[name] = seen
        print(seen.line(name), flush=True)
    for size, indexes in (("small", small), ("large", large)):
        run = bench.throughput(indexes, args.concurrency, args.seconds)
        found[f"context hot-{size} c={args.concurrency}"] = run
        print(run.summary(f"context hot-{size} throughput (c={args.concurrency})"), flush=True)
    return found


@contextmanager
def server(
    database_url: str, redis_url: str, data_dir: Path, setup: str = "default"
) -> Iterator[tuple[int, list[int]]]:
    """The server of ``setup`` (see ``SETUPS``). Yields its port, and the processes at the
    root of the server's (and Postgres's) process trees, for ``_harness.cpu_ms``."""
    postgres = postmaster_pid(database_url)
    if setup == "serve":
        with served(database_url, redis_url, data_dir) as (port, pid):
            yield port, [pid, postgres]
        return
    with api_server(database_url, redis_url, 2, app_role=True) as port:
        if setup == "no-worker":
            yield port, [*api_pids(port), postgres]
            return
        with worker(database_url, redis_url, data_dir, app_role=True) as pool:
            yield port, [*api_pids(port), pool, postgres]


SETUPS = {
    "default": "two API processes, a socket each (two pods, decision 0029), as tether_app, "
    "and the worker with beat as `tether serve` starts it",
    "serve": "`tether serve` itself, as `make run` runs it: one API process, its worker "
    "with beat, connecting as the database owner",
    "no-worker": "two API processes as tether_app and no worker: the setup of the benches "
    "before this page (recalls queue reinforcement that nothing executes)",
}


def run_scale(n: int, args: argparse.Namespace, pools: Pools) -> dict[str, Seen | Run]:
    rng = random.Random(n)
    sizes = relationship_sizes(n, args.large_size, 0.25, rng)
    with services() as (database_url, redis_url), tempfile.TemporaryDirectory() as data:
        started = time.perf_counter()
        token, population, _ = populate(database_url, redis_url, sizes, pools, rng)
        print(
            f"\n## N={n:,} memories in {len(sizes):,} relationships, loaded in "
            f"{time.perf_counter() - started:.0f} s",
            flush=True,
        )
        with server(database_url, redis_url, Path(data), args.setup) as (port, roots):
            client = redis.Redis.from_url(hot_redis_url())
            return measure(Bench(port, token, population, client, rng, roots), args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", default="10000", help="comma-separated N")
    parser.add_argument("--large-size", type=int, default=5_000)
    parser.add_argument("--requests", type=int, default=400, help="per hot class")
    parser.add_argument("--cold-requests", type=int, default=150, help="per small cold class")
    parser.add_argument("--seconds", type=float, default=10, help="per throughput run")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--setup", choices=tuple(SETUPS), default="default")
    args = parser.parse_args()
    scales = [int(n) for n in args.memories.split(",")]
    warm_up()
    pools = asyncio.run(template_vectors(64, random.Random(1)))
    print(f"# {SETUPS[args.setup]}; c=1 classes from one client; {os.cpu_count()} CPUs")
    results = {n: run_scale(n, args, pools) for n in scales}
    print("\n## p50 / p95 end to end (ms); throughput (requests/s)")
    print("| class | " + " | ".join(f"{n:,}" for n in scales) + " |")
    print("| --- |" + " --- |" * len(scales))
    for name in results[scales[0]]:
        cells = []
        for n in scales:
            found = results[n][name]
            if isinstance(found, Run):
                cells.append(f"{len(found.latencies_ms) / found.seconds:.0f}/s")
            else:
                cells.append(f"{found.pct(0.5):.1f} / {found.pct(0.95):.1f}")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
