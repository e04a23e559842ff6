"""Session defaults as the ``sessions`` section of the tenant settings document
(decision 0086): the old routes and the document agree both ways, a change is a new
audited version that the flags follow at once, the previous release's columns are kept
equal, migration 0028 carries pre-existing defaults over; and the cursor-paged list of a
relationship's sessions."""

from __future__ import annotations

import asyncio
import time
import uuid

import httpx
import msgspec
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.integration.conversation_support import relationship
from tether.core import migrations
from tether.core.resources import Resources
from tether.core.settings import Settings
from tether.turns.flags import Layers
from tether.turns.flags_cache import TTL_SECONDS, flags_key

pytestmark = pytest.mark.integration

OFF = {"memory_enabled": False, "knowledge_enabled": True, "keep_turns_without_memory": False}


async def _settings(client: httpx.AsyncClient, admin: dict[str, str]) -> httpx.Response:
    response = await client.get("/v1/tenant/settings", headers=admin)
    assert response.status_code == 200, response.text
    return response


async def _columns(superuser: AsyncEngine, tenant_id: str) -> tuple[bool, bool, bool]:
    async with superuser.connect() as conn:
        row = await conn.execute(
            text(
                "SELECT session_memory_enabled, session_knowledge_enabled, "
                "keep_turns_without_memory FROM tenants WHERE id = :t"
            ),
            {"t": tenant_id},
        )
        memory, knowledge, keep = row.one()
    return memory, knowledge, keep


async def test_session_defaults_write_the_settings_document(client, make_tenant, superuser) -> None:
    tenant = await make_tenant()
    before = await _settings(client, tenant.admin)
    assert before.json()["sessions"] == {
        "memory_enabled": True,
        "knowledge_enabled": False,
        "keep_turns_without_memory": True,
    }
    put = await client.put("/v1/tenant/session-defaults", json=OFF, headers=tenant.admin)
    assert put.status_code == 200, put.text
    assert put.json() == OFF
    after = await _settings(client, tenant.admin)
    assert after.json()["sessions"] == OFF
    assert after.json()["version"] == before.json()["version"] + 1
    assert after.json()["context"] == before.json()["context"]  # other sections kept
    audit = await client.get(
        "/v1/audit", params={"action": "settings.update"}, headers=tenant.admin
    )
    [event] = audit.json()["items"]
    assert event["detail"]["sections"] == ["sessions"]
    # The previous release reads the columns: they are kept equal (until the contract).
    assert await _columns(superuser, tenant.id) == (False, True, False)


async def test_the_settings_document_is_what_session_defaults_show(
    client, make_tenant, superuser
) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    current = await _settings(client, tenant.admin)
    body = {"sessions": {"knowledge_enabled": True}, "privacy": {"default_mode": "raw_only"}}
    put = await client.put(
        "/v1/tenant/settings",
        json=body,
        headers=tenant.admin | {"If-Match": current.headers["ETag"]},
    )
    assert put.status_code == 200, put.text
    defaults = await client.get("/v1/tenant/session-defaults", headers=tenant.admin)
    assert defaults.json() == {
        "memory_enabled": True,
        "knowledge_enabled": True,
        "keep_turns_without_memory": True,
    }
    # The flags of a session follow at once (read in the same statement, not cached).
    rid = await relationship(client, gateway, "defaults-doc")
    flags = await client.get(f"/v1/relationships/{rid}/sessions/s-new", headers=gateway)
    assert flags.json()["knowledge_enabled"] is True
    assert flags.json()["knowledge_source"] == "tenant"
    assert await _columns(superuser, tenant.id) == (True, True, True)
    bad = await client.put(
        "/v1/tenant/settings",
        json={"sessions": {"memory_enabled": "yes"}},
        headers=tenant.admin | {"If-Match": put.headers["ETag"]},
    )
    assert bad.status_code == 422, bad.text


async def test_another_tenant_keeps_its_own_defaults(client, make_tenant) -> None:
    a, b = await make_tenant(), await make_tenant()
    await client.put("/v1/tenant/session-defaults", json=OFF, headers=a.admin)
    theirs = await client.get("/v1/tenant/session-defaults", headers=b.admin)
    assert theirs.json()["memory_enabled"] is True


