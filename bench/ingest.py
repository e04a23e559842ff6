"""Turn ingestion over HTTP on loopback, and how fast the worker makes turns durable.

    .venv/bin/python bench/ingest.py --seconds 20 --sustain-seconds 60

Phases (one embedded Postgres + Redis, the production ASGI app under uvicorn, a real
Celery worker):
1. accepted: batches of 20 turns as fast as the API takes them (turns/s accepted,
   request latency); the worker drains concurrently.
2. durable: the time until every accepted turn is in Postgres (end-to-end turns/s).
3. sustained: 500 turns/s for --sustain-seconds; the lag between acceptance and
   durability, sampled every 0.25 s (p50/p95/max).
4. --check: 10,000 turns over 1,000 relationships from 20 concurrent clients; every
   accepted turn is stored once, under its own relationship.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import subprocess
import sys
import time
import uuid
from bisect import bisect_right

from _harness import api_server, load, post, seed, services
from sqlalchemy import text

from tether.core.database import create_engine
from tether.core.settings import Settings

_counter = itertools.count()


def batch(relationship: str, token: str, size: int) -> bytes:
    turns = [
        {
            "session_id": f"s-{relationship[:8]}",
            "role": "user" if i % 2 == 0 else "assistant",
            "text": f"turn {next(_counter)}: 今天天气不错, let's talk about hiking "
            f"#{uuid.uuid4().hex[:6]}",
        }
        for i in range(size)
    ]
    return post(
        f"/v1/relationships/{relationship}/turns", token, json.dumps({"turns": turns}).encode()
    )


def start_worker(database_url: str, redis_url: str, concurrency: int) -> subprocess.Popen[bytes]:
    env = os.environ | {
        "TETHER_DATABASE_URL": database_url,
        "TETHER_REDIS_URL": redis_url,
        "TETHER_LOG_LEVEL": "WARNING",
    }
    command = [sys.executable, "-m", "celery", "-A", "workers.app", "worker"]
    command += ["--loglevel", "WARNING", "--concurrency", str(concurrency)]
    return subprocess.Popen(command, env=env)


async def durable_count(settings: Settings) -> int:
    engine = create_engine(settings)
    async with engine.connect() as conn:
        count = await conn.scalar(text("SELECT count(*) FROM turns"))
    await engine.dispose()
    return int(count or 0)


def wait_durable(settings: Settings, expected: int, timeout: float) -> float:
    started = time.monotonic()
    while asyncio.run(durable_count(settings)) < expected:
        if time.monotonic() - started > timeout:
            raise SystemExit(f"only {asyncio.run(durable_count(settings))}/{expected} durable")
        time.sleep(0.1)
    return time.monotonic() - started


async def relationship_ids(settings: Settings, limit: int) -> list[str]:
    engine = create_engine(settings)
    async with engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT id FROM relationships ORDER BY id LIMIT :n"), {"n": limit}
        )
        ids = [str(r[0]) for r in rows]
    await engine.dispose()
    return ids


def sustained(
    port: int, token: str, rids: list[str], settings: Settings, rate: int, seconds: float
) -> None:
    per_tick, tick = max(1, rate // 20 // 4), 0.25  # batches of 20, four ticks a second
    accepted_at: list[tuple[float, int]] = []  # (time, cumulative accepted)
    base = asyncio.run(durable_count(settings))
    total = 0
    lags: list[float] = []
    cycle = itertools.cycle(rids)
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        tick_start = time.monotonic()
        requests = [batch(next(cycle), token, 20) for _ in range(per_tick)]
        load(port, requests, min(4, per_tick))
        total += 20 * per_tick
        accepted_at.append((time.monotonic(), total))
        durable = asyncio.run(durable_count(settings)) - base
        # Lag: how long ago the API had accepted as many turns as are durable now.
        index = bisect_right([n for _, n in accepted_at], durable)
        if index < len(accepted_at):
            lags.append(time.monotonic() - accepted_at[index][0])
        else:
            lags.append(0.0)
        time.sleep(max(0.0, tick - (time.monotonic() - tick_start)))
    achieved = total / (time.monotonic() - started)
    drain = wait_durable(settings, base + total, 120)
    lags.sort()
    p50, p95 = lags[len(lags) // 2], lags[int(len(lags) * 0.95)]
    print(
        f"sustained {achieved:.0f} turns/s for {seconds:.0f} s: lag p50={p50:.2f} s "
        f"p95={p95:.2f} s max={lags[-1]:.2f} s; drained {drain:.2f} s after the last"
    )


async def check(port: int, token: str, rids: list[str], settings: Settings) -> None:
    import httpx

    expected: dict[str, str] = {}
    queue: asyncio.Queue[str] = asyncio.Queue()
    for rid in rids[:1000]:
        queue.put_nowait(rid)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
        headers = {"Authorization": f"Bearer {token}"}

        async def worker() -> None:
            while not queue.empty():
                rid = queue.get_nowait()
                turns = [
                    {"session_id": "check", "role": "user", "text": f"check {rid} {i}"}
                    for i in range(10)
                ]
                response = await client.post(
                    f"/v1/relationships/{rid}/turns", json={"turns": turns}, headers=headers
                )
                for result in response.json()["results"]:
                    assert result["status"] == "accepted", result
                    expected[result["turn_id"]] = rid

        started = time.monotonic()
        await asyncio.gather(*(worker() for _ in range(20)))
        accepted = time.monotonic() - started
    engine = create_engine(settings)
    deadline = time.monotonic() + 120
    stored: dict[str, str] = {}
    while time.monotonic() < deadline:
        async with engine.connect() as conn:
            rows = await conn.execute(
                text("SELECT id, relationship_id FROM turns WHERE session_id = 'check'")
            )
            stored = {str(t): str(r) for t, r in rows}
        if len(stored) >= len(expected):
            break
        await asyncio.sleep(0.2)
    await engine.dispose()
    lost = set(expected) - set(stored)
    misplaced = [t for t, r in stored.items() if expected.get(t) != r]
    print(
        f"check: {len(expected)} turns over 1,000 relationships from 20 clients accepted"
        f" in {accepted:.1f} s;"
        f" stored {len(stored)}, lost {len(lost)}, misplaced or unexpected {len(misplaced)}"
    )
    if lost or misplaced:
        raise SystemExit("the write path lost or misplaced turns")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--relationships", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--worker-concurrency", type=int, default=2)
    parser.add_argument("--sustain-rate", type=int, default=500)
    parser.add_argument("--sustain-seconds", type=float, default=60)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    with services() as (database_url, redis_url):
        token = asyncio.run(seed(database_url, redis_url, args.relationships, 100))
        settings = Settings(database_url=database_url, redis_url=redis_url)
        rids = asyncio.run(relationship_ids(settings, args.relationships))
        print(
            f"# {args.relationships} relationships, batches of 20 turns,"
            f" {args.workers} API workers,"
            f" 1 Celery worker (concurrency {args.worker_concurrency}), {os.cpu_count()} CPUs"
        )
        worker = start_worker(database_url, redis_url, args.worker_concurrency)
        try:
            with api_server(database_url, redis_url, args.workers) as port:
                base = asyncio.run(durable_count(settings))
                load(port, [batch(r, token, 20) for r in rids[:200]], 8)  # warm caches
                requests = [
                    batch(r, token, 20) for r in itertools.islice(itertools.cycle(rids), 40_000)
                ]
                run = load(port, requests, args.concurrency, seconds=args.seconds)
                accepted = 20 * run.statuses.get(202, 0)
                print(run.summary(f"accept 20-turn batches (c={args.concurrency})"))
                print(f"accepted {accepted / run.seconds:,.0f} turns/s")
                drain = wait_durable(settings, base + 200 * 20 + accepted, 600)
                total = run.seconds + drain
                print(
                    f"durable: all {accepted:,} turns in Postgres {drain:.1f} s after the last was"
                    f" accepted; end-to-end {accepted / total:,.0f} turns/s"
                )
                sustained(port, token, rids, settings, args.sustain_rate, args.sustain_seconds)
                if args.check:
                    asyncio.run(check(port, token, rids, settings))
        finally:
            worker.terminate()
            worker.wait(30)


if __name__ == "__main__":
    main()
