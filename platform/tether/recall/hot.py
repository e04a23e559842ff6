"""The partition store: one relationship's active memories, ready to rank, read through
three tiers — this process's memory, the Redis hot partition, Postgres.

A version token in Redis says which state of a partition is current. Every memory write
replaces the token when its transaction commits (and drops the Redis copy), so a copy
tagged with an older token is never used. Redis holds records, tokens and vectors with a
TTL refreshed on use; a miss or an eviction rebuilds from Postgres, which has everything.
When Redis is away, partitions are read from Postgres and this process's copies are
dropped (their freshness can no longer be checked).

A cold read (cold.py) serves the request without moving vectors: Postgres (pgvector)
computes the query's cosine similarity to every memory of the partition, from a stored
snapshot of a large partition or from its rows. The full partition, vectors included, is
then loaded in the background and stored in both upper tiers for the requests that
follow (and a large partition read from rows gets its snapshot). The Redis copy holds
the built index (BM25 postings, float16 vectors) as flat arrays, so another process
decodes it without re-indexing.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
import uuid
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
from tether.recall.invalidations import record_failed
from tether.recall.loaded import LoadedPartition, PartitionRecord, Vector
from tether.recall.local import LocalCopies, LocalCopy
from tether.recall.query_read import QueryPartition, RankedPartition
from tether.recall.weights import RankWeights

log = logging.getLogger(__name__)

# A local copy is re-checked against Redis on every use, and dropped after this long
# regardless (bounds staleness if an invalidation was lost during a Redis outage).
LOCAL_MAX_AGE_SECONDS = 600.0
# Refresh the Redis TTL at most this often per partition per process.
TOUCH_EVERY_SECONDS = 60.0
# A version token lives this long from when it is set, never extended by reads: an
# invalidation that failed (the Redis unreachable when a write committed) leaves the old
# token and copies in place, and their use refreshes the copy's TTL, so the token's
# expiry is what bounds how long they can outlive the write. Each partition in use is
# then read from Postgres once per period (decision 0021).
VERSION_TTL_SECONDS = 3600
# A failed invalidation is tried again in the background (in API processes, whose loop
# always runs), waits doubling from the first up to the most, until it lands or the
# token has expired by itself; past the most pending, the oldest are left to the TTL.
INVALIDATE_RETRY_FIRST_SECONDS = 0.5
INVALIDATE_RETRY_MOST_SECONDS = 30.0
INVALIDATIONS_PENDING = 10_000
# Bumped when the blob's layout changes: a blob of another layout is a miss.
BLOB_FORMAT = 5
# Background fills running at once per process. Each reads megabytes from Postgres and
# writes megabytes to Redis; many at once (a burst of cold large partitions) starved the
# event loop until Redis writes timed out and no copy was stored at all.
FILLS_AT_ONCE = 2
# Fills waiting for a slot hold their cold partition: past this many, a cold read starts
# none (the partition is filled by a later read).
FILLS_WAITING = 32
# A snapshot is rebuilt this long after the last write to its relationship.
REBUILD_AFTER_SECONDS = 0.2
# Relationships waiting for a rebuild per process; past this, writes start none.
REBUILDS_WAITING = 64


# A partition's key in this process's maps: (tenant id, relationship id).
_Key = tuple[uuid.UUID, uuid.UUID]


@dataclass(slots=True)
class TierStats:
    """Where partitions were found, since the process started (exported as a metric)."""

    local: int = 0
    hot: int = 0
    cold: int = 0
    # Background fills after cold reads, by what they read the whole partition from.
    snapshot_fills: int = 0
    row_fills: int = 0

    @property
    def hit_rate(self) -> float | None:
        total = self.local + self.hot + self.cold
        return None if total == 0 else (self.local + self.hot) / total


def partition_keys(scope: RelationshipScope) -> tuple[str, str]:
    """The version token's and the hot blob's Redis keys. The blob's key names its
    format, so a release that reads another layout never meets it (rolling deploys)."""
    base = f"{scope.tenant_id}:{scope.relationship_id}"
    return f"tether:pv:{base}", f"tether:hot{BLOB_FORMAT}:{base}"


def _text(raw: bytes | str | None) -> str | None:
    return raw.decode() if isinstance(raw, bytes) else raw


def _layout(weights: RankWeights) -> str:
    return f"{BLOB_FORMAT}:{weights.bm25_k1}:{weights.bm25_b}:{weights.neighbour_window}"


class PartitionStore:
    def __init__(
        self,
        redis: Redis,
        weights: RankWeights,
        ttl_seconds: int,
        local_capacity: int,
        embedding_model: str | None = None,
        sessions: async_sessionmaker[AsyncSession] | None = None,
        snapshot_min_memories: int | None = None,
        bulk_redis: Redis | None = None,
        local_bytes: int = 0,
        durable_redis: Redis | None = None,
        snapshot_rewrite_changes: int = 1,
    ) -> None:
        """``sessions``: where background fills after a cold read, and snapshot
        rebuilds after a write, get their own session; without it (workers, the CLI)
        nothing happens in the background (workers call :meth:`refresh_snapshot`).
        ``snapshot_min_memories``: the smallest partition that gets a snapshot;
        ``snapshot_rewrite_changes``: how many recorded changes make one worth storing
        again (ColdReader).
        ``bulk_redis``: the client for partition blobs (megabytes; a longer timeout).
        ``local_capacity``, ``local_bytes``: the bounds of this process's copies.
        ``durable_redis``: where a failed invalidation is recorded for the periodic
        retry (invalidations.py); None: not recorded."""
        self._cold = ColdReader(
            weights,
            embedding_model,
            snapshot_min_memories,
            rewrite_after_changes=snapshot_rewrite_changes,
        )
        self._redis = redis
        self._bulk = bulk_redis or redis
        self._weights = weights
        self._layout = _layout(weights)
        self._ttl = ttl_seconds
        self._local = LocalCopies(local_capacity, local_bytes)
        self._sessions = sessions
        self._durable = durable_redis
        self._decoding: dict[_Key, asyncio.Future[LoadedPartition | None]] = {}
        self._filling: dict[_Key, asyncio.Task[None]] = {}
        self._refreshing: dict[_Key, asyncio.Task[None]] = {}
        # Written to again while its rebuild runs: rebuild once more after it.
        self._written: set[_Key] = set()
        self._fill_slots = asyncio.Semaphore(FILLS_AT_ONCE)
        # Invalidations that failed, with when they first did (monotonic), to retry.
        self._uninvalidated: dict[_Key, tuple[RelationshipScope, float]] = {}
        self._retrying: asyncio.Task[None] | None = None
        self.stats = TierStats()

    @traced("recall.load")
    async def load(
        self,
        session: AsyncSession,
        scope: RelationshipScope,
        query_vector: Awaitable[Vector | None],
        query_tokens: Sequence[str],
    ) -> tuple[RankedPartition, bool]:
        """The partition to rank the query of ``query_tokens`` with, and whether Redis
        was unavailable (the read went to Postgres).

        ``query_vector`` is awaited only when the partition is cold: Postgres then
        computes the distances to it, and the partition is read for that query only (a
        ``QueryPartition``; :meth:`records` reads the records the ranking returns) and
        filled into the hot tiers afterwards."""
        version_key, blob_key = partition_keys(scope)
        try:
            key = (scope.tenant_id, scope.relationship_id)
            holds_none = self._local.get(key, LOCAL_MAX_AGE_SECONDS) is None
            version, blob_stored = await self._version_of(version_key, blob_key, holds_none)
            # Looked up again: a fill may have kept a newer copy during the round trip.
            local = self._from_local(scope, version)
            if local is not None:
                await self._touch(local, blob_key)
                return replace(local.partition, source="local"), False
            hot = await self._from_redis_once(scope, blob_key, version) if blob_stored else None
            if hot is not None:
                self._remember(scope, hot)
                self.stats.hot += 1
                return hot, False
        except RedisError as exc:
            log.warning("hot tier unavailable, reading the partition from Postgres: %s", exc)
            if isinstance(exc, RedisConnectionError) and not isinstance(exc, RedisTimeoutError):
                # Redis is away: invalidations may be lost meanwhile, so no local copy
                # can be trusted any more. A slow read alone says nothing about them.
                self._local.clear()
            self.stats.cold += 1
            cold = await self._cold.read_for_query(
                session, scope, query_vector, "unverified", query_tokens
            )
            return cold, True
        cold = await self._cold.read_for_query(session, scope, query_vector, version, query_tokens)
        self.stats.cold += 1
        self._fill_later(scope, version, blob_key)
        return cold, False

    async def _version_of(
        self, version_key: str, blob_key: str, ask_for_copy: bool
    ) -> tuple[str, bool]:
        """The partition's current version token (minted if it has none), and whether a
        Redis copy may hold it. ``ask_for_copy`` (this process holds no copy of it):
        whether one exists is asked in the same round trip, because a cold read's Redis
        steps all come before its Postgres ones; otherwise the token alone is read."""
        if ask_for_copy:
            async with self._redis.pipeline(transaction=False) as pipe:
                pipe.get(version_key)
                pipe.exists(blob_key)
                current, copies = await pipe.execute()
        else:
            current, copies = await self._redis.get(version_key), 1
        version = _text(current)
        if version is not None:
            return version, bool(copies)
        minted = secrets.token_hex(8)
        if await self._redis.set(version_key, minted, ex=VERSION_TTL_SECONDS, nx=True):
            return minted, False  # no copy can hold a token minted just now
        # Another process minted one first; its fill may have stored a copy meanwhile.
        return _text(await self._redis.get(version_key)) or minted, True

    async def invalidate(self, scope: RelationshipScope) -> None:
        """A memory of this relationship changed (call after commit). With ``sessions``,
        a large partition's snapshot is rebuilt in the background."""
        key = (scope.tenant_id, scope.relationship_id)
        self._local.drop(key)
        try:
            await self.replace_version(scope)
            self._uninvalidated.pop(key, None)
        except RedisError as exc:
            log.error("hot partition of %s not invalidated: %s", scope.relationship_id, exc)
            if self._durable is not None:
                await record_failed(self._durable, scope, time.time())
            self._retry_later(key, scope)
        if self._sessions is None:
            return
        if key not in self._refreshing and len(self._refreshing) >= REBUILDS_WAITING:
            return  # a write storm: the next cold read stores the snapshot instead
        self._written.add(key)
        if key not in self._refreshing:
            task = spawn(self._refresh_later(self._sessions, scope), "snapshot rebuild")
            self._refreshing[key] = task

    async def replace_version(self, scope: RelationshipScope) -> None:
        """Make every copy of the partition stale (raises ``RedisError`` if the hot
        Redis does not answer)."""
        version_key, blob_key = partition_keys(scope)
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.set(version_key, secrets.token_hex(8), ex=VERSION_TTL_SECONDS)
            pipe.delete(blob_key)
            await pipe.execute()

    def _retry_later(self, key: _Key, scope: RelationshipScope) -> None:
        """Until it lands, other processes may serve the partition as it was before the
        write (their copies' token is unchanged): the token's TTL bounds that, a retry
        ends it as soon as the Redis answers again. Without ``sessions`` (workers, the
        CLI: no background work), the periodic retry of the recorded failures does
        (invalidations.py), or, if they could not be recorded, the TTL alone."""
        if self._sessions is None:
            return
        if key not in self._uninvalidated and len(self._uninvalidated) >= INVALIDATIONS_PENDING:
            self._uninvalidated.pop(next(iter(self._uninvalidated)))
        self._uninvalidated.setdefault(key, (scope, time.monotonic()))
        if self._retrying is None or self._retrying.done():
            self._retrying = spawn(self._retry_invalidations(), "invalidation retry")

    async def _retry_invalidations(self) -> None:
        wait = INVALIDATE_RETRY_FIRST_SECONDS
        while self._uninvalidated:
            await asyncio.sleep(wait)
            wait = min(wait * 2, INVALIDATE_RETRY_MOST_SECONDS)
            for key, (scope, since) in list(self._uninvalidated.items()):
                if time.monotonic() - since >= VERSION_TTL_SECONDS:
                    self._uninvalidated.pop(key, None)  # the token expired by itself
                    continue
                try:
                    await self.replace_version(scope)
                except RedisError:
                    break  # still away: wait longer
                self._uninvalidated.pop(key, None)
                self._local.drop(key)
                log.info("hot partition of %s invalidated on retry", scope.relationship_id)
            else:
                wait = INVALIDATE_RETRY_FIRST_SECONDS

    async def _refresh_later(
        self, sessions: async_sessionmaker[AsyncSession], scope: RelationshipScope
    ) -> None:
        """Rebuild after writes settle: a burst of writes (an import in batches) costs
        one rebuild, not one per batch, and a write during a rebuild is not missed."""
        key = (scope.tenant_id, scope.relationship_id)
        try:
            while key in self._written:
                self._written.discard(key)
                await asyncio.sleep(REBUILD_AFTER_SECONDS)
                if key in self._written:
                    continue  # written to again meanwhile: wait for quiet
                async with self._fill_slots:  # shares the fills' budget of background reads
                    await self.refresh_snapshot(sessions, scope)
        finally:
            # In the same step as the last check (a done callback runs a step later, and
            # a write in between would find this task still registered and be missed).
            self._refreshing.pop(key, None)

    async def refresh_snapshot(
        self, sessions: async_sessionmaker[AsyncSession], scope: RelationshipScope
    ) -> bool:
        """Rebuild the snapshot of a large partition that has none (a write dropped
        it) or has changes recorded since it was built, so the fill after its next cold
        read need not index or merge rows; True if one was stored."""
        try:
            async with tenant_session(sessions, TenantId(scope.tenant_id)) as session:
                partition = await self._cold.read_for_snapshot(session, scope)
            if partition is None:
                return False
            return await self._cold.store_snapshot(sessions, scope, partition)
        except DATABASE_ERRORS as exc:
            log.warning("partition snapshot not rebuilt: %s", exc)
            return False

    def _from_local(self, scope: RelationshipScope, version: str) -> LocalCopy | None:
        key = (scope.tenant_id, scope.relationship_id)
        copy = self._local.get(key, LOCAL_MAX_AGE_SECONDS)
        if copy is None:
            return None
        if copy.partition.version != version:
            self._local.drop(key)
            return None
        self.stats.local += 1
        return copy

    async def records(
        self,
        session: AsyncSession,
        scope: RelationshipScope,
        partition: RankedPartition,
        rows: Sequence[int],
    ) -> dict[int, PartitionRecord]:
        """The records of ``rows`` of a partition :meth:`load` returned (read from
        Postgres for a ``QueryPartition``: a row a write has made inactive since has
        none)."""
        if isinstance(partition, QueryPartition):
            return await self._cold.records(session, scope, partition, rows)
        return {row: partition.records[row] for row in rows}

    def _remember(self, scope: RelationshipScope, partition: LoadedPartition) -> None:
        self._local.put((scope.tenant_id, scope.relationship_id), partition)

    async def _touch(self, copy: LocalCopy, blob_key: str) -> None:
        now = time.monotonic()
        if now - copy.touched_at > TOUCH_EVERY_SECONDS:
            copy.touched_at = now
            await self._redis.expire(blob_key, self._ttl)

    async def _from_redis_once(
        self, scope: RelationshipScope, blob_key: str, version: str
    ) -> LoadedPartition | None:
        """Concurrent requests that miss this process's copy share one read and decode
        of the Redis copy (a large partition is megabytes)."""
        key = (scope.tenant_id, scope.relationship_id)
        pending = self._decoding.get(key)
        if pending is None:
            pending = asyncio.ensure_future(self._from_redis(blob_key, version))
            self._decoding[key] = pending
            pending.add_done_callback(lambda _: self._decoding.pop(key, None))
        found = await asyncio.shield(pending)
        return found if found is not None and found.version == version else None

    async def _from_redis(self, blob_key: str, version: str) -> LoadedPartition | None:
        raw = await self._bulk.getex(blob_key, ex=self._ttl)
        blob = None if raw is None else encoding.decode(as_bytes(raw))
        if blob is None or blob.version != version or blob.layout != self._layout:
            return None
        window = self._weights.neighbour_window
        return encoding.loaded(
            blob, version, "hot", window, has_vector=blob.has_vectors(), matrix=blob.matrix()
        )

    def _fill_later(self, scope: RelationshipScope, version: str, blob_key: str) -> None:
        key = (scope.tenant_id, scope.relationship_id)
        if self._sessions is None or key in self._filling:
            return
        if len(self._filling) >= FILLS_AT_ONCE + FILLS_WAITING:
            return
        fill = self._fill(self._sessions, scope, version, blob_key)
        task = spawn(fill, "hot partition fill", after_response=True)
        self._filling[key] = task
        task.add_done_callback(lambda _: self._filling.pop(key, None))

    def close(self) -> None:
        """Stop retrying failed invalidations (at shutdown, before the Redis clients are
        closed): the version tokens' TTL bounds what they leave."""
        if self._retrying is not None and not self._retrying.done():
            self._retrying.cancel()
            log.warning("%d hot partitions left to their TTL", len(self._uninvalidated))
        self._uninvalidated.clear()

    async def drain(self) -> None:
        """Wait for the background fills and rebuilds in flight (before shutdown; tests)."""
        await asyncio.gather(
            *self._filling.values(), *self._refreshing.values(), return_exceptions=True
        )

    async def _fill(
        self,
        sessions: async_sessionmaker[AsyncSession],
        scope: RelationshipScope,
        version: str,
        blob_key: str,
    ) -> None:
        """Read the whole partition a request read for its query at ``version`` (from its
        snapshot if it has a usable one) with its vectors, and keep it in this process and
        in Redis (off the request that found it cold)."""
        async with self._fill_slots:
            version_key, _ = partition_keys(scope)
            try:
                if _text(await self._redis.get(version_key)) != version:
                    return  # written to while this fill waited: the copy would be stale
                async with tenant_session(sessions, TenantId(scope.tenant_id)) as session:
                    cold = await self._cold.read_whole(session, scope, version)
                    matrix, has_vector = await self._cold.vectors(session, scope, cold.records)
            except (*DATABASE_ERRORS, RedisError) as exc:
                log.warning("hot partition not filled: %s", exc)
                return
            if cold.source == "snapshot":
                self.stats.snapshot_fills += 1
            else:
                self.stats.row_fills += 1
            index = replace(cold.index, matrix=matrix, has_vector=has_vector)
            full = replace(
                cold,
                index=index,
                source="hot",
                similarity=None,
                row_versions=None,
                merged_from=None,
            )
            # A write after the version check replaced the token: this copy is then never
            # used (local and Redis copies are both checked against the current token).
            self._remember(scope, full)
            try:
                await self._cold.store_snapshot(sessions, scope, cold)
            except DATABASE_ERRORS as exc:
                log.warning("partition snapshot not stored: %s", exc)
            except Exception:  # a snapshot is derived data: its failure must not stop the fill
                log.exception("partition snapshot not stored")
            # Last, so that the Redis copy existing means the fill is done (tests, bench).
            await self._store(blob_key, full)

    async def _store(self, blob_key: str, partition: LoadedPartition) -> None:
        blob = encoding.encode(self._layout, partition.version, partition, vectors=True)
        try:
            await self._bulk.set(blob_key, blob, ex=self._ttl)
        except RedisError as exc:
            log.warning("hot partition not stored: %s", exc)
