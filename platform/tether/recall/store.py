"""The partition store: a relationship's partition, found in this process's memory, in
the hot Redis, or in Postgres, in that order.

Hot: the local copy (local.py) or the Redis copy (encoding.py) whose version token is the
current one (versions.py). Cold: neither; the request reads Postgres for its query alone
(cold.py), and after its response a background fill reads the whole partition and keeps
it in both hot tiers for the requests that follow. When Redis is away, every read goes to
Postgres and this process's copies are dropped (their freshness cannot be checked).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, replace

from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tenancy.ids import RelationshipScope
from tether.core.background import spawn
from tether.core.database_errors import DATABASE_ERRORS
from tether.core.ids import TenantId
from tether.core.redis_client import as_bytes
from tether.core.telemetry import traced
from tether.core.tenant_sessions import tenant_session
from tether.recall import encoding
from tether.recall.cold import ColdReader
from tether.recall.local import Key, LocalCopies, LocalCopy
from tether.recall.partition import Partition, RecalledMemory, Vector
from tether.recall.versions import BLOB_FORMAT, PartitionVersions, partition_keys
from tether.recall.weights import RankWeights

log = logging.getLogger(__name__)

# A local copy is checked against the token on every use, and dropped after this long
# regardless (bounds staleness if an invalidation was lost during a Redis outage).
LOCAL_MAX_AGE_SECONDS = 600.0
# Refresh the Redis copy's TTL at most this often per partition and process.
TOUCH_EVERY_SECONDS = 60.0
# Fills running at once per process: each reads megabytes from Postgres and writes them
# to Redis, and a burst of them starved the event loop until Redis writes timed out.
FILLS_AT_ONCE = 2
# Past this many fills waiting for a slot, a cold read starts none.
FILLS_WAITING = 32


@dataclass(slots=True)
class TierStats:
    """Where partitions were found since the process started (a metric, and /health)."""

    local: int = 0
    hot: int = 0
    cold: int = 0
    fills: int = 0  # whole partitions read after cold reads

    @property
    def hit_rate(self) -> float | None:
        total = self.local + self.hot + self.cold
        return None if total == 0 else (self.local + self.hot) / total


class PartitionStore:
    def __init__(
        self,
        versions: PartitionVersions,
        redis: Redis,
        bulk_redis: Redis,
        cold: ColdReader,
        weights: RankWeights,
        *,
        ttl_seconds: int,
        local: LocalCopies,
        sessions: async_sessionmaker[AsyncSession],
    ) -> None:
        """``redis``, ``bulk_redis``: the hot Redis, and the client for its copies
        (megabytes: a longer timeout); ``sessions``: where fills get their own session."""
        self.versions = versions
        self._redis = redis
        self._bulk = bulk_redis
        self._cold = cold
        self._window = weights.neighbour_window
        self._layout = f"{BLOB_FORMAT}:{weights.bm25_k1}:{weights.bm25_b}:{self._window}"
        self._ttl = ttl_seconds
        self._local = local
        self._sessions = sessions
        self._decoding: dict[Key, asyncio.Future[Partition | None]] = {}
        self._filling: dict[Key, asyncio.Task[None]] = {}
        self._fill_slots = asyncio.Semaphore(FILLS_AT_ONCE)
        self.stats = TierStats()

    @traced("recall.load")
    async def load(
        self,
        session: AsyncSession,
        scope: RelationshipScope,
        query_vector: Awaitable[Vector | None],
        query_tokens: Sequence[str],
        model: str | None = None,
    ) -> tuple[Partition, bool]:
        """The partition to rank the query of ``query_tokens`` with, and whether Redis
        was unavailable. ``query_vector`` is awaited only on a cold read. ``model``: the
        model of the query's vector (the tenant's); a copy holding another model's
        vectors is a miss, never compared (decision 0077)."""
        key = (scope.tenant_id, scope.relationship_id)
        model = self._cold.model_of(model)
        try:
            holds_none = self._local.get(key, LOCAL_MAX_AGE_SECONDS) is None
            version, maybe_copy = await self.versions.current(scope, holds_none)
            # Looked up again: a fill may have kept a newer copy during the round trip.
            local = self._local.get(key, LOCAL_MAX_AGE_SECONDS)
            if (
                local is not None
                and local.partition.version == version
                and local.partition.embedding_model == model
            ):
                self.stats.local += 1
                await self._touch(local, scope)
                return replace(local.partition, source="local"), False
            hot = await self._from_redis_once(scope, version) if maybe_copy else None
            if hot is not None and hot.embedding_model == model:
                self._local.put(key, hot)
                self.stats.hot += 1
                return hot, False
        except RedisError as exc:
            log.warning("hot tier unavailable, reading the partition from Postgres: %s", exc)
            if isinstance(exc, RedisConnectionError) and not isinstance(exc, RedisTimeoutError):
                # Invalidations may be lost while Redis is away: no copy can be trusted.
                # A slow read alone says nothing about them.
                self._local.clear()
            self.stats.cold += 1
            cold = await self._cold.for_query(session, scope, query_vector, "", query_tokens, model)
            return cold, True
        self.stats.cold += 1
        cold = await self._cold.for_query(
            session, scope, query_vector, version, query_tokens, model
        )
        self._fill_later(scope, version, model)
        return cold, False

    async def recalled(
        self,
        session: AsyncSession,
        scope: RelationshipScope,
        partition: Partition,
        rows: Sequence[int],
    ) -> dict[int, RecalledMemory]:
        """The memories of ``rows`` of a partition :meth:`load` returned (read from
        Postgres for a cold one: a memory a write has made inactive since has none)."""
        if partition.texts is None:
            return await self._cold.texts(session, scope, partition, rows)
        return {row: partition.recalled(row) for row in rows}

    async def invalidate(self, scope: RelationshipScope) -> None:
        """A memory of this relationship changed (call after the commit)."""
        self._local.drop((scope.tenant_id, scope.relationship_id))
        await self.versions.invalidate(scope)

    async def _touch(self, copy: LocalCopy, scope: RelationshipScope) -> None:
        now = time.monotonic()
        if now - copy.touched_at > TOUCH_EVERY_SECONDS:
            copy.touched_at = now
            await self._redis.expire(partition_keys(scope)[1], self._ttl)

    async def _from_redis_once(self, scope: RelationshipScope, version: str) -> Partition | None:
        """Concurrent requests that miss this process's copy share one read and decode
        of the Redis copy."""
        key = (scope.tenant_id, scope.relationship_id)
        pending = self._decoding.get(key)
        if pending is None:
            pending = asyncio.ensure_future(self._from_redis(scope))
            self._decoding[key] = pending
            pending.add_done_callback(lambda _: self._decoding.pop(key, None))
        found = await asyncio.shield(pending)
        return found if found is not None and found.version == version else None

    async def _from_redis(self, scope: RelationshipScope) -> Partition | None:
        raw = await self._bulk.getex(partition_keys(scope)[1], ex=self._ttl)
        return None if raw is None else encoding.decode(as_bytes(raw), self._layout, self._window)

    def _fill_later(self, scope: RelationshipScope, version: str, model: str | None) -> None:
        key = (scope.tenant_id, scope.relationship_id)
        if key in self._filling or len(self._filling) >= FILLS_AT_ONCE + FILLS_WAITING:
            return
        fill = self._fill(scope, version, model)
        task = spawn(fill, "hot partition fill", after_response=True)
        self._filling[key] = task
        task.add_done_callback(lambda _: self._filling.pop(key, None))

    async def _fill(self, scope: RelationshipScope, version: str, model: str | None) -> None:
        """Read the whole partition a request read for its query at ``version``, and keep
        it in this process and in Redis (off the request that found it cold)."""
        async with self._fill_slots:
            try:
                if not await self.versions.still(scope, version):
                    return  # written to while this fill waited: the copy would be stale
                async with tenant_session(self._sessions, TenantId(scope.tenant_id)) as session:
                    whole = await self._cold.whole(session, scope, version, model)
            except (*DATABASE_ERRORS, RedisError) as exc:
                log.warning("hot partition not filled: %s", exc)
                return
            self.stats.fills += 1
            # A write after the check replaced the token: this copy is then never used
            # (local and Redis copies are both checked against the current token).
            self._local.put((scope.tenant_id, scope.relationship_id), replace(whole, source="hot"))
            try:  # last, so that a Redis copy existing means the fill is done (tests, bench)
                blob = encoding.encode(self._layout, whole)
                await self._bulk.set(partition_keys(scope)[1], blob, ex=self._ttl)
            except RedisError as exc:
                log.warning("hot partition not stored: %s", exc)

    async def drain(self) -> None:
        """Wait for the fills in flight (before shutdown; tests)."""
        await asyncio.gather(*self._filling.values(), return_exceptions=True)

    def close(self) -> None:
        """At shutdown, before the Redis clients close."""
        self.versions.close()
