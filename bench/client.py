"""The Python SDK as a chat gateway uses it, against a running Tether (`make run`).

    .venv/bin/tether tenant create bench > bench.json
    .venv/bin/python bench/client.py --admin-file bench.json [--messages 400] [--turns 20000]

Prints, per chat message, the latency the gateway helper adds (one `chat.message()`:
resolve from its cache + context within the deadline + capture queued) as p50/p95/p99,
next to the same context request sent with plain httpx (what the SDK itself adds), the
time `capture()` holds the caller, and capture throughput through the SDK's queue (turns
accepted by the API per second, sync and async clients).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
import uuid

import httpx
from tether_client import AsyncTether, Tether

PERSONA = {"persona": "luna", "creator": "studio-7"}
MESSAGES = ["周末去哪儿玩好？", "What should I cook tonight?", "我最近有点累", "Any book to read?"]


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def line(name: str, ms: list[float]) -> str:
    return (
        f"{name:44} n={len(ms):6}  p50 {pct(ms, 50):7.2f} ms  p95 {pct(ms, 95):7.2f} ms  "
        f"p99 {pct(ms, 99):7.2f} ms"
    )


def gateway_latency(key: str, url: str, messages: int) -> None:
    with Tether(key, base_url=url) as tether:
        chat = tether.gateway(deadline=1.0)
        users = [f"bench-{uuid.uuid4().hex[:8]}" for _ in range(20)]
        for user in users:  # resolve once each: the gateway caches it
            chat.message(user=user, **PERSONA, text="你好", session_id="s")
        took, degraded = [], 0
        for i in range(messages):
            started = time.perf_counter()
            ctx = chat.message(user=users[i % 20], **PERSONA, text=MESSAGES[i % 4], session_id="s")
            took.append((time.perf_counter() - started) * 1000)
            degraded += not ctx.memory
        rid = chat.message(user=users[0], **PERSONA, text="hi", session_id="s").relationship_id
        capture = []
        for i in range(500):  # fewer than the queue holds: none dropped
            started = time.perf_counter()
            tether.capture(rid, f"held {i}", session_id="hold")
            capture.append((time.perf_counter() - started) * 1000)
        tether.flush(60)
    raw = []
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}) as http:
        for i in range(messages):
            body = {
                "relationship_id": rid,
                "query": MESSAGES[i % 4],
                "messages": [{"role": "user", "content": MESSAGES[i % 4]}],
            }
            started = time.perf_counter()
            http.post("/v1/context", json=body).raise_for_status()
            raw.append((time.perf_counter() - started) * 1000)
    print(line("gateway chat.message() (cached resolve)", took) + f"  no-memory {degraded}")
    print(line("same context request, plain httpx", raw))
    print(line("capture() on the caller's thread", capture))


def sync_throughput(key: str, url: str, turns: int, relationships: list[str]) -> None:
    with Tether(key, base_url=url, capture_queue_size=turns) as tether:
        started = time.perf_counter()
        for i in range(turns):
            tether.capture(
                relationships[i % len(relationships)], f"sync {i} 第{i}轮", session_id="t"
            )
        queued = time.perf_counter() - started
        tether.flush(600)
        took = time.perf_counter() - started
        stats = tether.capture_stats()
    print(
        f"capture throughput, sync client: {stats.sent / took:8.0f} turns/s "
        f"({stats.sent} sent, {stats.dropped} dropped, {stats.failed} failed in {took:.1f} s; "
        f"queueing took {queued * 1000:.0f} ms)"
    )


async def async_throughput(key: str, url: str, turns: int, relationships: list[str]) -> None:
    async with AsyncTether(key, base_url=url, capture_queue_size=turns) as tether:
        started = time.perf_counter()
        for i in range(turns):
            tether.capture(
                relationships[i % len(relationships)], f"async {i} 第{i}轮", session_id="t"
            )
        await tether.flush(600)
        took = time.perf_counter() - started
        stats = tether.capture_stats()
    print(
        f"capture throughput, async client: {stats.sent / took:7.0f} turns/s "
        f"({stats.sent} sent, {stats.dropped} dropped, {stats.failed} failed in {took:.1f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--admin-file", default="bench.json", help="`tether tenant create` output")
    parser.add_argument("--url", default=os.environ.get("TETHER_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--messages", type=int, default=400)
    parser.add_argument("--turns", type=int, default=20_000)
    parser.add_argument("--relationships", type=int, default=50)
    args = parser.parse_args()
    with open(args.admin_file, encoding="utf-8") as handle:
        admin_key = json.load(handle)["admin_token"]
    with Tether(admin_key, base_url=args.url) as admin:
        key = admin.api_keys.create(role="gateway", name="bench").token
    with Tether(key, base_url=args.url) as tether:
        rids = [
            tether.relationships.resolve(
                user={"external_id": f"tp-{uuid.uuid4().hex[:8]}"},
                persona={"external_id": "luna", "creator_external_id": "studio-7"},
            ).relationship_id
            for _ in range(args.relationships)
        ]
    print(f"# {args.url}, {os.cpu_count()} cores; turns over {args.relationships} relationships")
    gateway_latency(key, args.url, args.messages)
    sync_throughput(key, args.url, args.turns, rids)
    asyncio.run(async_throughput(key, args.url, args.turns, rids))


if __name__ == "__main__":
    main()
