"""The access log (decision 0042): every read of relationship memory is recorded with who,
which relationship and user, which memory ids and why; compliance queries it by user and
time; access events are sealed into the chain in Merkle batches that verification covers."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from tests.support import resolve_body
from tether.core.resources import Resources

pytestmark = pytest.mark.integration


async def _relationship(client: httpx.AsyncClient, headers: dict[str, str], user: str) -> dict:
    response = await client.post("/v1/resolve", json=resolve_body(user), headers=headers)
    assert response.status_code in (200, 201), response.text
    return response.json()


async def _memory(client, headers, rid: str, content: str) -> str:
    url = f"/v1/relationships/{rid}/memories"
    created = await client.post(url, json={"content": content}, headers=headers)
    assert created.status_code == 201, created.text
    return created.json()["id"]


async def _access(client, headers, **params) -> dict:
    response = await client.get("/v1/audit/access", params=params, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture(scope="module")
async def world(client, make_tenant):  # type: ignore[no-untyped-def]
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    compliance = await tenant.key("compliance")
    rel = await _relationship(client, gateway, "access-log-user")
    rid = rel["relationship_id"]
    spicy = await _memory(client, gateway, rid, "用户喜欢吃辣的川菜")
    tea = await _memory(client, gateway, rid, "The user drinks jasmine tea every morning")
    return tenant, gateway, compliance, rel, {"spicy": spicy, "tea": tea}


async def test_a_context_call_records_the_memories_it_injected(client, world) -> None:
    _, gateway, compliance, rel, ids = world
    started = datetime.now(UTC)
    body = {"relationship_id": rel["relationship_id"], "query": "喜欢吃什么菜？"}
    response = await client.post(
        "/v1/context", json=body, headers={**gateway, "X-Request-ID": "ctx-req-1"}
    )
    assert response.status_code == 200, response.text
    injected = {i["id"] for i in response.json()["items"] if i["section"] == "memory"}
    assert ids["spicy"] in injected
    page = await _access(
        client,
        compliance,
        global_user_id=rel["global_user_id"],
        purpose="context",
        since=started.isoformat(),
    )
    [event] = [e for e in page["items"] if e["request_id"] == "ctx-req-1"]
    assert set(event["memory_ids"]) == injected
    assert event["actor_role"] == "gateway"
    assert event["relationship_id"] == rel["relationship_id"]
    assert event["actor_key_id"] is not None


async def test_search_and_memory_reads_are_recorded_with_their_purpose(client, world) -> None:
    _, gateway, compliance, rel, ids = world
    rid = rel["relationship_id"]
    started = datetime.now(UTC)
    search = await client.post(
        f"/v1/relationships/{rid}/search", json={"query": "jasmine tea"}, headers=gateway
    )
    assert search.status_code == 200, search.text
    base = f"/v1/relationships/{rid}/memories"
    for url in (base, f"{base}/{ids['tea']}", f"{base}/{ids['tea']}/history"):
        assert (await client.get(url, headers=gateway)).status_code == 200
    assert (await client.get(f"{base}/{ids['tea']}/sources", headers=gateway)).status_code == 200
    page = await _access(
        client, compliance, relationship_id=rid, since=started.isoformat(), limit=50
    )
    purposes = [e["purpose"] for e in page["items"]]
    assert purposes == ["search", "memory_list", "memory_read", "memory_history", "memory_sources"]
    assert ids["tea"] in page["items"][0]["memory_ids"]
    assert set(page["items"][1]["memory_ids"]) == {ids["spicy"], ids["tea"]}
    # Only ids: no content in the access log.
    assert "jasmine" not in str(page)


async def test_pages_follow_the_cursor_and_time_bounds(client, world) -> None:
    _, gateway, compliance, rel, _ = world
    rid = rel["relationship_id"]
    for _ in range(3):
        await client.get(f"/v1/relationships/{rid}/memories", headers=gateway)
    first = await _access(client, compliance, relationship_id=rid, limit=2)
    assert len(first["items"]) == 2
    assert first["next_cursor"]
    second = await _access(
        client, compliance, relationship_id=rid, limit=2, cursor=first["next_cursor"]
    )
    assert second["items"][0]["id"] > first["items"][-1]["id"]
    future = datetime.now(UTC) + timedelta(hours=1)
    none = await _access(client, compliance, relationship_id=rid, since=future.isoformat())
    assert none["items"] == []


@pytest.mark.parametrize(
    "params",
    [
        {"since": "2026-12-07T10:00:00Z", "until": "2026-12-07T09:00:00Z"},
        {"since": "yesterday"},
        {"global_user_id": "not-a-uuid"},
        {"purpose": "gossip"},
        {"since": "2026-12-07T10:00:00"},
        {"cursor": "%%%"},
    ],
)
async def test_malformed_filters_are_a_400_problem(client, world, params) -> None:
    compliance = world[2]
    response = await client.get("/v1/audit/access", params=params, headers=compliance)
    assert response.status_code in (400, 422), response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    if "until" in params or params.get("purpose") or params.get("since", "").endswith(":00"):
        assert response.status_code == 400


async def test_only_audit_readers_query_it_and_never_across_tenants(
    client, world, make_tenant
) -> None:
    _, gateway, _, rel, _ = world
    assert (await client.get("/v1/audit/access", headers=gateway)).status_code == 403
    other = await make_tenant()
    theirs = await _access(client, other.admin, global_user_id=rel["global_user_id"])
    assert theirs["items"] == []


async def test_sealing_covers_access_events_and_verification_detects_tampering(
    client, make_tenant, superuser
) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    rel = await _relationship(client, gateway, "seal-user")
    rid = rel["relationship_id"]
    await _memory(client, gateway, rid, "喜欢爬山")
    for _ in range(5):
        await client.get(f"/v1/relationships/{rid}/memories", headers=gateway)
    verify = (await client.get("/v1/audit/verify", headers=tenant.admin)).json()
    assert verify["ok"] is True
    assert verify["access_events_sealed"] >= 5
    assert verify.get("access_events_unsealed", 0) == 0
    seals = await client.get("/v1/audit", params={"action": "access.seal"}, headers=tenant.admin)
    [seal] = seals.json()["items"]
    assert seal["detail"]["count"] == verify["access_events_sealed"]
    page = await _access(client, tenant.admin, relationship_id=rid)
    assert {e["sealed_seq"] for e in page["items"]} == {seal["seq"]}
    target = page["items"][2]["id"]
    async with superuser.connect() as conn:
        with pytest.raises(DBAPIError, match="only sealing"):
            await conn.execute(
                text("UPDATE audit_access_events SET purpose = 'search' WHERE id = :i"),
                {"i": target},
            )
        await conn.rollback()
        await conn.execute(text("SET session_replication_role = replica"))
        await conn.execute(
            text("UPDATE audit_access_events SET memory_ids = '{}' WHERE id = :i"), {"i": target}
        )
        await conn.commit()
    changed = (await client.get("/v1/audit/verify", headers=tenant.admin)).json()
    assert changed["ok"] is False
    assert changed["first_bad_seq"] == seal["seq"]
    assert "Merkle root" in changed["reason"]
    async with superuser.connect() as conn:
        await conn.execute(text("SET session_replication_role = replica"))
        await conn.execute(text("DELETE FROM audit_access_events WHERE id = :i"), {"i": target})
        await conn.commit()
    removed = (await client.get("/v1/audit/verify", headers=tenant.admin)).json()
    assert removed["first_bad_seq"] == seal["seq"]
    assert "removed" in removed["reason"]


async def test_the_service_role_may_only_seal_access_events(
    client, world, resources: Resources
) -> None:
    tenant = world[0]
    async with resources.engine.connect() as conn:
        await conn.execute(
            text("SELECT set_config('tether.tenant_id', :t, false)"), {"t": tenant.id}
        )
        with pytest.raises(DBAPIError, match="permission denied"):
            await conn.execute(text("DELETE FROM audit_access_events"))
        await conn.rollback()
        with pytest.raises(DBAPIError, match="permission denied"):
            await conn.execute(text("UPDATE audit_access_events SET purpose = 'x'"))


async def test_concurrent_reads_do_not_wait_for_the_chain(client, world) -> None:
    _, gateway, compliance, rel, _ = world
    rid = rel["relationship_id"]
    started = datetime.now(UTC)
    body = {"relationship_id": rid, "query": "tea"}
    responses = await asyncio.gather(
        *[client.post("/v1/context", json=body, headers=gateway) for _ in range(20)]
    )
    assert all(r.status_code == 200 for r in responses)
    page = await _access(
        client,
        compliance,
        relationship_id=rid,
        purpose="context",
        since=started.isoformat(),
        limit=50,
    )
    assert len(page["items"]) == 20
