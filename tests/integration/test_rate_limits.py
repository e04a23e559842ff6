"""Requests per second per key and per tenant: token buckets in Redis shared by every
API process, 429 problem bodies with Retry-After and the RateLimit fields, and floods
refused from memory (real Postgres and Redis)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from tests.integration.own_app import own_app

LIMITS = "/v1/tenant/limits"


async def set_limits(client: httpx.AsyncClient, tenant: Any, **chosen: int) -> None:
    answer = await client.put(LIMITS, json=chosen, headers=tenant.admin)
    assert answer.status_code == 200, answer.text
    await asyncio.sleep(1.05)  # the admin's own requests count too: let the buckets empty


async def burst(client: httpx.AsyncClient, headers: Any, n: int) -> list[httpx.Response]:
    """``n`` requests at once."""
    asked = (client.get("/v1/personas", headers=headers) for _ in range(n))
    return list(await asyncio.gather(*asked))


def statuses(answers: list[httpx.Response]) -> list[int]:
    return sorted(a.status_code for a in answers)


async def test_a_key_over_its_rate_gets_429_with_retry_after_and_ratelimit_fields(
    client, make_tenant
) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    await set_limits(client, tenant, key_requests_per_second=1)  # one at a time, 1 s apart
    answers = await burst(client, gateway, 6)
    assert statuses(answers) == [200] + [429] * 5
    ok = next(a for a in answers if a.status_code == 200)
    assert ok.headers["RateLimit-Policy"].startswith('"key";q=1;w=1, "tenant";q=')
    assert ok.headers["RateLimit"].startswith('"key";r=0;t=1, "tenant";r=')
    refused = next(a for a in answers if a.status_code == 429)
    problem = refused.json()
    assert (problem["code"], problem["limit"], problem["quota"]) == (
        "rate_limited",
        "key_requests_per_second",
        1,
    )
    assert 0 < problem["retry_after_ms"] <= 1000
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert refused.headers["Retry-After"] == "1"
    assert refused.headers["RateLimit"] == '"key";r=0;t=1'
    await asyncio.sleep(1.05)
    assert (await client.get("/v1/personas", headers=gateway)).status_code == 200


async def test_a_key_may_burst_up_to_its_burst_then_is_paced(resources, make_tenant) -> None:
    tenant = await make_tenant()
    async with own_app(resources, limits={"burst_seconds": 4.0}) as (client, _):
        gateway = await tenant.key("gateway")
        await set_limits(client, tenant, key_requests_per_second=1)  # 4 at once
        answers = await burst(client, gateway, 8)
        served = [a for a in answers if a.status_code == 200]
        assert 4 <= len(served) <= 5  # a fifth if a second passed meanwhile
        remaining = [int(a.headers["RateLimit"].split(";")[1][2:]) for a in served]
        assert (max(remaining), min(remaining)) == (3, 0)


async def test_requests_over_the_rate_are_spread_not_let_through_at_once(
    client, make_tenant
) -> None:
    """At 10 requests/s with the default burst (a tenth of a second: one request), a
    client sending as fast as it can is served about every 100 ms, not ten at once.
    (Upper bounds: a slow machine serves fewer, never more.)"""
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    await set_limits(client, tenant, key_requests_per_second=10)
    served: list[float] = []
    refused = 0
    started = time.monotonic()
    while time.monotonic() - started < 1.0:
        if (await client.get("/v1/personas", headers=gateway)).status_code == 200:
            served.append(time.monotonic() - started)
        else:
            refused += 1
    assert 1 <= len(served) <= 11  # one at once, then one per 100 ms
    assert sum(at < 0.25 for at in served) <= 3
    assert refused > 0


async def test_one_key_over_its_rate_does_not_hold_back_another_key(client, make_tenant) -> None:
    tenant = await make_tenant()
    noisy, quiet = await tenant.key("gateway"), await tenant.key("gateway")
    await set_limits(client, tenant, key_requests_per_second=1, tenant_requests_per_second=20)
    assert statuses(await burst(client, noisy, 6)) == [200] + [429] * 5
    # The refused requests did not use up the tenant's bucket (it takes two at once).
    assert (await client.get("/v1/personas", headers=quiet)).status_code == 200


async def test_a_tenant_over_its_rate_gets_429_whichever_key_asks(client, make_tenant) -> None:
    tenant = await make_tenant()
    first, second = await tenant.key("gateway"), await tenant.key("gateway")
    await set_limits(client, tenant, key_requests_per_second=100, tenant_requests_per_second=1)
    assert (await client.get("/v1/personas", headers=first)).status_code == 200
    refused = await client.get("/v1/personas", headers=second)
    assert refused.status_code == 429
    assert refused.json()["limit"] == "tenant_requests_per_second"
    assert refused.headers["RateLimit"] == '"tenant";r=0;t=1'


async def test_another_tenant_keeps_its_own_limits(client, make_tenant) -> None:
    strict, other = await make_tenant(), await make_tenant()
    strict_key, other_key = await strict.key("gateway"), await other.key("gateway")
    await set_limits(client, strict, tenant_requests_per_second=1)
    assert statuses(await burst(client, strict_key, 6)) == [200] + [429] * 5
    assert statuses(await burst(client, other_key, 6)) == [200] * 6


async def test_limits_apply_across_api_processes(client, resources, make_tenant) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    await set_limits(client, tenant, key_requests_per_second=1)
    async with own_app(resources) as (other, _):
        answers = await asyncio.gather(
            *(c.get("/v1/personas", headers=gateway) for c in (client, other) for _ in range(4))
        )
    assert statuses(list(answers)) == [200] + [429] * 7


async def _evalsha_calls(resources: Any) -> int:
    stats = await resources.redis.info("commandstats")
    return int(stats.get("cmdstat_evalsha", {}).get("calls", 0))


async def test_a_flood_is_refused_from_memory_once_the_bucket_is_empty(
    client, resources, make_tenant
) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    await set_limits(client, tenant, key_requests_per_second=1)
    answers = [await client.get("/v1/personas", headers=gateway) for _ in range(2)]
    assert [a.status_code for a in answers] == [200, 429]  # the first emptied the bucket
    before = await _evalsha_calls(resources)
    flood = [await client.get("/v1/personas", headers=gateway) for _ in range(5)]
    assert await _evalsha_calls(resources) == before
    assert {a.status_code for a in flood} == {429}
    early, first = flood[-1], answers[-1]
    assert early.json().keys() == first.json().keys()
    assert early.json()["code"] == "rate_limited"
    assert early.headers["content-type"] == "application/problem+json"
    assert early.headers["Retry-After"] == "1"
    assert early.headers["RateLimit"] == '"key";r=0;t=1'
    assert early.headers["x-request-id"] == early.json()["request_id"]
