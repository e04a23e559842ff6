"""Partition snapshots (decision 0011): a large partition evicted from Redis is read back
from its Postgres snapshot, ranks exactly as from rows, and a snapshot never outlives a
change to what it holds (a trigger drops it; a stale one is never stored or served)."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest
from sqlalchemy import text

from tenancy.ids import RelationshipId, RelationshipScope
from tests.support import resolve_body, wait_for_hot_copy
from tether.core.ids import TenantId
from tether.core.resources import Resources
from tether.core.settings import Settings
from tether.core.tenant_sessions import tenant_session
from tether.providers.configured import rank_weights
from tether.recall.cold import ColdReader

pytestmark = pytest.mark.integration

MEMORIES = [
    "The user plays the cello in a string quartet",
    "The user's sister lives in Lyon",
    "用户每周六去爬山",
    "用户喜欢吃四川火锅",
    "The user is allergic to peanuts",
    "用户的猫叫小白",
]


@pytest.fixture(scope="module")
def settings(settings: Settings) -> Settings:
    """Snapshots for partitions of three memories or more (the default is 500)."""
    recall = settings.recall.model_copy(update={"snapshot_min_memories": 3})
    return settings.model_copy(update={"recall": recall})


async def _snapshots(resources: Resources, rid: str) -> int:
    async with resources.sessions() as session:
        found = await session.scalar(
            text("SELECT count(*) FROM recall_snapshots WHERE relationship_id = :r"), {"r": rid}
        )
    return int(found or 0)


async def _wait_for_snapshot(resources: Resources, rid: str, seconds: float = 5) -> None:
    deadline = time.monotonic() + seconds
    while not await _snapshots(resources, rid):
        assert time.monotonic() < deadline, f"no snapshot of {rid}"
        await asyncio.sleep(0.02)


async def _evict(resources: Resources, rid: str) -> None:
    """As Redis's TTL or an invalidation does: no local, no Redis copy."""
    for key in await resources.redis.keys(f"tether:*:*:{rid}"):
        await resources.redis.delete(key)


async def _large(client: Any, headers: dict[str, str], user: str) -> tuple[str, list[str]]:
    response = await client.post("/v1/resolve", json=resolve_body(user), headers=headers)
    rid = str(response.json()["relationship_id"])
    body = {"memories": [{"content": c} for c in MEMORIES]}
    created = await client.post(
        f"/v1/relationships/{rid}/memories/batch", json=body, headers=headers
    )
    assert created.status_code == 200, created.text
    return rid, [m["id"] for m in created.json()["results"]]


async def _search(client: Any, headers: dict[str, str], rid: str, query: str) -> dict[str, Any]:
    response = await client.post(
        f"/v1/relationships/{rid}/search", json={"query": query, "k": 6}, headers=headers
    )
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()
    return found


async def _snapshot_then_evict(
    client: Any, headers: dict[str, str], resources: Resources, rid: str
) -> None:
    first = await _search(client, headers, rid, "cello")
    assert first["tier"] == "cold"
    await wait_for_hot_copy(resources.redis, rid)
    await _wait_for_snapshot(resources, rid)
    await _evict(resources, rid)


def _ranked(found: dict[str, Any]) -> list[tuple[str, float]]:
    return [(r["content"], r["score"]) for r in found["results"]]


