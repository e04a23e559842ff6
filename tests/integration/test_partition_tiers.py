"""How a read finds its partition's tier: this process's copy, the Redis copy, or
Postgres. A process without a copy asks for the version token and whether a Redis copy
exists in one round trip, and fetches the copy only if it exists; every answer is the
same whichever tier served it."""

from __future__ import annotations

from typing import Any

import pytest
from redis.asyncio import Redis

from tests.support import app_client, resolve_body, wait_for_hot_copy
from tether.core.resources import Resources
from tether.core.settings import Settings

pytestmark = pytest.mark.integration

MEMORIES = [
    "The user plays the cello in a string quartet",
    "用户喜欢吃四川火锅",
    "The user's sister lives in Lyon",
]
QUERY = {"query": "cello 火锅", "k": 5}


async def _getex_calls(redis: Redis) -> int:
    stats: dict[str, Any] = await redis.info("commandstats")
    return int(stats.get("cmdstat_getex", {}).get("calls", 0))


async def _search(client: Any, headers: dict[str, str], rid: str) -> dict[str, Any]:
    answer = await client.post(f"/v1/relationships/{rid}/search", json=QUERY, headers=headers)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def _ranking(body: dict[str, Any]) -> list[str]:
    return [hit["id"] for hit in body["items"]]


async def test_a_process_without_a_copy_fetches_the_redis_copy_only_if_it_exists(
    settings: Settings, client: Any, make_tenant: Any, resources: Resources
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    resolved = await client.post("/v1/resolve", json=resolve_body("tiers"), headers=headers)
    rid = resolved.json()["relationship_id"]
    body = {"memories": [{"content": text} for text in MEMORIES]}
    created = await client.post(
        f"/v1/relationships/{rid}/memories/batch", json=body, headers=headers
    )
    assert created.status_code == 200, created.text

    first = await _search(client, headers, rid)
    assert first["tier"] == "cold"
    # A cold read sends the query's vector to Postgres: embedded before it was loaded.
    assert first["timings_ms"]["embed"] < first["timings_ms"]["load"]
    await wait_for_hot_copy(resources.hot_redis, rid)
    assert (await _search(client, headers, rid))["tier"] == "local"

    # Another process: no copy of its own, so it asks whether Redis has one; it does.
    async with app_client(settings) as other:
        before = await _getex_calls(resources.hot_redis)
        from_redis = await _search(other, headers, rid)
        assert from_redis["tier"] == "hot"
        assert await _getex_calls(resources.hot_redis) == before + 1

    # The Redis copy expires while the version token stays (its TTL is far longer):
    # a third process reads Postgres without asking for the copy.
    (blob,) = await resources.hot_redis.keys(f"tether:hot*:*:{rid}")
    await resources.hot_redis.delete(blob)
    async with app_client(settings) as third:
        before = await _getex_calls(resources.hot_redis)
        cold = await _search(third, headers, rid)
        assert cold["tier"] == "cold"
        assert await _getex_calls(resources.hot_redis) == before
        await wait_for_hot_copy(resources.hot_redis, rid)  # its fill, before it shuts down

    for served in (from_redis, cold):
        assert _ranking(served) == _ranking(first)
        assert served["degraded"] == []
