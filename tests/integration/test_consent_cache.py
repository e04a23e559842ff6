"""The consent cache behind /v1/context: the context builder reads each user's consented
scopes from Redis, a change takes effect on the next message, Redis being away never
serves old scopes, and a change that cannot clear the cache is refused."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tenancy.audit.log import AuditLog
from tests.support import count_sql, redis_down_client, resolve_body, wait_for_hot_copy
from tether.core.ids import new_id
from tether.core.resources import Resources
from tether.core.settings import Settings
from tether.profiles.consent_cache import ConsentCache, consent_key
from tether.profiles.grants import Grant

pytestmark = pytest.mark.integration


@pytest.fixture
async def redis_down(settings: Settings, tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    async with redis_down_client(settings, tmp_path) as down:
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
    await wait_for_hot_copy(resources.hot_redis, rid)
    with count_sql(resources) as again:
        await _context(client, gateway, rid)
    assert any("consent_records" in s for s in first)
    assert again == [], again  # a hot context request runs no SQL at all
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
    assert cached is not None
    assert cached.scopes == frozenset()


async def test_the_cache_settles_on_the_current_record_whatever_the_order(
    resources: Resources,
) -> None:
    cache = ConsentCache(resources.redis, 60)
    tenant, user = uuid.uuid4(), uuid.uuid4()
    old = Grant.of(new_id(), frozenset({"profile"}))
    withdrawn = Grant.of(new_id(), frozenset())
    marker = await cache.begin_change(tenant, user)  # a change starts
    await cache.fill(tenant, user, old)  # a reader of the old record
    assert await cache.get(tenant, user) is None  # readers keep going to Postgres
    await cache.finish_change(tenant, user, marker, withdrawn)  # ... it committed
    assert await cache.get(tenant, user) == withdrawn
    await cache.fill(tenant, user, old)  # a slow reader of the old record
    assert await cache.get(tenant, user) == withdrawn
    # Two changes, the second marked before the first writes after its commit: the
    # first leaves the second's marker alone.
    first = await cache.begin_change(tenant, user)
    second = await cache.begin_change(tenant, user)
    regrant = Grant.of(new_id(), frozenset({"profile", "spending"}))
    withdrawn_again = Grant.of(new_id(), frozenset())
    await cache.finish_change(tenant, user, first, regrant)
    assert await cache.get(tenant, user) is None
    await cache.finish_change(tenant, user, second, withdrawn_again)
    assert await cache.get(tenant, user) == withdrawn_again
    await cache.finish_change(tenant, user, first, regrant)  # a late duplicate
    assert await cache.get(tenant, user) == withdrawn_again
    assert await cache.get(uuid.uuid4(), user) is None  # another tenant's key
    await resources.redis.set(consent_key(tenant, user), b"\xff garbage")
    assert await cache.get(tenant, user) is None  # unreadable: a miss, not a 500


async def test_a_context_during_a_change_reads_postgres_and_the_change_wins(
    client, make_tenant, resources: Resources, monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    rid, user = await _user_with_field(client, gateway, "between")
    assert (await _consent(client, gateway, user, ["profile"])).status_code == 200
    assert "nick-between" in await _context(client, gateway, rid)  # granted, cached
    reached, release = asyncio.Event(), asyncio.Event()
    record = AuditLog.record

    async def paused(self: AuditLog, *args: Any, **kwargs: Any) -> Any:
        if args[2] == "consent.change":  # the withdrawal's record is written, not committed
            reached.set()
            await release.wait()
        return await record(self, *args, **kwargs)

    monkeypatch.setattr(AuditLog, "record", paused)
    withdrawal = asyncio.create_task(_consent(client, gateway, user, []))
    await asyncio.wait_for(reached.wait(), 10)
    # Not committed yet: the consent in force is still the grant, read from Postgres,
    # and this reader must not put it back into the cache.
    assert "nick-between" in await _context(client, gateway, rid)
    key = consent_key(uuid.UUID(tenant.id), uuid.UUID(user))
    assert (await resources.redis.get(key) or b"").startswith(b"change:")
    release.set()
    assert (await withdrawal).status_code == 200
    assert "nick-between" not in await _context(client, gateway, rid)


async def test_a_change_that_fails_after_marking_leaves_the_consent_as_it_was(
    client, make_tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    rid, user = await _user_with_field(client, gateway, "rolled-back")
    assert (await _consent(client, gateway, user, ["profile"])).status_code == 200
    assert "nick-rolled-back" in await _context(client, gateway, rid)
    record = AuditLog.record

    async def failing(self: AuditLog, *args: Any, **kwargs: Any) -> Any:
        if args[2] == "consent.change":
            raise RuntimeError("the audit insert failed")
        return await record(self, *args, **kwargs)

    monkeypatch.setattr(AuditLog, "record", failing)
    failed = await _consent(client, gateway, user, [])
    assert failed.status_code == 500  # the injected fault
    monkeypatch.setattr(AuditLog, "record", record)
    state = (await client.get(f"/v1/users/{user}/consent", headers=gateway)).json()
    assert [h["scopes"] for h in state["history"]] == [["profile"]]
    assert "nick-rolled-back" in await _context(client, gateway, rid)  # as in Postgres


async def test_redis_down_reads_consent_from_postgres(
    client, make_tenant, redis_down: httpx.AsyncClient, resources: Resources
) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    rid, user = await _user_with_field(client, gateway, "outage")
    assert "nick-outage" not in await _context(client, gateway, rid)  # "no scopes" cached
    assert (await _consent(client, gateway, user, ["profile"])).status_code == 200
    during = await redis_down.post(
        "/v1/context", json={"relationship_id": rid, "query": "hello"}, headers=gateway
    )
    assert "nick-outage" in during.json()["context"]
    assert "redis" in during.json()["degraded"]
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


async def test_a_withdrawal_wins_over_a_grant_from_a_host_whose_clock_runs_ahead(
    client, make_tenant, resources: Resources, monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    rid, user = await _user_with_field(client, gateway, "skew")
    an_hour_ahead = new_id().int + (3_600_000 << 80)
    monkeypatch.setattr("tether.profiles.repositories.new_id", lambda: uuid.UUID(int=an_hour_ahead))
    assert (await _consent(client, gateway, user, ["profile"])).status_code == 200
    monkeypatch.undo()
    assert "nick-skew" in await _context(client, gateway, rid)
    assert (await _consent(client, gateway, user, [])).status_code == 200  # this host: now
    state = (await client.get(f"/v1/users/{user}/consent", headers=gateway)).json()
    assert state["current"]["withdrawn"] is True
    assert "nick-skew" not in await _context(client, gateway, rid)
    cached = await ConsentCache(resources.redis, 60).get(uuid.UUID(tenant.id), uuid.UUID(user))
    assert cached is not None
    assert cached.scopes == frozenset()
