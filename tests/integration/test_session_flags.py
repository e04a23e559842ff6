"""Session agent flags end to end through the API and the real worker: memory off per
session, per turn, per persona and per tenant (with turns not kept at all), the
context's sections following the flags, unknown sessions on the defaults, and
forgetting what one session produced, in Chinese and English."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from tests.integration.conversation_support import relationship, say, wait_extracted
from tests.support import resolve_body

pytestmark = [pytest.mark.integration, pytest.mark.worker]

AT = datetime.now(UTC) - timedelta(hours=3)


@pytest.fixture(scope="module")
async def gateway(make_tenant):  # type: ignore[no-untyped-def]
    tenant = await make_tenant()
    return tenant, await tenant.key("gateway")


async def _memories(client: httpx.AsyncClient, headers: dict[str, str], rid: str) -> list[dict]:
    response = await client.get(
        f"/v1/relationships/{rid}/memories",
        params={"active": "true", "limit": 200},
        headers=headers,
    )
    assert response.status_code == 200, response.text
    return response.json()["items"]


async def _flags(client, headers, rid: str, session_id: str) -> dict:
    response = await client.get(f"/v1/relationships/{rid}/sessions/{session_id}", headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


async def test_unknown_sessions_use_the_tenant_defaults(client, gateway) -> None:
    _, headers = gateway
    rid = await relationship(client, headers, "flags-defaults")
    flags = await _flags(client, headers, rid, "never-seen")
    assert flags["memory_enabled"] is True
    assert flags["knowledge_enabled"] is False
    assert flags["memory_source"] == flags["knowledge_source"] == "tenant"
    assert flags["session_memory_enabled"] is None


async def test_a_session_with_memory_off_yields_no_memories(
    client, gateway, celery_worker, superuser
) -> None:
    _, headers = gateway
    rid = await relationship(client, headers, "flags-session")
    put = await client.put(
        f"/v1/relationships/{rid}/sessions/off", json={"memory_enabled": False}, headers=headers
    )
    assert put.status_code == 200, put.text
    assert put.json()["memory_source"] == "session"
    await say(client, headers, rid, "off", [("user", "我养了一只猫叫咪咪")], AT)
    await wait_extracted(superuser, rid, "off")
    await say(client, headers, rid, "on", [("user", "I love green tea.")], AT + timedelta(hours=1))
    await wait_extracted(superuser, rid, "on")
    contents = " ".join(m["content"] for m in await _memories(client, headers, rid))
    assert "咪咪" not in contents
    assert "green tea" in contents
    turns = await client.get(
        f"/v1/relationships/{rid}/turns", params={"session_id": "off"}, headers=headers
    )
    assert len(turns.json()["items"]) == 1  # kept: the tenant keeps turns by default
    # The context of the memory-off session has no memory section; asked for, it has.
    body = {"relationship_id": rid, "query": "green tea", "session_id": "off"}
    off = (await client.post("/v1/context", json=body, headers=headers)).json()
    assert not [i for i in off["items"] if i["section"] == "memory"]
    on = await client.post("/v1/context", json={**body, "memory_enabled": True}, headers=headers)
    assert [i for i in on.json()["items"] if i["section"] == "memory"]


async def test_a_turn_captured_with_memory_off_is_not_extracted(
    client, gateway, celery_worker, superuser
) -> None:
    _, headers = gateway
    rid = await relationship(client, headers, "flags-turn")
    turns = {
        "turns": [
            {"session_id": "mixed", "role": "user", "text": "我住在深圳", "at": AT.isoformat(),
             "memory_enabled": False},
            {"session_id": "mixed", "role": "user", "text": "我喜欢喝绿茶",
             "at": (AT + timedelta(seconds=1)).isoformat()},
        ]
    }  # fmt: skip
    accepted = await client.post(f"/v1/relationships/{rid}/turns", json=turns, headers=headers)
    assert accepted.status_code == 202, accepted.text
    await client.post(f"/v1/relationships/{rid}/sessions/mixed/end", headers=headers)
    await wait_extracted(superuser, rid, "mixed")
    contents = " ".join(m["content"] for m in await _memories(client, headers, rid))
    assert "绿茶" in contents
    assert "深圳" not in contents


async def test_a_persona_default_applies_until_a_session_overrides_it(
    client, gateway, celery_worker, superuser
) -> None:
    tenant, headers = gateway
    resolved = await client.post(
        "/v1/resolve", json=resolve_body("flags-persona", persona="p-quiet"), headers=headers
    )
    rid, persona_id = resolved.json()["relationship_id"], resolved.json()["creator_persona_id"]
    patched = await client.patch(
        f"/v1/personas/{persona_id}", json={"memory_enabled": False}, headers=tenant.admin
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["memory_enabled"] is False
    assert (await _flags(client, headers, rid, "p1"))["memory_source"] == "persona"
    await say(client, headers, rid, "p1", [("user", "My dog is called Mochi.")], AT)
    await wait_extracted(superuser, rid, "p1")
    assert await _memories(client, headers, rid) == []
    await client.put(
        f"/v1/relationships/{rid}/sessions/p2", json={"memory_enabled": True}, headers=headers
    )
    await say(client, headers, rid, "p2", [("user", "I love green tea.")], AT + timedelta(hours=1))
    await wait_extracted(superuser, rid, "p2")
    assert "green tea" in " ".join(m["content"] for m in await _memories(client, headers, rid))


async def test_a_tenant_that_keeps_no_turns_without_memory(
    client, make_tenant, celery_worker, superuser
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    defaults = {"memory_enabled": False, "knowledge_enabled": False,
                "keep_turns_without_memory": False}  # fmt: skip
    put = await client.put("/v1/tenant/session-defaults", json=defaults, headers=tenant.admin)
    assert put.status_code == 200, put.text
    assert (
        await client.get("/v1/tenant/session-defaults", headers=tenant.admin)
    ).json() == defaults
    rid = await relationship(client, headers, "flags-tenant")
    await say(client, headers, rid, "t1", [("user", "我的银行卡密码是生日")], AT, end=False)
    # A later turn with memory on: once it is stored, the first batch was handled.
    later = AT + timedelta(seconds=5)
    green = [("user", "I love green tea.")]
    await say(client, headers, rid, "t1", green, later, end=False, memory_enabled=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        stored = (await client.get(f"/v1/relationships/{rid}/turns", headers=headers)).json()[
            "items"
        ]
        if stored:
            break
        await asyncio.sleep(0.2)
    assert [t["text"] for t in stored] == ["I love green tea."]


async def test_forgetting_a_session_removes_what_it_produced(
    client, gateway, celery_worker, superuser
) -> None:
    tenant, headers = gateway
    rid = await relationship(client, headers, "flags-forget")
    await say(client, headers, rid, "s1", [("user", "我特别喜欢吃辣")], AT)
    await wait_extracted(superuser, rid, "s1")
    before = {m["id"]: m for m in await _memories(client, headers, rid)}
    await say(client, headers, rid, "s2", [("user", "我现在不吃辣了"), ("user", "我养了一只猫")],
              AT + timedelta(hours=1))  # fmt: skip
    await wait_extracted(superuser, rid, "s2")
    during = await _memories(client, headers, rid)
    assert any("猫" in m["content"] for m in during)
    forgotten = await client.delete(f"/v1/relationships/{rid}/sessions/s2", headers=headers)
    assert forgotten.status_code == 200, forgotten.text
    assert forgotten.json()["turns"] == 2
    assert forgotten.json()["memories"] >= 2
    after = {m["id"]: m for m in await _memories(client, headers, rid)}
    assert after.keys() == before.keys()  # the superseded preference is active again
    turns = (await client.get(f"/v1/relationships/{rid}/turns", headers=headers)).json()
    assert {t["session_id"] for t in turns["items"]} == {"s1"}
    log = await client.get(
        f"/v1/relationships/{rid}/consolidations", params={"session_id": "s2"}, headers=headers
    )
    assert log.json()["items"] == []
    audit = await client.get("/v1/audit", params={"action": "forget_session"}, headers=tenant.admin)
    assert audit.status_code == 200, audit.text
    assert any(e["action"] == "forget_session" for e in audit.json()["items"])
    # Forgetting again, or an unknown session, removes nothing and is not an error.
    again = await client.delete(f"/v1/relationships/{rid}/sessions/s2", headers=headers)
    assert again.json() == {"session_id": "s2", "turns": 0, "memories": 0}


async def test_another_tenant_cannot_read_or_forget_a_session(client, gateway, make_tenant) -> None:
    _, headers = gateway
    rid = await relationship(client, headers, "flags-auth")
    other = await (await make_tenant()).key("gateway")
    path = f"/v1/relationships/{rid}/sessions/s1"
    assert (await client.get(path, headers=other)).status_code == 404
    assert (
        await client.put(path, json={"memory_enabled": False}, headers=other)
    ).status_code == 404
    assert (await client.delete(path, headers=other)).status_code == 404
    bad = await client.put(path, json={"memory_enabled": "no"}, headers=headers)
    assert bad.status_code in (400, 422)
