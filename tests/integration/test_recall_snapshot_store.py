"""Storing and completing partition snapshots (decisions 0011, 0014): a snapshot is
stored only from rows, or from a completed snapshot, that no committed or concurrent
write has changed; rows it lacks are read from their rows; forgotten text leaves it."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from sqlalchemy import text

from tenancy.ids import RelationshipId, RelationshipScope
from tests.snapshot_support import (
    CHANGES,
    MEMORIES,
    changed,
    drop_snapshot,
    evict,
    large,
    search,
    search_filled_from_snapshot,
    settings,
    snapshot_then_evict,
    snapshots,
    wait_for_snapshot,
)
from tests.support import assert_same_partition, owner_sessions, resolve_body, wait_for_hot_copy
from tether.core.ids import TenantId
from tether.core.resources import Resources
from tether.core.settings import Settings
from tether.core.tenant_sessions import tenant_session
from tether.providers.configured import rank_weights
from tether.recall.cold import ColdReader
from tether.recall.hot import PartitionStore

pytestmark = pytest.mark.integration

__all__ = ["settings"]  # the module's fixture: snapshots of three memories or more


async def _no_vector() -> None:
    return None


def _reader(
    settings: Settings, tenant_id: uuid.UUID, rid: str
) -> tuple[ColdReader, RelationshipScope]:
    """A cold reader that snapshots partitions of three memories or more, and the
    relationship's scope."""
    scope = RelationshipScope(TenantId(tenant_id), RelationshipId(uuid.UUID(rid)))
    return ColdReader(rank_weights(settings), None, 3), scope


async def _cold_read(
    settings: Settings, resources: Resources, tenant_id: uuid.UUID, rid: str
) -> tuple[ColdReader, RelationshipScope, Any]:
    """A read from rows (the snapshot, if any, deleted first)."""
    await drop_snapshot(resources, rid)
    reader, scope = _reader(settings, tenant_id, rid)
    async with tenant_session(resources.sessions, TenantId(tenant_id)) as session:
        partition = await reader.read(session, scope, _no_vector(), "v")
    assert partition.source == "cold"
    assert partition.row_versions is not None
    return reader, scope, partition


