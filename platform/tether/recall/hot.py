"""The partition store: one relationship's active memories, ready to rank, read through
three tiers — this process's memory, the Redis hot partition, Postgres.

A version token in Redis says which state of a partition is current. Every memory write
replaces the token when its transaction commits (and drops the Redis copy), so a copy
tagged with an older token is never used. Redis holds records, tokens and vectors with a
TTL refreshed on use; a miss or an eviction rebuilds from Postgres, which has everything.
When Redis is away, partitions are read from Postgres and this process's copies are
dropped (their freshness can no longer be checked).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import msgspec
import numpy as np
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.ids import RelationshipScope
from tether.core.background import spawn
from tether.core.redis_client import as_bytes
from tether.core.telemetry import traced
from tether.memories.models import Memory
from tether.memories.repositories import active_now
from tether.recall.partition import PartitionIndex, RankDoc
from tether.recall.weights import RankWeights

log = logging.getLogger(__name__)

# A local copy is re-checked against Redis on every use, and dropped after this long
# regardless (bounds staleness if an invalidation was lost during a Redis outage).
LOCAL_MAX_AGE_SECONDS = 600.0
# Refresh the Redis TTL at most this often per partition per process.
TOUCH_EVERY_SECONDS = 60.0
VERSION_TTL_SECONDS = 30 * 24 * 3600


class PartitionRecord(msgspec.Struct, array_like=True, frozen=True):
    id: uuid.UUID
    external_id: str | None
    content: str
    memory_type: str
    layer: str
    occurred_at: datetime
    expires_at: datetime | None
    importance: float
    confidence: float
    strength: float
    last_recalled_at: datetime | None
    private_to_creator: bool
    group: str | None
    tokens: list[str]


class _Blob(msgspec.Struct, array_like=True):
    version: str
    dimension: int
    records: list[PartitionRecord]
    vectors: bytes  # float16 rows, zero rows where a memory has no vector
    has_vector: bytes


@dataclass(frozen=True, slots=True)
class LoadedPartition:
    records: list[PartitionRecord]
    index: PartitionIndex
    version: str
    source: str  # "local" | "hot" | "cold"


@dataclass(slots=True)
class _Local:
    partition: LoadedPartition
    loaded_at: float
    touched_at: float


@dataclass(slots=True)
class TierStats:
    """Where partitions were found, since the process started (exported as a metric)."""

    local: int = 0
    hot: int = 0
    cold: int = 0

    @property
    def hit_rate(self) -> float | None:
        total = self.local + self.hot + self.cold
        return None if total == 0 else (self.local + self.hot) / total


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(_Blob)


def _keys(scope: RelationshipScope) -> tuple[str, str]:
    base = f"{scope.tenant_id}:{scope.relationship_id}"
    return f"tether:pv:{base}", f"tether:hot:{base}"


def _text(raw: bytes | str | None) -> str | None:
    return raw.decode() if isinstance(raw, bytes) else raw


def _build(
    records: list[PartitionRecord],
    vectors: list[np.ndarray | None],
    weights: RankWeights,
    version: str,
    source: str,
) -> LoadedPartition:
    docs = [
        RankDoc(
            key=i,
            tokens=r.tokens,
            vector=v,
            importance=r.importance,
            confidence=r.confidence,
            strength=r.strength,
            occurred_at=r.occurred_at,
            last_recalled_at=r.last_recalled_at,
            group=r.group,
            ordinal=i,
        )
        for i, (r, v) in enumerate(zip(records, vectors, strict=True))
    ]
    return LoadedPartition(records, PartitionIndex.build(docs, weights), version, source)


def _vector(raw: bytes) -> np.ndarray:
    """pgvector's binary form: dimension (int16), unused (int16), big-endian float32s."""
    return np.frombuffer(raw, dtype=">f4", offset=4).astype(np.float32)