async def test_an_evicted_large_partition_is_read_from_its_snapshot(
    client, make_tenant, resources
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid, _ = await _large(client, headers, "snap-read")
    await _snapshot_then_evict(client, headers, resources, rid)
    for query in ("cello quartet", "爬山", "火锅 Lyon"):
        from_snapshot = await _search(client, headers, rid, query)
        assert from_snapshot["tier"] == "snapshot"
        await wait_for_hot_copy(resources.redis, rid)
        hot = await _search(client, headers, rid, query)
        assert hot["tier"] == "local"
        contents = [c for c, _ in _ranked(hot)]
        assert [c for c, _ in _ranked(from_snapshot)] == contents
        assert [s for _, s in _ranked(from_snapshot)] == pytest.approx(
            [s for _, s in _ranked(hot)], rel=1e-5
        )
        await _evict(resources, rid)


async def test_a_small_partition_gets_no_snapshot(client, make_tenant, resources) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    response = await client.post("/v1/resolve", json=resolve_body("snap-small"), headers=headers)
    rid = str(response.json()["relationship_id"])
    await client.post(
        f"/v1/relationships/{rid}/memories", json={"content": MEMORIES[0]}, headers=headers
    )
    assert (await _search(client, headers, rid, "cello"))["tier"] == "cold"
    await wait_for_hot_copy(resources.redis, rid)
    await asyncio.sleep(0.2)
    assert await _snapshots(resources, rid) == 0


async def test_an_edit_drops_the_snapshot_and_the_next_read_has_the_new_text(
    client, make_tenant, resources
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid, ids = await _large(client, headers, "snap-edit")
    await _snapshot_then_evict(client, headers, resources, rid)
    edited = await client.patch(
        f"/v1/relationships/{rid}/memories/{ids[0]}",
        json={"content": "The user plays the viola in a string quartet"},
        headers=headers,
    )
    assert edited.status_code == 200, edited.text
    assert await _snapshots(resources, rid) == 0  # in the edit's own transaction
    after = await _search(client, headers, rid, "quartet")
    assert after["tier"] == "cold"
    assert after["results"][0]["content"] == "The user plays the viola in a string quartet"
    assert all("cello" not in r["content"] for r in after["results"])


@pytest.mark.parametrize("change", ["delete", "deactivate", "add"])
async def test_deleting_deactivating_or_adding_a_memory_drops_the_snapshot(
    client, make_tenant, resources, change: str
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid, ids = await _large(client, headers, f"snap-{change}")
    await _snapshot_then_evict(client, headers, resources, rid)
    base = f"/v1/relationships/{rid}/memories"
    if change == "delete":
        response = await client.delete(f"{base}/{ids[1]}", headers=headers)
    elif change == "deactivate":
        response = await client.post(
            f"{base}/{ids[1]}/deactivate", json={"reason": "no longer true"}, headers=headers
        )
    else:
        response = await client.post(base, json={"content": "用户在学日语"}, headers=headers)
    assert response.status_code < 300, response.text
    assert await _snapshots(resources, rid) == 0
    contents = [r["content"] for r in (await _search(client, headers, rid, "Lyon 日语"))["results"]]
    assert ("The user's sister lives in Lyon" in contents) == (change == "add")
    assert ("用户在学日语" in contents) == (change == "add")


async def test_recall_statistics_keep_the_snapshot_and_are_read_from_the_rows(
    client, make_tenant, resources
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid, ids = await _large(client, headers, "snap-stats")
    await _snapshot_then_evict(client, headers, resources, rid)
    before = await _search(client, headers, rid, "爬山 cello")
    await wait_for_hot_copy(resources.redis, rid)
    await _evict(resources, rid)
    # As reinforcement and upkeep do: statistics change in place, the snapshot stays.
    async with resources.sessions() as session, session.begin():
        await session.execute(
            text(
                "UPDATE memories SET strength = 0.05, importance = 0.99, "
                "last_recalled_at = now() - interval '400 days' WHERE relationship_id = :r "
                "AND id = :id"
            ),
            {"r": rid, "id": ids[2]},
        )
    assert await _snapshots(resources, rid) == 1
    from_snapshot = await _search(client, headers, rid, "爬山 cello")
    assert from_snapshot["tier"] == "snapshot"
    # The same read from rows (no snapshot) ranks identically.
    async with resources.sessions() as session, session.begin():
        await session.execute(
            text("DELETE FROM recall_snapshots WHERE relationship_id = :r"), {"r": rid}
        )
    await _evict(resources, rid)
    from_rows = await _search(client, headers, rid, "爬山 cello")
    assert from_rows["tier"] == "cold"
    assert [c for c, _ in _ranked(from_snapshot)] == [c for c, _ in _ranked(from_rows)]
    assert [s for _, s in _ranked(from_snapshot)] == pytest.approx(
        [s for _, s in _ranked(from_rows)], rel=1e-6
    )

    def climbing(found: dict[str, Any]) -> dict[str, Any]:
        hit = next(r for r in found["results"] if r["content"] == "用户每周六去爬山")
        explanation: dict[str, Any] = hit["explanation"]
        return explanation

    assert climbing(from_snapshot)["importance"] > climbing(before)["importance"]
    assert climbing(from_snapshot)["decay"] < climbing(before)["decay"]


async def _cold_read(
    settings: Settings, resources: Resources, tenant_id: uuid.UUID, rid: str
) -> tuple[ColdReader, RelationshipScope, Any]:
    reader = ColdReader(rank_weights(settings), None, 3)
    scope = RelationshipScope(TenantId(tenant_id), RelationshipId(uuid.UUID(rid)))
    async with tenant_session(resources.sessions, TenantId(tenant_id)) as session:
        partition = await reader.read(session, scope, None, "v")
    assert partition.source == "cold"
    assert partition.row_versions is not None
    return reader, scope, partition


async def test_a_snapshot_is_not_stored_from_rows_that_changed_since_or_under_a_write(
    settings: Settings, client, make_tenant, resources
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid, ids = await _large(client, headers, "snap-race")
    reader, scope, partition = await _cold_read(settings, resources, tenant.id, rid)
    # Any change of a row since the read (here only its statistics) refuses the store.
    async with resources.sessions() as session, session.begin():
        await session.execute(
            text("UPDATE memories SET strength = 0.5 WHERE relationship_id = :r AND id = :id"),
            {"r": rid, "id": ids[0]},
        )
    assert not await reader.store_snapshot(resources.sessions, scope, partition)
    # A write in flight that drops snapshots holds the lock: the store backs off.
    reader, scope, partition = await _cold_read(settings, resources, tenant.id, rid)
    async with resources.sessions() as session, session.begin():
        await session.execute(
            text(
                "UPDATE memories SET content = content || '!' "
                "WHERE relationship_id = :r AND id = :id"
            ),
            {"r": rid, "id": ids[1]},
        )
        assert not await reader.store_snapshot(resources.sessions, scope, partition)
    assert await _snapshots(resources, rid) == 0
    # Unchanged rows and no write: stored.
    reader, scope, partition = await _cold_read(settings, resources, tenant.id, rid)
    assert await reader.store_snapshot(resources.sessions, scope, partition)
    assert await _snapshots(resources, rid) == 1


async def test_another_tenant_sees_no_snapshot_and_cannot_be_served_one(
    settings: Settings, client, make_tenant, resources
) -> None:
    owner, other = await make_tenant(), await make_tenant()
    headers = await owner.key("gateway")
    rid, _ = await _large(client, headers, "snap-tenant")
    await _snapshot_then_evict(client, headers, resources, rid)
    async with tenant_session(resources.sessions, TenantId(other.id)) as session:
        visible = await session.scalar(text("SELECT count(*) FROM recall_snapshots"))
    assert visible == 0
    # Asked for under the wrong tenant, the relationship has no rows and no snapshot.
    reader = ColdReader(rank_weights(settings), None, 3)
    wrong = RelationshipScope(TenantId(other.id), RelationshipId(uuid.UUID(rid)))
    async with tenant_session(resources.sessions, TenantId(other.id)) as session:
        partition = await reader.read(session, wrong, None, "v")
    assert partition.records == []
    assert partition.source == "cold"
    other_headers = await other.key("gateway")
    denied = await client.post(
        f"/v1/relationships/{rid}/search", json={"query": "cello"}, headers=other_headers
    )
    assert denied.status_code == 404