async def test_migration_0028_carries_pre_existing_defaults_over(
    client, make_tenant, superuser, settings: Settings
) -> None:
    changed, with_settings = await make_tenant(), await make_tenant()
    untouched = await make_tenant()
    url = settings.require_owner_url()
    await asyncio.to_thread(migrations.downgrade, url, "0027")
    try:
        async with superuser.begin() as conn:
            # As the release before 0028 stored them: columns on tenants.
            await conn.execute(
                text(
                    "UPDATE tenants SET session_memory_enabled = false, "
                    "keep_turns_without_memory = false WHERE id IN (:a, :b)"
                ),
                {"a": changed.id, "b": with_settings.id},
            )
            await conn.execute(
                text(
                    "INSERT INTO tenant_settings (tenant_id, version, document) VALUES "
                    '(:t, 3, \'{"privacy": {"default_mode": "raw_only"}}\')'
                ),
                {"t": with_settings.id},
            )
    finally:
        await asyncio.to_thread(migrations.upgrade, url)
    expected = {"memory_enabled": False, "knowledge_enabled": False,
                "keep_turns_without_memory": False}  # fmt: skip
    first = (await _settings(client, changed.admin)).json()
    assert (first["version"], first["sessions"]) == (1, expected)
    kept = (await _settings(client, with_settings.admin)).json()
    assert (kept["version"], kept["sessions"]) == (4, expected)
    assert kept["privacy"] == {"default_mode": "raw_only"}
    defaults = await client.get("/v1/tenant/session-defaults", headers=changed.admin)
    assert defaults.json() == expected
    # On the defaults: no version written (a document without the section reads so).
    assert (await _settings(client, untouched.admin)).json()["version"] == 0


async def test_sessions_are_listed_newest_first_a_cursor_page_at_a_time(
    client, make_tenant
) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    rid = await relationship(client, gateway, "list-sessions")
    for sid in ("s-1", "s-2", "s-3"):
        put = await client.put(
            f"/v1/relationships/{rid}/sessions/{sid}",
            json={"memory_enabled": sid != "s-2"},
            headers=gateway,
        )
        assert put.status_code == 200, put.text
    url = f"/v1/relationships/{rid}/sessions"
    first = (await client.get(url, params={"limit": 2}, headers=gateway)).json()
    assert [i["session_id"] for i in first["items"]] == ["s-3", "s-2"]
    assert first["items"][1]["flags"]["memory_enabled"] is False
    assert first["items"][1]["flags"]["memory_source"] == "session"
    assert first["items"][0]["flags"]["knowledge_source"] == "tenant"
    after = {"limit": 2, "cursor": first["next_cursor"]}
    rest = await client.get(url, params=after, headers=gateway)
    assert [i["session_id"] for i in rest.json()["items"]] == ["s-1"]
    assert rest.json()["next_cursor"] is None
    for params in ({"limit": 0}, {"limit": 201}, {"cursor": "AAAA"}, {"cursor": "a+b"}):
        refused = await client.get(url, params=params, headers=gateway)
        assert refused.status_code == 422, (params, refused.text)
        assert refused.headers["content-type"].startswith("application/problem+json")


async def test_another_tenant_cannot_list_the_sessions(client, make_tenant) -> None:
    owner, other = await make_tenant(), await make_tenant()
    rid = await relationship(client, await owner.key("gateway"), "list-private")
    answer = await client.get(
        f"/v1/relationships/{rid}/sessions", headers=await other.key("gateway")
    )
    assert answer.status_code == 404, answer.text
    missing = await client.get(
        f"/v1/relationships/{uuid.uuid4()}/sessions", headers=await owner.key("gateway")
    )
    assert missing.status_code == 404


async def test_a_defaults_change_reaches_a_hot_context_within_the_flag_cache_ttl(
    client, make_tenant, resources: Resources
) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    rid = await relationship(client, gateway, "defaults-hot")
    body = {"relationship_id": rid, "query": "hello", "session_id": "hot-1"}

    async def cached() -> tuple[Layers | None, int]:
        await client.post("/v1/context", json=body, headers=gateway)
        key = flags_key(uuid.UUID(rid), "hot-1")
        raw, ttl = await resources.redis.get(key), await resources.redis.ttl(key)
        return (None if raw is None else msgspec.json.decode(raw, type=Layers)), ttl

    layers, _ = await cached()
    assert layers is not None
    assert layers.tenant_knowledge is False
    put = await client.put("/v1/tenant/session-defaults", json=OFF, headers=tenant.admin)
    assert put.status_code == 200, put.text
    deadline = time.monotonic() + TTL_SECONDS + 2
    while True:
        layers, ttl = await cached()
        assert ttl != -1  # never cached without an expiry (-2: it just expired)
        assert ttl <= TTL_SECONDS
        if layers is not None and layers.tenant_knowledge:
            break
        assert time.monotonic() < deadline, "the change did not reach the context in time"
        await asyncio.sleep(0.5)
    assert (layers.tenant_memory, layers.keep_turns_without_memory) == (False, False)
