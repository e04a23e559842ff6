"""Recall when its dependencies fail: an embedding provider that errors or is slow
(lexical-only, said in ``degraded``), and Redis away (partitions from Postgres, the hot
tier refilled when it returns)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import httpx
import pytest

from tests.providers_server import FakeOpenAIServer, Reply
from tests.support import (
    app_client,
    redis_down_client,
    resolve_body,
    stalled_redis,
    wait_for_hot_copy,
)
from tether.core.settings import Settings

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def embedding_server():  # type: ignore[no-untyped-def]
    server = FakeOpenAIServer(dimension=16).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
async def remote_client(settings: Settings, embedding_server) -> AsyncIterator[httpx.AsyncClient]:
    """The app configured with an OpenAI-compatible embedding endpoint we control."""
    remote = settings.model_copy(
        update={
            "embedding": settings.embedding.model_copy(
                update={
                    "kind": "openai",
                    "base_url": embedding_server.base_url,
                    "model": "test-embed",
                    "dimension": 16,
                    # A deadline a loaded CI machine meets (200 ms was missed once).
                    "timeout_seconds": 1.0,
                    "max_retries": 0,
                    "query_timeout_ms": 600,
                }
            )
        }
    )
    async with app_client(remote) as http:
        yield http


async def _relationship(client, headers, user: str) -> str:
    response = await client.post("/v1/resolve", json=resolve_body(user), headers=headers)
    return str(response.json()["relationship_id"])


async def test_a_failing_embedding_provider_degrades_to_lexical(
    make_tenant, remote_client, embedding_server, resources
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid = await _relationship(remote_client, headers, "emb-down")
    url = f"/v1/relationships/{rid}/memories/batch"
    embedding_server.reset()
    embedding_server.enqueue(Reply(status=500))
    body = {"memories": [{"content": "The user plays the cello"}, {"content": "用户养了一只猫"}]}
    created = (await remote_client.post(url, json=body, headers=headers)).json()
    assert created["degraded"] == ["embedding"]  # stored anyway, without vectors
    embedding_server.enqueue(Reply(status=500))
    search = f"/v1/relationships/{rid}/search"
    found = (await remote_client.post(search, json={"query": "cello"}, headers=headers)).json()
    assert found["degraded"] == ["embedding"]
    assert [r["content"] for r in found["items"]] == ["The user plays the cello"]
    assert found["items"][0]["explanation"]["vector_rank"] is None
    embedding_server.enqueue(Reply(delay=2.5))  # slower than the query deadline
    slow = (await remote_client.post(search, json={"query": "猫"}, headers=headers)).json()
    assert slow["degraded"] == ["embedding"]
    assert [r["content"] for r in slow["items"]] == ["用户养了一只猫"]
    embedding_server.enqueue(Reply(status=503))
    context = (
        await remote_client.post(
            "/v1/context", json={"relationship_id": rid, "query": "cello"}, headers=headers
        )
    ).json()
    assert "embedding" in context["degraded"]
    assert "The user plays the cello" in context["context"]
    # The provider is back but no memory has a vector: a cold read (ranked with
    # Postgres's distances) and a hot one (in-process vectors) score alike.
    await wait_for_hot_copy(resources.hot_redis, rid)
    for key in await resources.hot_redis.keys(f"tether:*:*:{rid}"):  # as an invalidation does
        await resources.hot_redis.delete(key)
    cold = (await remote_client.post(search, json={"query": "cello"}, headers=headers)).json()
    await wait_for_hot_copy(resources.hot_redis, rid)
    hot = (await remote_client.post(search, json={"query": "cello"}, headers=headers)).json()
    assert (cold["tier"], hot["tier"]) == ("cold", "local")
    assert cold["degraded"] == hot["degraded"] == []
    # (equal up to the decay of the milliseconds between the two requests)
    cold_scores = [r["score"] for r in cold["items"]]
    assert cold_scores == pytest.approx([r["score"] for r in hot["items"]], rel=1e-6)


async def test_a_healthy_embedding_provider_adds_the_vector_ranking(
    make_tenant, remote_client, embedding_server
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid = await _relationship(remote_client, headers, "emb-up")
    embedding_server.reset()
    body = {"memories": [{"content": "The user plays the cello"}]}
    created = (
        await remote_client.post(
            f"/v1/relationships/{rid}/memories/batch", json=body, headers=headers
        )
    ).json()
    assert created["degraded"] == []
    found = (
        await remote_client.post(
            f"/v1/relationships/{rid}/search", json={"query": "cello"}, headers=headers
        )
    ).json()
    assert found["degraded"] == []
    assert found["items"][0]["explanation"]["vector_rank"] == 1


async def test_redis_down_reads_partitions_from_postgres_and_refills_after(
    settings: Settings, client, make_tenant, resources, tmp_path
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid = await _relationship(client, headers, "redis-recall")
    await client.post(
        f"/v1/relationships/{rid}/memories",
        json={"content": "The user's sister lives in Lyon"},
        headers=headers,
    )
    search = f"/v1/relationships/{rid}/search"
    first = (await client.post(search, json={"query": "sister Lyon"}, headers=headers)).json()
    assert first["tier"] == "cold"
    await wait_for_hot_copy(resources.hot_redis, rid)
    again = (await client.post(search, json={"query": "sister Lyon"}, headers=headers)).json()
    assert again["tier"] == "local"
    async with redis_down_client(settings, tmp_path) as down:
        during = (await down.post(search, json={"query": "sister Lyon"}, headers=headers)).json()
        context = (
            await down.post(
                "/v1/context", json={"relationship_id": rid, "query": "sister"}, headers=headers
            )
        ).json()
    assert during["tier"] == "cold"
    assert "redis" in during["degraded"]
    assert [r["content"] for r in during["items"]] == ["The user's sister lives in Lyon"]
    assert "Lyon" in context["context"]
    # Redis is back (the module's app): an evicted hot partition is rebuilt on demand.
    for key in await resources.hot_redis.keys("tether:hot*") + await resources.hot_redis.keys(
        "tether:pv:*"
    ):
        await resources.hot_redis.delete(key)
    refilled = (await client.post(search, json={"query": "sister Lyon"}, headers=headers)).json()
    assert refilled["tier"] == "cold"
    await wait_for_hot_copy(resources.hot_redis, rid)  # rebuilt in the background


async def test_a_stalled_redis_costs_one_timeout_not_one_per_read(
    settings: Settings, client, make_tenant
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid = await _relationship(client, headers, "stalled-redis")
    await client.post(
        f"/v1/relationships/{rid}/memories",
        json={"content": "The user's brother plays the oboe"},
        headers=headers,
    )
    body = {"relationship_id": rid, "query": "brother oboe"}
    with stalled_redis() as url:
        both = {"redis_url": url, "hot_redis_url": url}  # one Redis, as in most deployments
        stalled = settings.model_copy(update=both | {"redis_stall_seconds": 30})
        async with app_client(stalled) as down:
            first = await down.post("/v1/context", json=body, headers=headers)  # the timeouts
            assert first.status_code == 200, first.text
            started = time.perf_counter()
            answers = [await down.post("/v1/context", json=body, headers=headers) for _ in range(3)]
            elapsed = time.perf_counter() - started
    for answer in answers:
        assert answer.status_code == 200, answer.text
        assert "redis" in answer.json()["degraded"]
        assert "oboe" in answer.json()["context"]
    # Four sequential Redis reads per request would be 3 x 4 x 0.5 s without the stall.
    assert elapsed < 1.5