class PartitionStore:
    def __init__(
        self,
        redis: Redis,
        weights: RankWeights,
        ttl_seconds: int,
        local_capacity: int,
        embedding_model: str | None = None,
    ) -> None:
        # Vectors of another model (before `tether reindex` ran) are not comparable
        # with query vectors: those memories rank lexically until reindexed.
        self._model = embedding_model
        self._redis = redis
        self._weights = weights
        self._ttl = ttl_seconds
        self._capacity = local_capacity
        self._local: OrderedDict[tuple[uuid.UUID, uuid.UUID], _Local] = OrderedDict()
        self._loading: dict[
            tuple[uuid.UUID, uuid.UUID], asyncio.Future[tuple[LoadedPartition, bool]]
        ] = {}
        self.stats = TierStats()

    @traced("recall.load")
    async def load(
        self, session: AsyncSession, scope: RelationshipScope
    ) -> tuple[LoadedPartition, bool]:
        """The partition and whether Redis was unavailable (the read went to Postgres).

        Concurrent loads of one partition that miss this process's copy share one read
        (a large partition is megabytes; reading it once per request would snowball)."""
        key = (scope.tenant_id, scope.relationship_id)
        pending = self._loading.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        task = asyncio.ensure_future(self._load(session, scope))
        self._loading[key] = task
        try:
            return await asyncio.shield(task)
        finally:
            if task.done():
                self._loading.pop(key, None)
            else:
                task.add_done_callback(lambda _: self._loading.pop(key, None))

    async def _load(
        self, session: AsyncSession, scope: RelationshipScope
    ) -> tuple[LoadedPartition, bool]:
        version_key, blob_key = _keys(scope)
        try:
            version = _text(await self._redis.get(version_key))
            if version is None:
                version = secrets.token_hex(8)
                if not await self._redis.set(version_key, version, ex=VERSION_TTL_SECONDS, nx=True):
                    version = _text(await self._redis.get(version_key)) or version
            local = self._from_local(scope, version)
            if local is not None:
                await self._touch(scope, blob_key)
                return local, False
            hot = await self._from_redis(blob_key, version)
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
            return await self._from_postgres(session, scope, "unverified"), True
        cold = await self._from_postgres(session, scope, version)
        self.stats.cold += 1
        self._remember(scope, cold)
        # Writing a large blob (megabytes) to Redis is not the caller's wait.
        spawn(self._store(blob_key, cold), "hot partition store")
        return cold, False

    async def invalidate(self, scope: RelationshipScope) -> None:
        """A memory of this relationship changed (call after commit)."""
        version_key, blob_key = _keys(scope)
        self._local.pop((scope.tenant_id, scope.relationship_id), None)
        try:
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.set(version_key, secrets.token_hex(8), ex=VERSION_TTL_SECONDS)
                pipe.delete(blob_key)
                await pipe.execute()
        except RedisError as exc:
            log.error("hot partition of %s not invalidated: %s", scope.relationship_id, exc)

    def _from_local(self, scope: RelationshipScope, version: str) -> LoadedPartition | None:
        key = (scope.tenant_id, scope.relationship_id)
        entry = self._local.get(key)
        if entry is None:
            return None
        if (
            entry.partition.version != version
            or time.monotonic() - entry.loaded_at > LOCAL_MAX_AGE_SECONDS
        ):
            del self._local[key]
            return None
        self._local.move_to_end(key)
        self.stats.local += 1
        return replace(entry.partition, source="local")

    def _remember(self, scope: RelationshipScope, partition: LoadedPartition) -> None:
        if self._capacity == 0:
            return
        now = time.monotonic()
        self._local[(scope.tenant_id, scope.relationship_id)] = _Local(partition, now, now)
        while len(self._local) > self._capacity:
            self._local.popitem(last=False)

    async def _touch(self, scope: RelationshipScope, blob_key: str) -> None:
        entry = self._local.get((scope.tenant_id, scope.relationship_id))
        now = time.monotonic()
        if entry is not None and now - entry.touched_at > TOUCH_EVERY_SECONDS:
            entry.touched_at = now
            await self._redis.expire(blob_key, self._ttl)

    async def _from_redis(self, blob_key: str, version: str) -> LoadedPartition | None:
        raw = await self._redis.getex(blob_key, ex=self._ttl)
        if raw is None:
            return None
        blob = _decoder.decode(as_bytes(raw))
        if blob.version != version:
            return None
        count = len(blob.records)
        vectors: list[np.ndarray | None] = [None] * count
        if blob.dimension and count:
            matrix = np.frombuffer(blob.vectors, dtype=np.float16).reshape(count, blob.dimension)
            present = np.frombuffer(blob.has_vector, dtype=np.bool_)
            floats = matrix.astype(np.float32)
            vectors = [floats[i] if present[i] else None for i in range(count)]
        return _build(blob.records, vectors, self._weights, version, "hot")

    async def _from_postgres(
        self, session: AsyncSession, scope: RelationshipScope, version: str
    ) -> LoadedPartition:
        now = datetime.now(UTC)
        # Plain columns, and vectors in pgvector's binary form: parsing 5,000 vectors
        # from their text form through the ORM took over a second.
        statement = (
            select(
                Memory.id,
                Memory.external_id,
                Memory.content,
                Memory.memory_type,
                Memory.layer,
                Memory.occurred_at,
                Memory.expires_at,
                Memory.importance,
                Memory.confidence,
                Memory.strength,
                Memory.last_recalled_at,
                Memory.private_to_creator,
                Memory.source_session_id,
                Memory.tokens,
                Memory.embedding_model,
                func.vector_send(Memory.embedding).label("vector"),
            )
            .where(
                Memory.relationship_id == scope.relationship_id,
                Memory.tenant_id == scope.tenant_id,
                Memory.deleted_at.is_(None),
                *active_now(now),
            )
            .order_by(Memory.occurred_at, Memory.id)
        )
        rows = (await session.execute(statement)).all()
        records = [
            PartitionRecord(
                id=r.id,
                external_id=r.external_id,
                content=r.content,
                memory_type=r.memory_type,
                layer=r.layer,
                occurred_at=r.occurred_at,
                expires_at=r.expires_at,
                importance=r.importance,
                confidence=r.confidence,
                strength=r.strength,
                last_recalled_at=r.last_recalled_at,
                private_to_creator=r.private_to_creator,
                # One session's memories (extracted from it, or imported with its id)
                # are neighbours in the order they happened; others stand alone.
                group=r.source_session_id,
                tokens=list(r.tokens),
            )
            for r in rows
        ]
        vectors = [
            None
            if r.vector is None or (self._model is not None and r.embedding_model != self._model)
            else _vector(r.vector)
            for r in rows
        ]
        return _build(records, vectors, self._weights, version, "cold")

    async def _store(self, blob_key: str, partition: LoadedPartition) -> None:
        matrix = partition.index.matrix
        blob = _Blob(
            version=partition.version,
            dimension=0 if matrix is None else int(matrix.shape[1]),
            records=partition.records,
            vectors=b"" if matrix is None else matrix.astype(np.float16).tobytes(),
            has_vector=partition.index.has_vector.tobytes(),
        )
        try:
            await self._redis.set(blob_key, _encoder.encode(blob), ex=self._ttl)
        except RedisError as exc:
            log.warning("hot partition not stored: %s", exc)
