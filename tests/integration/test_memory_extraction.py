"""Ended sessions become memories through the real worker: extraction, consolidation
across sessions, forget requests, privacy modes, sources, the conflict log, expiry."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from tests.support import resolve_body
from tether.core.resources import Resources
from tether.memories.expiry import expire_due

pytestmark = [pytest.mark.integration, pytest.mark.worker]


async def _relationship(client: httpx.AsyncClient, headers: dict[str, str], user: str) -> str:
    response = await client.post("/v1/resolve", json=resolve_body(user), headers=headers)
    assert response.status_code in (200, 201), response.text
    return str(response.json()["relationship_id"])


@pytest.fixture(scope="module")
async def gateway(make_tenant):  # type: ignore[no-untyped-def]
    tenant = await make_tenant()
    return tenant, await tenant.key("gateway")


async def _session(
    client, headers, rid: str, session_id: str, lines: list[tuple[str, str]], at: datetime
) -> None:
    turns = [
        {
            "session_id": session_id,
            "role": role,
            "text": text,
            "at": (at + timedelta(seconds=i)).isoformat(),
        }
        for i, (role, text) in enumerate(lines)
    ]
    response = await client.post(
        f"/v1/relationships/{rid}/turns", json={"turns": turns}, headers=headers
    )
    assert response.status_code == 202, response.text
    end = await client.post(f"/v1/relationships/{rid}/sessions/{session_id}/end", headers=headers)
    assert end.status_code == 202


async def _wait_extracted(
    client, headers, rid: str, session_id: str, seconds: float = 60
) -> list[dict]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        log = (
            await client.get(
                f"/v1/relationships/{rid}/consolidations",
                params={"session_id": session_id},
                headers=headers,
            )
        ).json()
        memories = (
            await client.get(
                f"/v1/relationships/{rid}/memories",
                params={"active": "true", "limit": 200},
                headers=headers,
            )
        ).json()["items"]
        if log["items"] or any(
            m["memory_type"] == "summary" and m["session_id"] == session_id for m in memories
        ):
            return memories
        await asyncio.sleep(0.25)
    raise AssertionError(f"session {session_id} was not extracted")


async def test_a_session_becomes_memories_with_sources(client, gateway, celery_worker) -> None:
    _, headers = gateway
    rid = await _relationship(client, headers, "zh")
    now = datetime.now(UTC) - timedelta(minutes=5)
    await _session(
        client,
        headers,
        rid,
        "s1",
        [
            ("user", "我叫小林，在深圳一家银行工作"),
            ("assistant", "很高兴认识你"),
            ("user", "我超爱吃辣的，尤其是火锅"),
            ("user", "哈哈"),
        ],
        now,
    )
    memories = await _wait_extracted(client, headers, rid, "s1")
    contents = " | ".join(m["content"] for m in memories)
    assert "辣" in contents
    assert "银行" in contents or "深圳" in contents
    assert "哈哈" not in contents
    preference = next(m for m in memories if m["memory_type"] == "preference")
    assert preference["origin"] == "extracted"
    sources = (
        await client.get(
            f"/v1/relationships/{rid}/memories/{preference['id']}/sources", headers=headers
        )
    ).json()
    assert any("辣" in t["text"] for t in sources["turns"])
    # Extraction happens once even if the session is ended again.
    await client.post(f"/v1/relationships/{rid}/sessions/s1/end", headers=headers)
    await asyncio.sleep(1.0)
    again = (
        await client.get(
            f"/v1/relationships/{rid}/memories",
            params={"active": "true", "limit": 200},
            headers=headers,
        )
    ).json()["items"]
    assert len(again) == len(memories)


async def test_a_later_contradiction_supersedes_the_older_memory(
    client, gateway, celery_worker
) -> None:
    _, headers = gateway
    rid = await _relationship(client, headers, "flip")
    week_ago = datetime.now(UTC) - timedelta(days=7)
    await _session(
        client, headers, rid, "w1", [("user", "I love spicy food, the hotter the better")], week_ago
    )
    first = await _wait_extracted(client, headers, rid, "w1")
    old = next(m for m in first if m["memory_type"] == "preference")
    await _session(
        client,
        headers,
        rid,
        "w2",
        [("user", "I don't eat spicy food anymore, my stomach can't take it")],
        datetime.now(UTC) - timedelta(minutes=1),
    )
    await _wait_extracted(client, headers, rid, "w2")
    stored = (
        await client.get(f"/v1/relationships/{rid}/memories/{old['id']}", headers=headers)
    ).json()
    assert stored["is_active"] is False
    assert stored["superseded_by"] is not None
    newer = (
        await client.get(
            f"/v1/relationships/{rid}/memories/{stored['superseded_by']}", headers=headers
        )
    ).json()
    assert newer["polarity"] == "negated"
    log = (
        await client.get(
            f"/v1/relationships/{rid}/consolidations", params={"session_id": "w2"}, headers=headers
        )
    ).json()["items"]
    assert any(r["outcome"] == "contradiction" and r["target_memory_id"] == old["id"] for r in log)
    history = (
        await client.get(f"/v1/relationships/{rid}/memories/{old['id']}/history", headers=headers)
    ).json()["items"]
    assert [h["change"] for h in history] == ["created", "superseded"]
    found = (
        await client.post(
            f"/v1/relationships/{rid}/search", json={"query": "spicy food"}, headers=headers
        )
    ).json()
    assert old["id"] not in [r["id"] for r in found["items"]]


async def test_a_duplicate_confirms_instead_of_adding(client, gateway, celery_worker) -> None:
    _, headers = gateway
    rid = await _relationship(client, headers, "dup")
    t0 = datetime.now(UTC) - timedelta(days=2)
    await _session(client, headers, rid, "d1", [("user", "我喜欢喝茶")], t0)
    first = [
        m
        for m in await _wait_extracted(client, headers, rid, "d1")
        if m["memory_type"] == "preference"
    ]
    await _session(
        client, headers, rid, "d2", [("user", "我真的很喜欢喝茶")], t0 + timedelta(days=1)
    )
    await _wait_extracted(client, headers, rid, "d2")
    after = (
        await client.get(
            f"/v1/relationships/{rid}/memories",
            params={"active": "true", "memory_type": "preference"},
            headers=headers,
        )
    ).json()["items"]
    assert [m["id"] for m in after] == [m["id"] for m in first]
    assert after[0]["confidence"] > first[0]["confidence"]
    assert after[0]["layer"] == "episodic"


async def test_forget_requests_deactivate_the_matching_memory(
    client, gateway, celery_worker
) -> None:
    _, headers = gateway
    rid = await _relationship(client, headers, "forget")
    t0 = datetime.now(UTC) - timedelta(hours=3)
    await _session(client, headers, rid, "f1", [("user", "I work at Acme Corp as a designer")], t0)
    memories = await _wait_extracted(client, headers, rid, "f1")
    assert any("Acme" in m["content"] for m in memories)
    await _session(
        client,
        headers,
        rid,
        "f2",
        [("user", "Please forget that I work at Acme")],
        t0 + timedelta(hours=1),
    )
    await asyncio.sleep(0.5)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        active = (
            await client.get(
                f"/v1/relationships/{rid}/memories", params={"active": "true"}, headers=headers
            )
        ).json()["items"]
        if not any("Acme" in m["content"] for m in active):
            break
        await asyncio.sleep(0.25)
    else:
        raise AssertionError("the forget request was not applied")


async def test_raw_only_keeps_turns_and_extracts_nothing(client, gateway, celery_worker) -> None:
    tenant, headers = gateway
    rid = await _relationship(client, headers, "rawonly")
    await client.patch(
        f"/v1/relationships/{rid}", json={"privacy_mode": "raw_only"}, headers=tenant.admin
    )
    await _session(
        client,
        headers,
        rid,
        "r1",
        [("user", "I love jazz music")],
        datetime.now(UTC) - timedelta(minutes=2),
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        turns = (await client.get(f"/v1/relationships/{rid}/turns", headers=headers)).json()[
            "items"
        ]
        if turns:
            break
        await asyncio.sleep(0.25)
    assert [t["text"] for t in turns] == ["I love jazz music"]
    await asyncio.sleep(1.5)
    assert (await client.get(f"/v1/relationships/{rid}/memories", headers=headers)).json()[
        "items"
    ] == []


async def test_expired_memories_are_swept(client, gateway, resources: Resources) -> None:
    _, headers = gateway
    rid = await _relationship(client, headers, "expiry")
    soon = (datetime.now(UTC) + timedelta(seconds=1)).isoformat()
    created = await client.post(
        f"/v1/relationships/{rid}/memories",
        json={"content": "The user is busy this weekend", "expires_at": soon},
        headers=headers,
    )
    mid = created.json()["id"]
    await asyncio.sleep(1.2)
    # Expired memories never appear in recall, even before the sweep runs.
    found = (
        await client.post(
            f"/v1/relationships/{rid}/search", json={"query": "busy weekend"}, headers=headers
        )
    ).json()
    assert found["items"] == []

    async def no_invalidate(_: object) -> None:
        return None

    assert await expire_due(resources.sessions, no_invalidate, datetime.now(UTC)) >= 1
    assert await expire_due(resources.sessions, no_invalidate, datetime.now(UTC)) == 0  # idempotent
    memory = (await client.get(f"/v1/relationships/{rid}/memories/{mid}", headers=headers)).json()
    assert memory["is_active"] is False
    history = (
        await client.get(f"/v1/relationships/{rid}/memories/{mid}/history", headers=headers)
    ).json()["items"]
    assert history[-1]["change"] == "expired"
    assert uuid.UUID(mid)
