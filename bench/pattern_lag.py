"""Event-loop lag while a tenant's hostile privacy patterns meet hostile turns.

    .venv/bin/python bench/pattern_lag.py --seconds 20

One embedded Postgres + Redis, the real app in this process (ASGI, no network), so the
requests run on the same event loop as a ticker task that sleeps 5 ms and records how
late it wakes: that lateness is what every other request on the loop (another tenant's
/health or /v1/resolve) would wait. Tenant A registers the two patterns the old vetting
let through, ``(?:a?){28}a{28}`` and ``\\d*\\d*\\d*!``, plus 48 more of the costliest kind
RE2 accepts, and sends batches of 100 turns of 8,000 characters each built to make them
work; tenant B meanwhile calls /health. Prints the ticker's lag p50/p95/max, the
hostile batches' latency and B's /health latency.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

import httpx
from _harness import services

from tenancy.access.schemas import ApiKeyCreate
from tenancy.access.services import ApiKeyService, TenantService
from tenancy.enums import Role
from tether.app import bind_resources, create_app, with_outer_middleware
from tether.core.database import create_session_factory, transaction
from tether.core.ids import TenantId
from tether.core.resources import open_resources
from tether.core.settings import Settings

HOSTILE = ["(?:a?){28}a{28}", r"\d*\d*\d*!", "a.*b|a", r"[ab]{0,100}a[ab]{25}x"]
TEXTS = ["a" * 8000, "1" * 8000, "ab" * 4000, "a" * 28, "1" * 400]
TICK = 0.005


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def ticker(lags: list[float], stop: asyncio.Event) -> None:
    while not stop.is_set():
        started = time.perf_counter()
        await asyncio.sleep(TICK)
        lags.append(time.perf_counter() - started - TICK)


async def gateway_key(settings: Settings, name: str) -> tuple[str, str]:
    async with (
        open_resources(settings) as resources,
        transaction(create_session_factory(resources.engine)) as session,
    ):
        tenant = await TenantService(session).create(name, "local")
        key = await ApiKeyService(session, TenantId(tenant.tenant_id)).issue(
            ApiKeyCreate(role=Role.GATEWAY)
        )
    return tenant.admin_token, key.token


async def hostile(
    client: httpx.AsyncClient, headers: Any, seconds: float, batch: int
) -> list[float]:
    body = {"user": {"external_id": "u"}, "facet": "default",
            "persona": {"external_id": "p", "creator_external_id": "c"}}  # fmt: skip
    rid = (await client.post("/v1/resolve", json=body, headers=headers)).json()["relationship_id"]
    took, deadline, n = [], time.monotonic() + seconds, 0
    while time.monotonic() < deadline:
        turns = [
            {
                "session_id": "s",
                "role": "user",
                "text": (str(n) + TEXTS[(n + i) % len(TEXTS)])[:8000],
            }
            for i in range(batch)
        ]
        n += 1
        started = time.perf_counter()
        sent = await client.post(
            f"/v1/relationships/{rid}/turns", json={"turns": turns}, headers=headers
        )
        took.append(time.perf_counter() - started)
        assert sent.status_code == 202, sent.text
    return took


async def health(client: httpx.AsyncClient, seconds: float) -> list[float]:
    took, deadline = [], time.monotonic() + seconds
    while time.monotonic() < deadline:
        started = time.perf_counter()
        await client.get("/health")
        took.append(time.perf_counter() - started)
        await asyncio.sleep(0.05)
    return took


async def run(
    database_url: str, redis_url: str, seconds: float, patterns_count: int, batch: int
) -> None:
    settings = Settings(database_url=database_url, redis_url=redis_url)
    admin, gateway = await gateway_key(settings, "hostile")
    app = create_app(settings)
    async with open_resources(settings) as resources:
        bind_resources(app, resources)
        transport = httpx.ASGITransport(app=with_outer_middleware(app))
        async with httpx.AsyncClient(transport=transport, base_url="http://b") as client:
            patterns = [{"tag": f"H{i}", "pattern": HOSTILE[i % len(HOSTILE)] + "x" * (i // 4)}
                        for i in range(patterns_count)]  # fmt: skip
            put = await client.put(
                "/v1/tenant/privacy-patterns",
                json={"patterns": patterns},
                headers={"Authorization": f"Bearer {admin}"},
            )
            assert put.status_code == 200, put.text
            lags: list[float] = []
            stop = asyncio.Event()
            tick = asyncio.create_task(ticker(lags, stop))
            headers = {"Authorization": f"Bearer {gateway}"}
            batches, probes = await asyncio.gather(
                hostile(client, headers, seconds, batch), health(client, seconds)
            )
            stop.set()
            await tick
        app.state.partitions.close()
    ms = [lag * 1000 for lag in lags]
    print(f"hostile requests: {len(batches)} of {batch} turn(s) of up to 8,000 chars, "
          f"{patterns_count} patterns; latency p50 {statistics.median(batches) * 1000:.0f} ms, "
          f"max {max(batches) * 1000:.0f} ms")  # fmt: skip
    health_ms = [p * 1000 for p in probes]
    print(f"/health meanwhile: p50 {statistics.median(health_ms):.1f} ms, "
          f"p95 {percentile(health_ms, 0.95):.1f} ms, max {max(health_ms):.1f} ms")  # fmt: skip
    print(f"event-loop lag ({len(ms)} ticks of {TICK * 1000:.0f} ms): "
          f"p50 {statistics.median(ms):.2f} ms, "
          f"p95 {percentile(ms, 0.95):.2f} ms, max {max(ms):.2f} ms")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--batch", type=int, default=1, help="turns per request (1..100)")
    parser.add_argument("--patterns", type=int, default=50, help="0: built-ins only (baseline)")
    args = parser.parse_args()
    with services() as (database_url, redis_url):
        asyncio.run(run(database_url, redis_url, args.seconds, args.patterns, args.batch))


if __name__ == "__main__":
    main()
