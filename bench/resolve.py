"""POST /v1/resolve over HTTP on loopback with N relationships in the database.

    .venv/bin/python bench/resolve.py --relationships 100000 --seconds 15

Prints p50/p95/p99 (end to end and the server's own time from Server-Timing) and
throughput for: cache misses on existing relationships, misses that create a new
relationship, cache hits at concurrency 1 and under load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random

from _harness import api_server, load, post, seed, services


def body(user: int, creators: int) -> bytes:
    c = 1 + user % creators
    return json.dumps(
        {
            "user": {"external_id": f"u-{user}"},
            "persona": {"external_id": f"p-{c}", "creator_external_id": f"c-{c}"},
        }
    ).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--relationships", type=int, default=100_000)
    parser.add_argument("--creators", type=int, default=1_000)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sample", type=int, default=5_000)
    args = parser.parse_args()
    rng = random.Random(7)
    with services() as (database_url, redis_url):
        token = asyncio.run(seed(database_url, redis_url, args.relationships, args.creators))
        users = rng.sample(range(1, args.relationships + 1), args.sample)
        existing = [post("/v1/resolve", token, body(u, args.creators)) for u in users]
        new = [
            post("/v1/resolve", token, body(args.relationships + 1 + i, args.creators))
            for i in range(args.sample)
        ]
        print(
            f"# {args.relationships} relationships, {args.creators} creators, "
            f"{args.workers} API workers, load from 1 client process"
        )
        with api_server(database_url, redis_url, args.workers) as port:
            load(port, existing[:200], 4)  # warm connections, auth cache, JIT-free paths
            print(load(port, existing[200:], 8).summary("miss: existing relationship (c=8)"))
            print(load(port, new, 8).summary("miss: creates the relationship (c=8)"))
            print(load(port, existing, 1, seconds=args.seconds / 3).summary("hit (c=1)"))
            hits = load(port, existing, args.concurrency, seconds=args.seconds)
            print(hits.summary(f"hit (c={args.concurrency})"))


if __name__ == "__main__":
    main()
