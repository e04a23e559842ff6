"""Recalled memories are reinforced by a real worker, batched per API process: one task
per flush window, a memory recalled twice in one window counted once, other
relationships untouched."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from tests.support import resolve_body

pytestmark = [pytest.mark.integration, pytest.mark.worker]


async def _relationship(client: Any, headers: dict[str, str], user: str) -> str:
    response = await client.post("/v1/resolve", json=resolve_body(user), headers=headers)
    return str(response.json()["relationship_id"])


async def _memory(client: Any, headers: dict[str, str], rid: str, content: str) -> str:
    url = f"/v1/relationships/{rid}/memories"
    created = await client.post(url, json={"content": content}, headers=headers)
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


async def _read(client: Any, headers: dict[str, str], rid: str, memory_id: str) -> Any:
    got = await client.get(f"/v1/relationships/{rid}/memories/{memory_id}", headers=headers)
    assert got.status_code == 200, got.text
    return got.json()


async def test_recalled_memories_are_reinforced_once_per_window(
    client, make_tenant, celery_worker
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid, other = (
        await _relationship(client, headers, "r-1"),
        await _relationship(client, headers, "r-2"),
    )
    recalled = await _memory(client, headers, rid, "The user's grandmother grows lychees")
    quiet = await _memory(client, headers, rid, "用户每天早上跑步五公里")
    elsewhere = await _memory(client, headers, other, "The user's grandmother grows lychees")
    assert (await _read(client, headers, rid, recalled))["strength"] == 1.0

    search = f"/v1/relationships/{rid}/search"
    for _ in range(2):  # twice within one flush window
        answer = await client.post(search, json={"query": "grandmother lychees"}, headers=headers)
        assert [hit["id"] for hit in answer.json()["items"]] == [recalled]

    deadline = time.monotonic() + 30
    while (await _read(client, headers, rid, recalled))["last_recalled_at"] is None:
        assert time.monotonic() < deadline, "the recalled memory was not reinforced"
        await asyncio.sleep(0.1)
    await asyncio.sleep(1.5)  # a second, wrongly separate reinforcement would land by now
    memory = await _read(client, headers, rid, recalled)
    assert memory["strength"] == 1.5  # one step (reinforce_step = 0.5), not two
    untouched = [
        await _read(client, headers, rid, quiet),
        await _read(client, headers, other, elsewhere),
    ]
    assert [m["strength"] for m in untouched] == [1.0, 1.0]
    assert [m["last_recalled_at"] for m in untouched] == [None, None]
