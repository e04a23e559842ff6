"""What the snapshot tests share (decision 0011): their settings, the large partitions
they write, and looks at the snapshots Postgres holds."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from sqlalchemy import text

from tests.support import MIXED_MEMORIES, owner_sessions, resolve_body, wait_for_hot_copy
from tether.core.resources import Resources
from tether.core.settings import Settings

MEMORIES = MIXED_MEMORIES


@pytest.fixture(scope="module")
def settings(settings: Settings) -> Settings:
    """Snapshots for partitions of three memories or more (the default is 500), stored
    again after every recorded write (the default waits for 64: decision 0027), so that
    each write's completion is stored and checked."""
    update = {"snapshot_min_memories": 3, "snapshot_rewrite_changes": 1}
    recall = settings.recall.model_copy(update=update)
    return settings.model_copy(update={"recall": recall})


async def snapshots(resources: Resources, rid: str, *, clean: bool = False) -> int:
    """The relationship's snapshots (0 or 1); ``clean``: only one without recorded
    changes (built from the current rows)."""
    query = "SELECT count(*) FROM recall_snapshots WHERE relationship_id = :r"
    if clean:
        query += " AND cardinality(changed) = 0"
    async with owner_sessions(resources)() as session:
        found = await session.scalar(text(query), {"r": rid})
    return int(found or 0)


async def wait_for_snapshot(resources: Resources, rid: str, seconds: float = 5) -> None:
    """Until the relationship has a snapshot built from its current rows."""
    deadline = time.monotonic() + seconds
    while not await snapshots(resources, rid, clean=True):
        assert time.monotonic() < deadline, f"no snapshot of {rid}"
        await asyncio.sleep(0.02)


async def evict(resources: Resources, rid: str) -> None:
    """As Redis's TTL or an invalidation does: no local, no Redis copy."""
    for key in await resources.hot_redis.keys(f"tether:*:*:{rid}"):
        await resources.hot_redis.delete(key)


async def large(client: Any, headers: dict[str, str], user: str) -> tuple[str, list[str]]:
    response = await client.post("/v1/resolve", json=resolve_body(user), headers=headers)
    rid = str(response.json()["relationship_id"])
    body = {"memories": [{"content": c} for c in MEMORIES]}
    created = await client.post(
        f"/v1/relationships/{rid}/memories/batch", json=body, headers=headers
    )
    assert created.status_code == 200, created.text
    return rid, [m["id"] for m in created.json()["results"]]


async def search(client: Any, headers: dict[str, str], rid: str, query: str) -> dict[str, Any]:
    response = await client.post(
        f"/v1/relationships/{rid}/search", json={"query": query, "k": 6}, headers=headers
    )
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()
    return found


async def fills(client: Any) -> tuple[int, int]:
    """The test app's background fills so far: (from snapshots, from rows), per /health."""
    response = await client.get("/health")
    tiers = response.json()["hot_tier"]
    return int(tiers["snapshot_fills"]), int(tiers["row_fills"])


async def search_filled_from_snapshot(
    client: Any, headers: dict[str, str], resources: Resources, rid: str, query: str
) -> dict[str, Any]:
    """The search of an evicted partition, answered by the copy its snapshot filled: a
    cold request reads for its query alone (decision 0018), and the fill after it reads
    the whole partition from the snapshot (this asserts it did) and keeps it."""
    before = await fills(client)
    cold = await search(client, headers, rid, query)
    assert cold["tier"] == "cold"
    await wait_for_hot_copy(resources.hot_redis, rid)
    assert await fills(client) == (before[0] + 1, before[1]), "not filled from the snapshot"
    kept = await search(client, headers, rid, query)
    assert kept["tier"] == "local"
    assert_same_ranking(kept, cold)
    return kept


def assert_same_ranking(one: dict[str, Any], other: dict[str, Any]) -> None:
    """The same memories in the same order, with the same scores up to how the vectors
    are rounded: a hot copy ranks float16 vectors against the float32 query, Postgres
    halfvecs against the query as a halfvec (similarities ≈ 1e-5 apart)."""
    assert [r["id"] for r in one["results"]] == [r["id"] for r in other["results"]]
    assert [r["score"] for r in one["results"]] == pytest.approx(
        [r["score"] for r in other["results"]], rel=1e-4
    )


async def snapshot_then_evict(
    client: Any, headers: dict[str, str], resources: Resources, rid: str
) -> None:
    # The batch's write started a rebuild in the background: from rows or from it.
    first = await search(client, headers, rid, "cello")
    assert first["tier"] == "cold"
    await wait_for_hot_copy(resources.hot_redis, rid)
    await wait_for_snapshot(resources, rid)
    await evict(resources, rid)


# Direct SQL (no invalidation, so no rebuild): what the trigger reacts to.
CHANGES = {
    "content": "UPDATE memories SET content = 'changed' WHERE id = :id",
    "tokens": "UPDATE memories SET tokens = ARRAY['changed'] WHERE id = :id",
    "type": (
        "UPDATE memories SET memory_type = CASE memory_type WHEN 'fact' THEN 'preference' "
        "ELSE 'fact' END WHERE id = :id"
    ),
    "occurred": "UPDATE memories SET occurred_at = occurred_at - interval '1 day' WHERE id = :id",
    "private": "UPDATE memories SET private_to_creator = true WHERE id = :id",
    "group": "UPDATE memories SET source_session_id = 's-9' WHERE id = :id",
    "deactivate": "UPDATE memories SET is_active = false WHERE id = :id",
    "soft delete": "UPDATE memories SET deleted_at = now() WHERE id = :id",
    "hard delete": "DELETE FROM memories WHERE id = :id",
    "insert": (
        "INSERT INTO memories (relationship_id, id, tenant_id, memory_type, layer, polarity, "
        "content, tokens, importance, confidence, occurred_at, origin) SELECT "
        "relationship_id, gen_random_uuid(), tenant_id, memory_type, layer, polarity, "
        "'another', tokens, importance, confidence, occurred_at, origin FROM memories "
        "WHERE id = :id RETURNING id"
    ),
}
# Old text must not stay in a derived copy: these drop the snapshot.
DROPPING = {"content", "tokens", "hard delete"}


async def changed(resources: Resources, rid: str) -> list[str] | None:
    async with owner_sessions(resources)() as session:
        row = (
            await session.execute(
                text("SELECT changed FROM recall_snapshots WHERE relationship_id = :r"),
                {"r": rid},
            )
        ).first()
    return None if row is None else [str(i) for i in row[0]]


async def drop_snapshot(resources: Resources, rid: str) -> None:
    async with owner_sessions(resources)() as session, session.begin():
        await session.execute(
            text("DELETE FROM recall_snapshots WHERE relationship_id = :r"), {"r": rid}
        )
