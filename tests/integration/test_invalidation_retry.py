"""Failed invalidations recorded in the durable Redis and retried by the beat task
(tether.recall.invalidations): what a worker, the CLI or a stopped API process could not
invalidate stops being served once the hot Redis answers, not when its token expires."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError

from tenancy.ids import RelationshipId, RelationshipScope
from tests.support import CHESS, GO, delete_go_cut_off, hot_chess_and_go
from tether.core.ids import TenantId
from tether.core.resources import Resources
from tether.core.settings import Settings
from tether.recall import invalidations
from tether.recall.invalidations import (
    RETRY_INVALIDATIONS_TASK,
    UNINVALIDATED_KEY,
    record_failed,
    retry_recorded,
)
from tether.recall.versions import PartitionVersions, partition_keys

pytestmark = [pytest.mark.integration, pytest.mark.worker]

LIFETIME = 3600.0


def _scope(tenant: uuid.UUID | None = None) -> RelationshipScope:
    return RelationshipScope(TenantId(tenant or uuid.uuid4()), RelationshipId(uuid.uuid4()))


def _member(scope: RelationshipScope) -> str:
    return f"{scope.tenant_id}:{scope.relationship_id}"


@pytest.fixture
async def durable(resources: Resources) -> Any:
    await resources.redis.delete(UNINVALIDATED_KEY)
    yield resources.redis
    await resources.redis.delete(UNINVALIDATED_KEY)


async def test_a_workers_failed_invalidation_is_recorded_in_the_durable_redis(
    settings: Settings, resources: Resources, durable: Redis, tmp_path: Path
) -> None:
    """Versions without background retries (a worker's, the CLI's) record the failure."""
    away = Redis.from_url(f"unix://{tmp_path}/absent.sock")
    store = PartitionVersions(away, durable, retry=False)
    scope = _scope()
    before = time.time()
    await store.invalidate(scope)
    first = await durable.zscore(UNINVALIDATED_KEY, _member(scope))
    assert first is not None
    assert before <= first <= time.time()
    await store.invalidate(scope)  # failing again: the record is of the latest failure
    latest = await durable.zscore(UNINVALIDATED_KEY, _member(scope))
    assert latest is not None
    assert first < latest <= time.time()
    assert await record_failed(durable, scope, first - 60)  # an older one: kept as it is
    assert await durable.zscore(UNINVALIDATED_KEY, _member(scope)) == latest
    await away.aclose()


async def test_the_retry_replaces_versions_and_takes_the_records_out(
    resources: Resources, durable: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(invalidations, "BATCH", 2)  # several round trips
    scopes = [_scope() for _ in range(5)]
    now = time.time()
    for scope in scopes:
        version_key, blob_key = partition_keys(scope)
        await resources.hot_redis.set(version_key, "old")
        await resources.hot_redis.set(blob_key, b"copy")
        assert await record_failed(durable, scope, now - 10)
    store = PartitionVersions(resources.hot_redis, None, retry=False)
    replaced: list[RelationshipScope] = []

    async def replace(scope: RelationshipScope) -> None:
        replaced.append(scope)
        await store.replace(scope)

    report = await retry_recorded(durable, replace, now, LIFETIME)
    assert (report.invalidated, report.expired, report.waiting) == (5, 0, 0)
    assert sorted(map(str, replaced)) == sorted(map(str, scopes))
    assert await durable.zcard(UNINVALIDATED_KEY) == 0
    for scope in scopes:
        version_key, blob_key = partition_keys(scope)
        assert await resources.hot_redis.get(version_key) != b"old"
        assert not await resources.hot_redis.exists(blob_key)


async def test_while_the_hot_redis_is_away_the_records_are_kept_as_they_were(
    durable: Redis,
) -> None:
    scopes = [_scope() for _ in range(3)]
    now = time.time()
    for age, scope in enumerate(scopes):
        await record_failed(durable, scope, now - 100 + age)
    tries = 0

    async def away(scope: RelationshipScope) -> None:
        nonlocal tries
        tries += 1
        raise RedisConnectionError("hot Redis away")

    report = await retry_recorded(durable, away, now, LIFETIME)
    assert (report.invalidated, report.waiting, tries) == (0, 3, 1)  # stops at the first
    kept = await durable.zrange(UNINVALIDATED_KEY, 0, -1, withscores=True)
    assert kept == [(_member(s).encode(), now - 100 + age) for age, s in enumerate(scopes)]


async def test_records_older_than_a_token_lives_and_foreign_members_are_dropped(
    durable: Redis,
) -> None:
    now = time.time()
    old, recent = _scope(), _scope()
    await record_failed(durable, old, now - LIFETIME - 1)
    await record_failed(durable, recent, now - 1)
    await durable.zadd(UNINVALIDATED_KEY, {"not-a-scope": now})
    replaced: list[RelationshipScope] = []

    async def replace(scope: RelationshipScope) -> None:
        replaced.append(scope)

    report = await retry_recorded(durable, replace, now, LIFETIME)
    assert (report.invalidated, report.expired) == (1, 2)
    assert replaced == [recent]
    assert await durable.zcard(UNINVALIDATED_KEY) == 0


async def test_a_stopped_writers_failed_invalidation_ends_with_the_beat_task(
    settings: Settings,
    client: Any,
    make_tenant: Any,
    resources: Resources,
    durable: Redis,
    celery_worker: Any,
    tmp_path: Path,
) -> None:
    """An API process that could not reach the hot Redis, stopped before it could retry:
    readers serve the partition as it was before its delete until the periodic retry
    (here sent as beat sends it) replaces the version."""
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    pair = await hot_chess_and_go(client, headers, resources.hot_redis, "recorded-invalidation")
    await delete_go_cut_off(settings, pair, headers, tmp_path)
    assert await durable.zcard(UNINVALIDATED_KEY) == 1
    assert GO in await pair.contents()  # stale: the writer is gone
    await resources.tasks.send(RETRY_INVALIDATIONS_TASK, [])
    deadline = time.monotonic() + 30
    while await pair.contents() != [CHESS]:
        assert time.monotonic() < deadline, "the recorded invalidation was not retried"
        await asyncio.sleep(0.2)
    assert await durable.zcard(UNINVALIDATED_KEY) == 0


async def test_a_retry_killed_before_it_removed_its_records_leaves_them_in_place(
    durable: Redis,
) -> None:
    scopes = [_scope() for _ in range(3)]
    now = time.time()
    for scope in scopes:
        await record_failed(durable, scope, now - 10)
    replaced: list[RelationshipScope] = []

    async def killed_after_the_first(scope: RelationshipScope) -> None:
        if replaced:
            raise KeyboardInterrupt  # as a worker killed mid-run: no cleanup of ours runs
        replaced.append(scope)

    with pytest.raises(KeyboardInterrupt):
        await retry_recorded(durable, killed_after_the_first, now, LIFETIME)
    assert len(replaced) == 1
    assert await durable.zcard(UNINVALIDATED_KEY) == 3  # the next retry does them all

    async def replace(scope: RelationshipScope) -> None:
        replaced.append(scope)

    report = await retry_recorded(durable, replace, time.time(), LIFETIME)
    assert report.invalidated == 3
    assert await durable.zcard(UNINVALIDATED_KEY) == 0


async def test_a_failure_recorded_after_the_retry_replaced_its_version_stays_recorded(
    durable: Redis,
) -> None:
    again, other = _scope(), _scope()
    now = time.time()
    await record_failed(durable, again, now - 10)
    await record_failed(durable, other, now - 5)

    async def replace(scope: RelationshipScope) -> None:
        if scope == again:
            # A writer's invalidation of the same partition fails just after this one
            # was replaced: its write is not covered by the replacement.
            await record_failed(durable, again, now + 1)

    report = await retry_recorded(durable, replace, now, LIFETIME)
    assert report.invalidated == 2
    kept = await durable.zrange(UNINVALIDATED_KEY, 0, -1, withscores=True)
    assert kept == [(_member(again).encode(), now + 1)]  # for the next retry
