"""Audit coverage (issue 36, item 2): every family of change appends a chained event with
ids and decisions, never content; an append that fails fails the change it records."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from sqlalchemy import text

from tests.support import resolve_body
from tether.core.resources import Resources
from tether.memories.expiry import expire_due

pytestmark = pytest.mark.integration


async def _events(client, tenant, action: str) -> list[dict]:
    response = await client.get(
        "/v1/audit", params={"action": action, "limit": 200}, headers=tenant.admin
    )
    assert response.status_code == 200, response.text
    return response.json()["items"]


async def _relationship(client: httpx.AsyncClient, headers, user: str) -> dict:
    response = await client.post("/v1/resolve", json=resolve_body(user), headers=headers)
    assert response.status_code in (200, 201), response.text
    return response.json()


@pytest.fixture(scope="module")
async def world(client, make_tenant):  # type: ignore[no-untyped-def]
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    return tenant, gateway


async def test_memory_changes_by_a_key_are_audited_without_content(client, world) -> None:
    tenant, gateway = world
    rid = (await _relationship(client, gateway, "memory-audit"))["relationship_id"]
    url = f"/v1/relationships/{rid}/memories"
    created = await client.post(url, json={"content": "用户对花生过敏"}, headers=gateway)
    mid = created.json()["id"]
    await client.patch(f"{url}/{mid}", json={"content": "用户对花生和芝麻过敏"}, headers=gateway)
    await client.post(f"{url}/{mid}/deactivate", json={"reason": "用户说的"}, headers=gateway)
    [made] = [
        e for e in await _events(client, tenant, "memory.created") if e["relationship_id"] == rid
    ]
    assert made["detail"]["memory_ids"] == [mid]
    assert made["actor_role"] == "gateway"
    edited = await _events(client, tenant, "memory.edited")
    assert [e["detail"]["memory_ids"] for e in edited] == [[mid]]
    assert (await _events(client, tenant, "memory.deactivated"))[0]["detail"]["version"] == 3
    everything = str(await _events(client, tenant, "memory.edited")) + str(made)
    assert "花生" not in everything
    assert "用户说的" not in everything


async def test_forgetting_and_expiry_are_audited_by_who_did_them(
    client, world, resources: Resources
) -> None:
    tenant, gateway = world
    rid = (await _relationship(client, gateway, "forget-audit"))["relationship_id"]
    url = f"/v1/relationships/{rid}/memories"
    soon = (datetime.now(UTC) + timedelta(seconds=1)).isoformat()
    kept = await client.post(
        url, json={"content": "likes hiking", "expires_at": soon}, headers=gateway
    )
    assert kept.status_code == 201, kept.text
    gone = (await client.post(url, json={"content": "lives in Hangzhou"}, headers=gateway)).json()
    preview = await client.post(
        f"/v1/relationships/{rid}/forget", json={"memory_ids": [gone["id"]]}, headers=gateway
    )
    assert preview.status_code == 200, preview.text
    forget = await client.post(
        f"/v1/relationships/{rid}/forget/confirm",
        json={"token": preview.json()["token"]},
        headers=gateway,
    )
    assert forget.status_code == 200, forget.text
    [forgotten] = await _events(client, tenant, "memory.forgotten")
    assert forgotten["detail"]["memory_ids"] == [gone["id"]]
    assert forgotten["actor_role"] == "gateway"
    await asyncio.sleep(1.2)

    async def no_invalidate(_scope) -> None:  # type: ignore[no-untyped-def]
        return None

    assert await expire_due(resources.sessions, no_invalidate, datetime.now(UTC)) >= 1
    expired = [
        e
        for e in await _events(client, tenant, "memory.expired")
        if e["detail"]["memory_ids"] == [kept.json()["id"]]
    ]
    assert expired
    assert expired[0]["actor_role"] == "system"
    assert expired[0]["actor_subject"] == "system:expiry"


async def test_persona_profile_versions_are_audited(client, world) -> None:
    tenant, gateway = world
    pid = (await _relationship(client, gateway, "persona-audit"))["creator_persona_id"]
    body = {"background": "天文爱好者", "tone": "温柔", "taboos": [], "scripts": [], "notes": ""}
    put = await client.put(
        f"/v1/personas/{pid}/profile", json=body, headers=tenant.admin | {"If-Match": '"0"'}
    )
    assert put.status_code == 200, put.text
    [event] = await _events(client, tenant, "persona_profile.version")
    assert event["detail"] == {"persona_id": pid, "version": 1}
    assert "天文" not in str(event)


async def test_knowledge_base_and_document_changes_are_audited(client, world) -> None:
    tenant, _ = world
    base = await client.post(
        "/v1/knowledge-bases", json={"name": "FAQ", "description": "常见问题"}, headers=tenant.admin
    )
    assert base.status_code == 201, base.text
    bid = base.json()["id"]
    upload = await client.post(
        f"/v1/knowledge-bases/{bid}/documents",
        files={"file": ("faq.txt", "退货政策：七天无理由退货。".encode())},
        headers=tenant.admin,
    )
    assert upload.status_code in (201, 202), upload.text
    did = upload.json()["id"]
    deleted = await client.delete(
        f"/v1/knowledge-bases/{bid}/documents/{did}", headers=tenant.admin
    )
    assert deleted.status_code == 204, deleted.text
    assert (await _events(client, tenant, "knowledge_base.create"))[0]["detail"] == {
        "knowledge_base_id": bid
    }
    [up] = await _events(client, tenant, "document.upload")
    assert up["detail"]["document_id"] == did
    assert (await _events(client, tenant, "document.delete"))[0]["detail"]["document_id"] == did


async def test_keys_policies_privacy_patterns_and_consent_are_audited(client, world) -> None:
    tenant, gateway = world
    issued = await client.post(
        "/v1/api-keys", json={"role": "gateway", "name": "rotating"}, headers=tenant.admin
    )
    kid = issued.json()["key"]["id"]
    rotated = await client.post(f"/v1/api-keys/{kid}/rotate", json={}, headers=tenant.admin)
    assert rotated.status_code == 201, rotated.text
    new_id = rotated.json()["key"]["id"]
    assert (await client.delete(f"/v1/api-keys/{new_id}", headers=tenant.admin)).status_code == 204
    assert await _events(client, tenant, "key.rotate")
    assert await _events(client, tenant, "key.revoke")
    rule = {
        "role": "compliance",
        "object": "relationship_memory",
        "action": "read",
        "effect": "allow",
    }
    assert (
        await client.put("/v1/policies/tenant", json={"rules": [rule]}, headers=tenant.admin)
    ).status_code == 200
    assert await _events(client, tenant, "policy.change")
    patterns = {"patterns": [{"tag": "MEMBER_NO", "pattern": "M[0-9]{8}"}]}
    put = await client.put("/v1/tenant/privacy-patterns", json=patterns, headers=tenant.admin)
    assert put.status_code == 200, put.text
    [changed] = await _events(client, tenant, "privacy_patterns.change")
    assert changed["detail"]["tags"] == ["MEMBER_NO"]
    assert "M[0-9]" not in str(changed)
    user = (await _relationship(client, gateway, "consent-audit"))["global_user_id"]
    consent = await client.put(
        f"/v1/users/{user}/consent", json={"scopes": ["profile"], "source": "app"}, headers=gateway
    )
    assert consent.status_code == 200, consent.text
    assert [e["global_user_id"] for e in await _events(client, tenant, "consent.change")] == [user]


async def test_a_failing_audit_append_fails_the_change(client, world, superuser) -> None:
    tenant, gateway = world
    rid = (await _relationship(client, gateway, "append-fails"))["relationship_id"]
    refuse = f"""
        CREATE FUNCTION refuse_memory_audit() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.action = 'memory.created' AND NEW.tenant_id = '{tenant.id}' THEN
            RAISE EXCEPTION 'audit store refused';
          END IF;
          RETURN NEW;
        END $$"""
    async with superuser.begin() as conn:
        await conn.execute(text(refuse))
        await conn.execute(
            text(
                "CREATE TRIGGER refuse_memory_audit BEFORE INSERT ON audit_events "
                "FOR EACH ROW EXECUTE FUNCTION refuse_memory_audit()"
            )
        )
    try:
        url = f"/v1/relationships/{rid}/memories"
        failed = await client.post(url, json={"content": "never stored"}, headers=gateway)
        assert failed.status_code >= 500
    finally:
        async with superuser.begin() as conn:
            await conn.execute(text("DROP TRIGGER refuse_memory_audit ON audit_events"))
            await conn.execute(text("DROP FUNCTION refuse_memory_audit()"))
    listed = (await client.get(url, headers=gateway)).json()
    assert listed["items"] == []


async def test_the_pipeline_superseding_a_memory_is_audited(client, world, celery_worker) -> None:
    tenant, gateway = world
    rid = (await _relationship(client, gateway, "pipeline-audit"))["relationship_id"]

    async def session(name: str, line: str, at: datetime) -> None:
        turns = [{"session_id": name, "role": "user", "text": line, "at": at.isoformat()}]
        sent = await client.post(
            f"/v1/relationships/{rid}/turns", json={"turns": turns}, headers=gateway
        )
        assert sent.status_code == 202, sent.text
        await client.post(f"/v1/relationships/{rid}/sessions/{name}/end", headers=gateway)

    async def wait_for(action: str) -> list[dict]:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            found = [
                e for e in await _events(client, tenant, action) if e["relationship_id"] == rid
            ]
            if found:
                return found
            await asyncio.sleep(0.25)
        raise AssertionError(f"no {action} event")

    await session(
        "s1", "I love spicy food, the hotter the better", datetime.now(UTC) - timedelta(days=7)
    )
    created = await wait_for("memory.created")
    assert created[0]["actor_role"] == "system"
    await session("s2", "I don't eat spicy food anymore", datetime.now(UTC) - timedelta(minutes=1))
    superseded = await wait_for("memory.superseded")
    assert superseded[0]["actor_role"] == "system"