async def test_a_snapshot_is_not_stored_from_rows_that_changed_since_or_under_a_write(
    settings: Settings, client, make_tenant, resources
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid, ids = await large(client, headers, "snap-race")
    await wait_for_snapshot(resources, rid)  # the batch's rebuild is done
    reader, scope, partition = await _cold_read(settings, resources, tenant.id, rid)
    # Any change of a row since the read (here only its statistics) refuses the store.
    async with owner_sessions(resources)() as session, session.begin():
        await session.execute(
            text("UPDATE memories SET strength = 0.5 WHERE relationship_id = :r AND id = :id"),
            {"r": rid, "id": ids[0]},
        )
    assert not await reader.store_snapshot(resources.sessions, scope, partition)
    # A write in flight that drops snapshots holds the lock: the store backs off.
    reader, scope, partition = await _cold_read(settings, resources, tenant.id, rid)
    async with owner_sessions(resources)() as session, session.begin():
        await session.execute(
            text(
                "UPDATE memories SET content = content || '!' "
                "WHERE relationship_id = :r AND id = :id"
            ),
            {"r": rid, "id": ids[1]},
        )
        assert not await reader.store_snapshot(resources.sessions, scope, partition)
    assert await snapshots(resources, rid) == 0
    # Unchanged rows and no write: stored.
    reader, scope, partition = await _cold_read(settings, resources, tenant.id, rid)
    assert await reader.store_snapshot(resources.sessions, scope, partition)
    assert await snapshots(resources, rid) == 1


async def test_another_tenant_sees_no_snapshot_and_cannot_be_served_one(
    settings: Settings, client, make_tenant, resources
) -> None:
    owner, other = await make_tenant(), await make_tenant()
    headers = await owner.key("gateway")
    rid, _ = await large(client, headers, "snap-tenant")
    await snapshot_then_evict(client, headers, resources, rid)
    async with tenant_session(resources.sessions, TenantId(other.id)) as session:
        visible = await session.scalar(text("SELECT count(*) FROM recall_snapshots"))
    assert visible == 0
    # Asked for under the wrong tenant, the relationship has no rows and no snapshot.
    reader = ColdReader(rank_weights(settings), None, 3)
    wrong = RelationshipScope(TenantId(other.id), RelationshipId(uuid.UUID(rid)))
    async with tenant_session(resources.sessions, TenantId(other.id)) as session:
        partition = await reader.read(session, wrong, _no_vector(), "v")
    assert partition.records == ()
    assert partition.source == "cold"
    other_headers = await other.key("gateway")
    denied = await client.post(
        f"/v1/relationships/{rid}/search", json={"query": "cello"}, headers=other_headers
    )
    assert denied.status_code == 404


async def test_a_worker_rebuilds_a_dropped_snapshot_of_a_large_partition_only(
    settings: Settings, client, make_tenant, resources
) -> None:
    # As workers/services.py builds it: no sessions of its own, so no background work.
    store = PartitionStore(resources.redis, rank_weights(settings), 60, 0, snapshot_min_memories=3)
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid, _ = await large(client, headers, "snap-worker")
    await wait_for_snapshot(resources, rid)
    scope = RelationshipScope(TenantId(tenant.id), RelationshipId(uuid.UUID(rid)))
    assert not await store.refresh_snapshot(resources.sessions, scope)  # it has one
    await drop_snapshot(resources, rid)
    assert await store.refresh_snapshot(resources.sessions, scope)
    assert await snapshots(resources, rid) == 1
    small = PartitionStore(resources.redis, rank_weights(settings), 60, 0, None, None, 100)
    await drop_snapshot(resources, rid)
    assert not await small.refresh_snapshot(resources.sessions, scope)  # 6 < 100
    assert await snapshots(resources, rid) == 0


async def test_a_snapshot_is_stored_again_only_once_writes_recorded_enough_changes(
    settings: Settings, client, make_tenant, resources
) -> None:
    """Below ``snapshot_rewrite_changes`` a fill completes the snapshot anew rather than
    rewrite the whole body for a few changes (decision 0027)."""
    store = PartitionStore(
        resources.redis,
        rank_weights(settings),
        60,
        0,
        snapshot_min_memories=3,
        snapshot_rewrite_changes=2,
    )
    reader = ColdReader(rank_weights(settings), None, 3, rewrite_after_changes=2)
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid, ids = await large(client, headers, "snap-rewrite-after")
    await wait_for_snapshot(resources, rid)
    scope = RelationshipScope(TenantId(tenant.id), RelationshipId(uuid.UUID(rid)))
    async with owner_sessions(resources)() as session, session.begin():
        await session.execute(text(CHANGES["deactivate"]), {"id": ids[0]})
    assert not await store.refresh_snapshot(resources.sessions, scope)  # one change
    async with tenant_session(resources.sessions, TenantId(tenant.id)) as session:
        completed = await reader.read(session, scope, _no_vector(), "v")
    assert completed.source == "snapshot"
    assert completed.merged_from is None  # what the fill builds, and keeps only in Redis
    assert MEMORIES[0] not in [r.content for r in completed.records]
    assert not await reader.store_snapshot(resources.sessions, scope, completed)
    assert await changed(resources, rid) == [ids[0]]
    async with owner_sessions(resources)() as session, session.begin():
        await session.execute(text(CHANGES["private"]), {"id": ids[1]})
    async with tenant_session(resources.sessions, TenantId(tenant.id)) as session:
        assert (await reader.read(session, scope, _no_vector(), "v")).merged_from is not None
    assert await store.refresh_snapshot(resources.sessions, scope)  # two: stored again
    assert await changed(resources, rid) == []
    async with tenant_session(resources.sessions, TenantId(tenant.id)) as session:
        again = await reader.read(session, scope, _no_vector(), "v")
    assert MEMORIES[0] not in [r.content for r in again.records]
    assert next(r for r in again.records if str(r.id) == ids[1]).private_to_creator


@pytest.mark.parametrize("changes", [0, 257])
def test_a_rewrite_threshold_outside_what_a_snapshot_records_is_refused(
    settings: Settings, changes: int
) -> None:
    with pytest.raises(ValueError, match="rewrite_after_changes"):
        ColdReader(rank_weights(settings), None, 3, rewrite_after_changes=changes)


async def _held_in_snapshots(resources: Resources, rid: str, words: str) -> int:
    """The relationship's snapshots whose bytes hold ``words`` (texts are UTF-8 inside
    msgpack)."""
    async with owner_sessions(resources)() as session:
        found = await session.scalar(
            text(
                "SELECT count(*) FROM recall_snapshots WHERE relationship_id = :r "
                "AND position(convert_to(:w, 'UTF8') in body) > 0"
            ),
            {"r": rid, "w": words},
        )
    return int(found or 0)


async def test_forgotten_and_erased_text_leaves_the_snapshots(
    client, make_tenant, resources
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid, ids = await large(client, headers, "snap-forget")
    await snapshot_then_evict(client, headers, resources, rid)
    assert await _held_in_snapshots(resources, rid, "sister lives in Lyon") == 1
    preview = await client.post(
        f"/v1/relationships/{rid}/forget",
        json={"memory_ids": [ids[1]], "hard": True},
        headers=headers,
    )
    assert preview.status_code in {200, 201}, preview.text
    confirmed = await client.post(
        f"/v1/relationships/{rid}/forget/confirm",
        json={"token": preview.json()["token"]},
        headers=headers,
    )
    assert confirmed.status_code in {200, 201}, confirmed.text
    await wait_for_snapshot(resources, rid)  # rebuilt from what remains
    assert await _held_in_snapshots(resources, rid, "sister lives in Lyon") == 0
    assert await _held_in_snapshots(resources, rid, "allergic to peanuts") == 1
    user = (
        await client.post("/v1/resolve", json=resolve_body("snap-forget"), headers=headers)
    ).json()["global_user_id"]
    erased = await client.delete(f"/v1/users/{user}", headers=tenant.admin)
    assert erased.status_code == 200, erased.text
    assert await snapshots(resources, rid) == 0
    assert await _held_in_snapshots(resources, rid, "allergic to peanuts") == 0


async def test_after_a_burst_of_writes_the_snapshot_holds_all_of_them(
    client, make_tenant, resources
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid, _ = await large(client, headers, "snap-burst")
    await wait_for_snapshot(resources, rid)
    for n in range(5):  # an import in batches
        body = {"memories": [{"content": f"用户第{n}次提到旅行计划"}]}
        await client.post(f"/v1/relationships/{rid}/memories/batch", json=body, headers=headers)
    await wait_for_snapshot(resources, rid)
    await evict(resources, rid)
    found = await search_filled_from_snapshot(client, headers, resources, rid, "旅行计划")
    assert sum("旅行计划" in r["content"] for r in found["results"]) == 5
    async with owner_sessions(resources)() as session:
        count = await session.scalar(
            text("SELECT memories FROM recall_snapshots WHERE relationship_id = :r"),
            {"r": rid},
        )
    assert count == len(MEMORIES) + 5


# Written while a cold read embeds its query: an edit drops the snapshot, a change of
# activity is recorded in it; either way its row changed since the read fetched it.
MEANWHILE = {
    "edit": "UPDATE memories SET content = 'edited meanwhile' WHERE id = :id",
    "deactivate": "UPDATE memories SET is_active = false WHERE id = :id",
}


@pytest.mark.parametrize("change", list(MEANWHILE))
async def test_a_write_committed_while_the_query_is_embedded_is_not_served_stale(
    settings: Settings, client, make_tenant, resources, change: str
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid, ids = await large(client, headers, f"snap-between-{change}")
    await wait_for_snapshot(resources, rid)
    reader, scope = _reader(settings, tenant.id, rid)

    async def embedded_after_a_write() -> None:
        # The read has fetched the snapshot by now; this write commits before its check.
        async with owner_sessions(resources)() as session, session.begin():
            await session.execute(text(MEANWHILE[change]), {"id": ids[0]})

    async with tenant_session(resources.sessions, TenantId(tenant.id)) as session:
        partition = await reader.read(session, scope, embedded_after_a_write(), "v")
    assert partition.source == "cold"
    contents = [r.content for r in partition.records]
    assert ("edited meanwhile" in contents) == (change == "edit")
    assert MEMORIES[0] not in contents


async def _with_an_unrecorded_row(
    client: Any, make_tenant: Any, resources: Resources, user: str
) -> tuple[RelationshipScope, list[str]]:
    """A large relationship with a snapshot, and a memory the snapshot lacks without a
    record of it, as a write with triggers off would leave it: the read must fetch it
    with a statement of its own. Its scope and its memories' ids."""
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid, ids = await large(client, headers, user)
    await wait_for_snapshot(resources, rid)
    async with owner_sessions(resources)() as session, session.begin():
        await session.execute(text(CHANGES["insert"]), {"id": ids[2]})
        await session.execute(
            text("UPDATE recall_snapshots SET changed = '{}' WHERE relationship_id = :r"),
            {"r": rid},
        )
    return RelationshipScope(TenantId(tenant.id), RelationshipId(uuid.UUID(rid))), ids


async def test_a_row_the_snapshot_lacks_without_a_record_is_read_from_its_row(
    settings: Settings, client, make_tenant, resources
) -> None:
    scope, _ = await _with_an_unrecorded_row(client, make_tenant, resources, "snap-unrecorded")
    reader = ColdReader(rank_weights(settings), None, 3)
    async with tenant_session(resources.sessions, TenantId(scope.tenant_id)) as session:
        served = await reader.read(session, scope, _no_vector(), "v")
        await session.execute(
            text("DELETE FROM recall_snapshots WHERE relationship_id = :r"),
            {"r": scope.relationship_id},
        )
        from_rows = await reader.read(session, scope, _no_vector(), "v")
        await session.rollback()
    assert (served.source, from_rows.source) == ("snapshot", "cold")
    queries = [["cello"], ["爬山"], ["user", "tea"]]
    assert_same_partition(served, from_rows, queries, with_vectors=False)
    assert "another" in [r.content for r in served.records]


async def test_a_write_committed_before_the_rows_the_snapshot_lacks_are_read_is_not_missed(
    settings: Settings, client, make_tenant, resources
) -> None:
    scope, ids = await _with_an_unrecorded_row(client, make_tenant, resources, "snap-between")

    class WrittenToMeanwhile(ColdReader):
        async def _changes(self, *args: Any) -> Any:
            # After the check statement, before the rows it lacks are read.
            async with owner_sessions(resources)() as session, session.begin():
                await session.execute(text(CHANGES["deactivate"]), {"id": ids[0]})
            return await super()._changes(*args)

    reader = WrittenToMeanwhile(rank_weights(settings), None, 3)
    async with tenant_session(resources.sessions, TenantId(scope.tenant_id)) as session:
        partition = await reader.read(session, scope, _no_vector(), "v")
    assert partition.source == "cold"
    contents = [r.content for r in partition.records]
    assert MEMORIES[0] not in contents
    assert "another" in contents


async def test_a_completed_snapshot_is_stored_unless_a_write_came_after_it(
    settings: Settings, client, make_tenant, resources
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid, ids = await large(client, headers, "snap-merged-store")
    await snapshot_then_evict(client, headers, resources, rid)
    async with owner_sessions(resources)() as session, session.begin():  # recorded, not rebuilt
        await session.execute(text(CHANGES["deactivate"]), {"id": ids[0]})
    assert await changed(resources, rid) == [ids[0]]
    reader, scope = _reader(settings, tenant.id, rid)
    async with tenant_session(resources.sessions, TenantId(tenant.id)) as session:
        merged = await reader.read(session, scope, _no_vector(), "v")
    assert merged.source == "snapshot"
    assert merged.merged_from is not None
    # Another recorded write since the read: its snapshot would miss it.
    async with owner_sessions(resources)() as session, session.begin():
        await session.execute(text(CHANGES["private"]), {"id": ids[1]})
    assert not await reader.store_snapshot(resources.sessions, scope, merged)
    assert sorted(await changed(resources, rid) or []) == sorted([ids[0], ids[1]])
    # Through the API: a request reads the rows for its query (decision 0018); its fill
    # completes the snapshot and stores it, and the next fill reads that.
    found = await search(client, headers, rid, "cello Lyon")
    assert found["tier"] == "cold"
    await wait_for_hot_copy(resources.hot_redis, rid)
    assert await changed(resources, rid) == []
    await evict(resources, rid)
    again = await search_filled_from_snapshot(client, headers, resources, rid, "cello Lyon")
    assert [r["content"] for r in again["results"]] == [r["content"] for r in found["results"]]
    assert MEMORIES[0] not in [r["content"] for r in again["results"]]


BETWEEN_READ_AND_STORE = {
    "recorded": ("UPDATE memories SET private_to_creator = true WHERE id = :id", False),
    "edit": ("UPDATE memories SET content = 'edited' WHERE id = :id", False),
    "statistics": (
        "UPDATE memories SET strength = 3, last_recalled_at = now() WHERE id = :id",
        True,
    ),
}


@pytest.mark.parametrize("write", list(BETWEEN_READ_AND_STORE))
async def test_a_completed_snapshot_is_stored_only_if_no_recorded_write_came_between(
    settings: Settings, client, make_tenant, resources, write: str
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid, ids = await large(client, headers, f"snap-merged-{write}")
    await wait_for_snapshot(resources, rid)
    async with owner_sessions(resources)() as session, session.begin():  # recorded
        await session.execute(text(CHANGES["deactivate"]), {"id": ids[0]})
    reader, scope = _reader(settings, tenant.id, rid)
    # What the rebuild after writes reads: the snapshot completed, not every row.
    async with tenant_session(resources.sessions, TenantId(tenant.id)) as session:
        merged = await reader.read_for_snapshot(session, scope)
    assert merged is not None
    assert (merged.source, merged.row_versions) == ("snapshot", None)
    assert merged.merged_from is not None
    statement, stored = BETWEEN_READ_AND_STORE[write]
    async with owner_sessions(resources)() as session, session.begin():
        await session.execute(text(statement), {"id": ids[1]})
    assert await reader.store_snapshot(resources.sessions, scope, merged) is stored
    if write == "edit":
        assert await changed(resources, rid) is None  # dropped by the edit, not restored
    elif stored:
        assert await changed(resources, rid) == []
        async with tenant_session(resources.sessions, TenantId(tenant.id)) as session:
            again = await reader.read(session, scope, _no_vector(), "v")
        assert again.source == "snapshot"
        assert MEMORIES[0] not in [r.content for r in again.records]
        written = next(r for r in again.records if str(r.id) == ids[1])
        assert written.strength == 3  # statistics still come from the rows


async def test_a_read_inside_a_writing_transaction_is_never_stored_as_a_snapshot(
    settings: Settings, client, make_tenant, resources
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid, ids = await large(client, headers, "snap-merged-own-write")
    await wait_for_snapshot(resources, rid)
    reader, scope = _reader(settings, tenant.id, rid)
    async with tenant_session(resources.sessions, TenantId(tenant.id)) as session:
        # Its own later writes would leave the snapshot row's version as it is.
        await session.execute(text(CHANGES["deactivate"]), {"id": ids[0]})
        merged = await reader.read(session, scope, _no_vector(), "v")
        assert merged.source == "snapshot"
        assert MEMORIES[0] not in [r.content for r in merged.records]
        assert merged.merged_from is None
        await session.rollback()


async def test_a_snapshot_body_is_stored_out_of_line_uncompressed(
    client, make_tenant, resources
) -> None:
    """Reading it back is on a request's path (migration 0008): compressed, a 5,000-memory
    body (≈ 1.5 MB) took every store ≈ 20-30 ms more of Postgres CPU and every snapshot
    read ≈ 1.3 ms of decompression (scratch). The partition is large enough, and its
    texts alike enough, that Postgres would compress its body by default."""
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    response = await client.post("/v1/resolve", json=resolve_body("snap-storage"), headers=headers)
    rid = str(response.json()["relationship_id"])
    texts = [f"The user practises the cello every morning, lesson {n}" for n in range(60)]
    created = await client.post(
        f"/v1/relationships/{rid}/memories/batch",
        json={"memories": [{"content": t} for t in texts]},
        headers=headers,
    )
    assert created.status_code == 200, created.text
    await wait_for_snapshot(resources, rid)
    async with owner_sessions(resources)() as session:
        storage = await session.scalar(
            text(
                "SELECT attstorage::text FROM pg_attribute "
                "WHERE attrelid = 'recall_snapshots'::regclass AND attname = 'body'"
            )
        )
        stored = (
            await session.execute(
                text(
                    "SELECT pg_column_compression(body), pg_column_size(body), "
                    "octet_length(body) FROM recall_snapshots WHERE relationship_id = :r"
                ),
                {"r": rid},
            )
        ).one()
    assert storage == "e"
    compression, size, length = stored
    assert length > 4096  # past the TOAST threshold
    assert compression is None
    assert size >= length
