"""POST /v1/context while the cache Redis is stalled: it accepts connections and never
answers (a hung server, or a network that drops packets).

    cd bench && ../.venv/bin/python redis_stall.py --seconds 10

Runs the API twice against the same stalled listener: with the stall pause off
(``TETHER_REDIS_STALL_SECONDS=0``, every cache read waits out its 0.5 s timeout) and on
(the default). Prints p50/p95/p99 and throughput for both, and the ratio. Memories are
written first through the API with a working Redis. The Celery broker stays on the
working Redis, so only the cache is stalled.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
from collections.abc import Iterator
from contextlib import contextmanager

import asyncpg
import httpx
from _harness import api_server, load, post, seed, services


@contextmanager
def stalled_listener() -> Iterator[str]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1024)
    try:
        yield f"redis://127.0.0.1:{listener.getsockname()[1]}/0"
    finally:
        listener.close()


async def _relationship_ids(database_url: str, count: int) -> list[str]:
    connection = await asyncpg.connect(database_url)
    try:
        rows = await connection.fetch("SELECT id FROM relationships LIMIT $1", count)
    finally:
        await connection.close()
    return [str(row["id"]) for row in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--relationships", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    rng = random.Random(3)
    with services() as (database_url, redis_url):
        token = asyncio.run(seed(database_url, redis_url, args.relationships, 5))
        ids = asyncio.run(_relationship_ids(database_url, args.relationships))
        headers = {"Authorization": f"Bearer {token}"}
        with (
            api_server(database_url, redis_url, 1) as port,
            httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers) as client,
        ):
            for rid in ids:
                memory = {"content": f"The user's sister lives in Lyon ({rid[:4]})"}
                client.post(f"/v1/relationships/{rid}/memories", json=memory)
        bodies = [
            post(
                "/v1/context",
                token,
                json.dumps({"relationship_id": rng.choice(ids), "query": "sister"}).encode(),
            )
            for _ in range(2_000)
        ]
        print(
            f"# {args.relationships} relationships, 1 API worker, c={args.concurrency}, "
            f"{args.seconds:.0f} s per run, cache Redis stalled, broker on a working Redis"
        )
        p95 = {}
        with stalled_listener() as stalled:
            os.environ["TETHER_BROKER_URL"] = redis_url
            os.environ["TETHER_HOT_REDIS_URL"] = stalled  # the hot tier's cache is stalled too
            for name, pause in (("pause off (0 s)", "0"), ("pause on (2 s)", "2")):
                os.environ["TETHER_REDIS_STALL_SECONDS"] = pause
                with api_server(database_url, stalled, 1) as port:
                    load(port, bodies[:20], 4)  # warm-up: model, pools, the first timeouts
                    run = load(port, bodies, args.concurrency, args.seconds)
                print(run.summary(f"context, {name}"))
                p95[name] = run.pct(run.latencies_ms, 0.95)
        off, on = p95.values()
        print(f"p95 with the pause on / off: {on:.1f} / {off:.1f} ms = {on / off:.3f}x")


if __name__ == "__main__":
    main()
