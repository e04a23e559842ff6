"""The consent cache behind /v1/context: the context builder reads each user's consented
scopes from Redis, a change takes effect on the next message, Redis being away never
serves old scopes, and a change that cannot clear the cache is refused."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from tests.support import count_sql, resolve_body, wait_for_hot_copy
from tether.api.request_id import request_id_middleware
from tether.app import bind_resources, create_app
from tether.core.resources import Resources, open_resources
from tether.core.settings import Settings
from tether.profiles.consent_cache import ConsentCache, consent_key

pytestmark = pytest.mark.integration


@pytest.fixture
async def redis_down(settings: Settings, tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """A client of an app whose Redis is unreachable (the same Postgres)."""
    broken = settings.model_copy(update={"redis_url": f"unix://{tmp_path}/absent.sock"})
    app = create_app(broken)
    async with open_resources(broken) as down_resources:
        bind_resources(app, down_resources)
        transport = httpx.ASGITransport(app=request_id_middleware(app))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as down:
            yield down


async def _user_with_field(client, headers, name: str) -> tuple[str, str]:
    """A relationship and its user, who has a profile field of scope ``profile``."""
    answer = await client.post("/v1/resolve", json=resolve_body(name, "p-1"), headers=headers)
    assert answer.status_code in (200, 201), answer.text
    rid, user = answer.json()["relationship_id"], answer.json()["global_user_id"]
    field = {"value": f"nick-{name}", "scope": "profile"}
    put = await client.put(f"/v1/users/{user}/profile/fields/nickname", json=field, headers=headers)
    assert put.status_code == 200, put.text
    return rid, user


async def _context(client, headers, rid: str) -> str:
    answer = await client.post(
        "/v1/context", json={"relationship_id": rid, "query": "hello"}, headers=headers
    )
    assert answer.status_code == 200, answer.text
    return str(answer.json()["context"])


async def _consent(client, headers, user: str, scopes: list[str]) -> httpx.Response:
    return await client.put(
        f"/v1/users/{user}/consent", json={"scopes": scopes, "source": "test"}, headers=headers
    )


async def test_a_hot_context_reads_consent_from_redis(
    client, make_tenant, resources: Resources
) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    rid, user = await _user_with_field(client, gateway, "once")
    with count_sql(resources) as first:
        await _context(client, gateway, rid)
    await wait_for_hot_copy(resources.redis, rid)
    with count_sql(resources) as again:
        await _context(client, gateway, rid)
    assert any("consent_records" in s for s in first)
    assert again == []  # a hot context request runs no SQL at all
    key = consent_key(uuid.UUID(tenant.id), uuid.UUID(user))
    assert await resources.redis.ttl(key) > 0  # bounded, never kept forever


async def test_a_withdrawal_stops_the_sharing_on_the_next_message(
    client, make_tenant, resources: Resources
) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    rid, user = await _user_with_field(client, gateway, "withdraw")
    assert "nick-withdraw" not in await _context(client, gateway, rid)  # cached: no scopes
    assert (await _consent(client, gateway, user, ["profile"])).status_code == 200
    assert "nick-withdraw" in await _context(client, gateway, rid)  # cached: granted
    assert (await _consent(client, gateway, user, [])).status_code == 200
    assert "nick-withdraw" not in await _context(client, gateway, rid)
    cache = ConsentCache(resources.redis, 60)
    cached = await cache.get(uuid.UUID(tenant.id), uuid.UUID(user))
    assert cached == frozenset()


async def test_a_reader_cannot_overwrite_a_change_with_what_it_read_before(
    resources: Resources,
) -> None:
    cache = ConsentCache(resources.redis, 60)
    tenant, user = uuid.uuid4(), uuid.uuid4()
    await cache.forget(tenant, user)  # a change starts
    await cache.replace(tenant, user, frozenset())  # ... and commits a withdrawal
    await cache.fill(tenant, user, frozenset({"profile"}))  # a reader of the old row
    assert await cache.get(tenant, user) == frozenset()
    assert await cache.get(uuid.uuid4(), user) is None  # another tenant's key


async def test_redis_down_reads_consent_from_postgres(
    client, make_tenant, redis_down: httpx.AsyncClient, resources: Resources
) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    rid, user = await _user_with_field(client, gateway, "outage")
    assert "nick-outage" not in await _context(client, gateway, rid)  # "no scopes" cached
    assert (await _consent(client, gateway, user, ["profile"])).status_code == 200
    assert "nick-outage" in await _context(redis_down, gateway, rid)
    assert (await _consent(client, gateway, user, [])).status_code == 200
    assert "nick-outage" not in await _context(redis_down, gateway, rid)


async def test_a_change_that_cannot_clear_the_cache_is_refused(
    client, make_tenant, redis_down: httpx.AsyncClient, resources: Resources
) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    rid, user = await _user_with_field(client, gateway, "refused")
    assert (await _consent(client, gateway, user, ["profile"])).status_code == 200
    assert "nick-refused" in await _context(client, gateway, rid)  # granted, cached
    refused = await _consent(redis_down, gateway, user, [])
    assert refused.status_code == 503, refused.text
    assert refused.json()["code"] == "consent_cache_unavailable"
    assert refused.headers["content-type"].startswith("application/problem+json")
    state = (await client.get(f"/v1/users/{user}/consent", headers=gateway)).json()
    assert state["current"]["scopes"] == ["profile"]  # nothing changed
    assert len(state["history"]) == 1
    assert "nick-refused" in await _context(client, gateway, rid)  # cache and rows agree
