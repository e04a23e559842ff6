"""Partition snapshots (decision 0011): the fill after a cold read of a large partition
reads it back from its Postgres snapshot, and the copy it keeps ranks exactly as the
rows do; a snapshot never outlives a change to what it holds (the trigger records it,
or drops the snapshot if a text changed). Requests themselves read for their query
(decision 0018). How snapshots are stored and completed: test_recall_snapshot_store.py."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from celery import Celery
from sqlalchemy import text

from tests.conftest import start_worker, stop_worker
from tests.snapshot_support import (
    CHANGES,
    DROPPING,
    MEMORIES,
    changed,
    drop_snapshot,
    evict,
    fills,
    large,
    search,
    search_filled_from_snapshot,
    settings,
    snapshot_then_evict,
    snapshots,
    wait_for_snapshot,
)
from tests.support import owner_sessions, resolve_body, wait_for_hot_copy
from tether.core.redis_client import broker_url

pytestmark = pytest.mark.integration

__all__ = ["settings"]  # the module's fixture: snapshots of three memories or more


def _ranked(found: dict[str, Any]) -> list[tuple[str, float]]:
    return [(r["content"], r["score"]) for r in found["results"]]


async def test_an_evicted_large_partition_is_filled_from_its_snapshot(
    client, make_tenant, resources
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid, _ = await large(client, headers, "snap-read")
    await snapshot_then_evict(client, headers, resources, rid)
    for query in ("cello quartet", "爬山", "火锅 Lyon"):
        # The copy filled from the snapshot answers as the cold read of the rows did.
        found = await search_filled_from_snapshot(client, headers, resources, rid, query)
        assert found["results"], query
        await evict(resources, rid)


async def test_a_partition_read_from_rows_for_one_query_is_kept_for_every_query(
    client, make_tenant, resources
) -> None:
    """Without a snapshot, a cold read reads what ranking the request's query needs and
    then the texts of its results (decision 0017): the same answer as the hot copy its
    fill keeps, which holds the whole partition and ranks another query as a read from
    rows for it does."""
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid, _ = await large(client, headers, "snap-one-query")
    await wait_for_snapshot(resources, rid)  # the batch's rebuild, out of the way
    await drop_snapshot(resources, rid)
    await evict(resources, rid)
    snapshot_fills, row_fills = await fills(client)
    first = await search(client, headers, rid, "cello quartet")
    assert first["tier"] == "cold"
    await wait_for_hot_copy(resources.hot_redis, rid)
    assert await fills(client) == (snapshot_fills, row_fills + 1)  # no snapshot to read
    again = await search(client, headers, rid, "cello quartet")
    assert again["tier"] == "local"
    assert first["results"], "the query finds memories"
    for cold, hot in zip(first["results"], again["results"], strict=True):
        assert cold.pop("score") == pytest.approx(hot.pop("score"), rel=1e-5)
        explained, expected = cold.pop("explanation"), hot.pop("explanation")
        assert explained.keys() == expected.keys()
        for name, value in explained.items():  # vectors: float16 in the hot copy
            numeric = isinstance(value, float)
            assert value == (pytest.approx(expected[name], rel=1e-4) if numeric else expected[name])
        assert cold == hot
    for query in ("爬山", "火锅 Lyon"):
        kept = await search(client, headers, rid, query)
        assert kept["tier"] == "local"
        assert any(r["explanation"]["lexical_rank"] == 1 for r in kept["results"])
        await drop_snapshot(resources, rid)
        await evict(resources, rid)
        from_rows = await search(client, headers, rid, query)
        assert from_rows["tier"] == "cold"
        assert [c for c, _ in _ranked(kept)] == [c for c, _ in _ranked(from_rows)]
        assert [s for _, s in _ranked(kept)] == pytest.approx(
            [s for _, s in _ranked(from_rows)], rel=1e-5
        )
        await wait_for_hot_copy(resources.hot_redis, rid)


async def test_a_small_partition_gets_no_snapshot(client, make_tenant, resources) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    response = await client.post("/v1/resolve", json=resolve_body("snap-small"), headers=headers)
    rid = str(response.json()["relationship_id"])
    await client.post(
        f"/v1/relationships/{rid}/memories", json={"content": MEMORIES[0]}, headers=headers
    )
    assert (await search(client, headers, rid, "cello"))["tier"] == "cold"
    await wait_for_hot_copy(resources.hot_redis, rid)
    await asyncio.sleep(0.2)
    assert await snapshots(resources, rid) == 0


async def test_an_edit_rebuilds_the_snapshot_with_the_new_text(
    client, make_tenant, resources
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid, ids = await large(client, headers, "snap-edit")
    await snapshot_then_evict(client, headers, resources, rid)
    edited = await client.patch(
        f"/v1/relationships/{rid}/memories/{ids[0]}",
        json={"content": "The user plays the viola in a string quartet"},
        headers=headers,
    )
    assert edited.status_code == 200, edited.text
    # The edit's transaction dropped the snapshot; the API rebuilds it after the commit.
    await wait_for_snapshot(resources, rid)
    after = await search_filled_from_snapshot(client, headers, resources, rid, "quartet")
    assert after["results"][0]["content"] == "The user plays the viola in a string quartet"
    assert all("cello" not in r["content"] for r in after["results"])


@pytest.mark.parametrize("change", ["delete", "deactivate", "add"])
async def test_deleting_deactivating_or_adding_a_memory_is_seen_by_the_next_read(
    client, make_tenant, resources, change: str
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid, ids = await large(client, headers, f"snap-{change}")
    await snapshot_then_evict(client, headers, resources, rid)
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
    await wait_for_snapshot(resources, rid)  # rebuilt after the write
    found = await search_filled_from_snapshot(client, headers, resources, rid, "Lyon 日语")
    contents = [r["content"] for r in found["results"]]
    assert ("The user's sister lives in Lyon" in contents) == (change == "add")
    assert ("用户在学日语" in contents) == (change == "add")


@pytest.mark.parametrize("change", list(CHANGES))
async def test_the_trigger_records_a_change_or_drops_the_snapshot_if_text_changed(
    client, make_tenant, resources, change: str
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid, ids = await large(client, headers, f"trigger-{change}")
    await snapshot_then_evict(client, headers, resources, rid)
    async with owner_sessions(resources)() as session, session.begin():
        result = await session.execute(text(CHANGES[change]), {"id": ids[0]})
        written = str(result.scalar_one()) if change == "insert" else ids[0]
    recorded = await changed(resources, rid)
    assert recorded == (None if change in DROPPING else [written])
    # A request reads the rows for its query (decision 0018). Its fill stores the
    # snapshot again: read from rows if the write dropped it, else completed from the
    # row the write changed (decision 0014); the next fill reads that snapshot.
    query = "cello quartet another changed"
    found = await search(client, headers, rid, query)
    assert found["tier"] == "cold"
    await wait_for_hot_copy(resources.hot_redis, rid)
    await wait_for_snapshot(resources, rid)
    await evict(resources, rid)
    again = await search_filled_from_snapshot(client, headers, resources, rid, query)
    gone = {"content", "hard delete", "deactivate", "soft delete", "private"}
    for answer in (found, again):
        contents = [r["content"] for r in answer["results"]]
        assert (MEMORIES[0] in contents) == (change not in gone)
        assert ("another" in contents) == (change == "insert")


async def test_recall_statistics_keep_the_snapshot_and_are_read_from_the_rows(
    client, make_tenant, resources
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid, ids = await large(client, headers, "snap-stats")
    await snapshot_then_evict(client, headers, resources, rid)
    before = await search(client, headers, rid, "爬山 cello")
    await wait_for_hot_copy(resources.hot_redis, rid)
    await evict(resources, rid)
    # As reinforcement and upkeep do: statistics change in place, the snapshot stays.
    async with owner_sessions(resources)() as session, session.begin():
        await session.execute(
            text(
                "UPDATE memories SET strength = 0.05, importance = 0.99, "
                "last_recalled_at = now() - interval '400 days' WHERE relationship_id = :r "
                "AND id = :id"
            ),
            {"r": rid, "id": ids[2]},
        )
    assert await snapshots(resources, rid) == 1
    from_snapshot = await search_filled_from_snapshot(client, headers, resources, rid, "爬山 cello")
    # The same read from rows (no snapshot) ranks identically.
    await drop_snapshot(resources, rid)
    await evict(resources, rid)
    from_rows = await search(client, headers, rid, "爬山 cello")
    assert from_rows["tier"] == "cold"
    await wait_for_hot_copy(resources.hot_redis, rid)  # no fill left to count in the next test
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


@pytest.fixture(scope="module")
def worker(settings):  # type: ignore[no-untyped-def]
    """A real worker that snapshots partitions of three memories or more and stores them
    again after every recorded change, as the API does here (tests/snapshot_support.py)."""
    recall = {"SNAPSHOT_MIN_MEMORIES": "3", "SNAPSHOT_REWRITE_CHANGES": "1"}
    process = start_worker(settings, {f"TETHER_RECALL__{k}": v for k, v in recall.items()})
    yield process
    stop_worker(process)


@pytest.mark.worker
async def test_an_expiry_sweep_rebuilds_the_snapshots_whose_memories_it_expired(
    settings, client, make_tenant, resources, worker
) -> None:
    """The worker's sweep records each expiry in the snapshot (or drops it past 256
    changes) and rebuilds it afterwards, as after an extraction: nothing else would
    before the next cold read."""
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid, ids = await large(client, headers, "snap-expiry")
    await wait_for_snapshot(resources, rid)
    async with owner_sessions(resources)() as session, session.begin():
        # Due now; expiry times are statistics, which the trigger does not record.
        await session.execute(
            text("UPDATE memories SET expires_at = now() - interval '1 second' WHERE id = :id"),
            {"id": ids[0]},
        )
    assert await changed(resources, rid) == []
    sender = Celery("test-sender", broker=broker_url(settings.require_redis_url()))
    # workers.app.EXPIRY_TASK (importing workers builds its Celery app from the env).
    sender.send_task("memories.expire")
    deadline = time.monotonic() + 30
    while await _active(resources, ids[0]):  # expired by the sweep
        assert time.monotonic() < deadline, "the sweep did not run"
        await asyncio.sleep(0.05)
    await wait_for_snapshot(resources, rid)  # recorded by the sweep, then rebuilt
    assert await changed(resources, rid) == []
    await evict(resources, rid)
    found = await search_filled_from_snapshot(client, headers, resources, rid, "cello quartet")
    assert MEMORIES[0] not in [r["content"] for r in found["results"]]


async def _active(resources: Any, memory_id: str) -> bool:
    async with owner_sessions(resources)() as session:
        found = await session.scalar(
            text("SELECT is_active FROM memories WHERE id = :id"), {"id": memory_id}
        )
    return bool(found)
