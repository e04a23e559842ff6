"""The partition store: one relationship's active memories, ready to rank, read through
three tiers — this process's memory, the Redis hot partition, Postgres.

A version token in Redis says which state of a partition is current. Every memory write
replaces the token when its transaction commits (and drops the Redis copy), so a copy
tagged with an older token is never used. Redis holds records, tokens and vectors with a
TTL refreshed on use; a miss or an eviction rebuilds from Postgres, which has everything.
When Redis is away, partitions are read from Postgres and this process's copies are
dropped (their freshness can no longer be checked).

A cold read serves the request without moving vectors: Postgres (pgvector) computes the
query's cosine similarity to every memory of the partition, and only those numbers leave
it with the texts and tokens. The full partition, vectors included, is then loaded in the
background and stored in both upper tiers for the requests that follow. The Redis copy
holds the built index (BM25 postings, neighbour table, float16 vectors) as flat arrays,
so another process decodes it without re-indexing.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError
from sqlalchemy import ColumnElement, case, func, literal, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tenancy.ids import RelationshipScope
from tether.core.background import spawn
from tether.core.ids import TenantId
from tether.core.redis_client import as_bytes
from tether.core.telemetry import traced
from tether.core.tenant_sessions import tenant_session
from tether.memories.models import Memory
from tether.memories.repositories import active_now
from tether.recall.bm25 import Bm25Index, Bm25Params, Bm25Parts
from tether.recall.partition import PartitionIndex
from tether.recall.weights import RankWeights

log = logging.getLogger(__name__)

# A local copy is re-checked against Redis on every use, and dropped after this long
# regardless (bounds staleness if an invalidation was lost during a Redis outage).
LOCAL_MAX_AGE_SECONDS = 600.0
# Refresh the Redis TTL at most this often per partition per process.
TOUCH_EVERY_SECONDS = 60.0
VERSION_TTL_SECONDS = 30 * 24 * 3600
# Bumped when the blob's layout changes: a blob of another layout is a miss.
BLOB_FORMAT = 3
# Background fills running at once per process. Each reads megabytes from Postgres and
# writes megabytes to Redis; many at once (a burst of cold large partitions) starved the
# event loop until Redis writes timed out and no copy was stored at all.
FILLS_AT_ONCE = 2
# Fills waiting for a slot hold their cold partition: past this many, a cold read starts
# none (the partition is filled by a later read).
FILLS_WAITING = 32

Vector = npt.NDArray[np.float32]
FloatArray = npt.NDArray[np.float64]


class PartitionRecord(msgspec.Struct, array_like=True, frozen=True, gc=False):
    """One memory of a partition. Nothing in it is tracked by the garbage collector: the
    id is kept as its 16 bytes (``uuid.UUID`` objects are tracked, and a process holding
    fifty 5,000-memory partitions made every full collection walk 250,000 of them)."""

    key: bytes  # the memory's id, uuid.UUID(bytes=key)
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

    @property
    def id(self) -> uuid.UUID:
        return uuid.UUID(bytes=self.key)


class _Blob(msgspec.Struct, array_like=True):
    layout: str  # BLOB_FORMAT and the ranking parameters the index was built with
    version: str
    records: list[PartitionRecord]
    terms: list[str]
    offsets: bytes  # int64
    postings: bytes  # int32 document rows
    weights: bytes  # float32
    dimension: int
    vectors: bytes  # float16 rows, zero rows where a memory has no vector
    has_vector: bytes


@dataclass(frozen=True, slots=True)
class LoadedPartition:
    """A partition ready to rank. ``similarity`` is set on a cold read only: the query's
    cosine to each row, computed by Postgres (``index.matrix`` is then None)."""

    records: list[PartitionRecord]
    index: PartitionIndex
    version: str
    source: str  # "local" | "hot" | "cold"
    expires_at: FloatArray  # POSIX seconds, inf for never
    private: npt.NDArray[np.bool_]
    latest_summary: int | None
    similarity: Vector | None = None


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


def partition_keys(scope: RelationshipScope) -> tuple[str, str]:
    """The version token's and the hot blob's Redis keys. The blob's key names its
    format, so a release that reads another layout never meets it (rolling deploys)."""
    base = f"{scope.tenant_id}:{scope.relationship_id}"
    return f"tether:pv:{base}", f"tether:hot{BLOB_FORMAT}:{base}"


def _text(raw: bytes | str | None) -> str | None:
    return raw.decode() if isinstance(raw, bytes) else raw


def _layout(weights: RankWeights) -> str:
    return f"{BLOB_FORMAT}:{weights.bm25_k1}:{weights.bm25_b}"


def _floats(records: Sequence[PartitionRecord], field: str) -> FloatArray:
    return np.fromiter((getattr(r, field) for r in records), np.float64, len(records))


def _seconds(moment: datetime | None, default: float) -> float:
    return default if moment is None else moment.timestamp()


def _assemble(
    records: list[PartitionRecord],
    index: PartitionIndex,
    version: str,
    source: str,
    similarity: Vector | None = None,
) -> LoadedPartition:
    count = len(records)
    summaries = [i for i, r in enumerate(records) if r.memory_type == "summary"]
    return LoadedPartition(
        records=records,
        index=index,
        version=version,
        source=source,
        expires_at=np.fromiter(
            (_seconds(r.expires_at, np.inf) for r in records), np.float64, count
        ),
        private=np.fromiter((r.private_to_creator for r in records), np.bool_, count),
        latest_summary=max(summaries, key=lambda i: records[i].occurred_at, default=None),
        similarity=similarity,
    )


def _index(
    records: list[PartitionRecord],
    bm25: Bm25Index,
    matrix: Vector | None,
    has_vector: npt.NDArray[np.bool_],
    weights: RankWeights,
) -> PartitionIndex:
    count = len(records)
    occurred = np.fromiter((r.occurred_at.timestamp() for r in records), np.float64, count)
    recalled = np.fromiter(
        (_seconds(r.last_recalled_at, -np.inf) for r in records), np.float64, count
    )
    return PartitionIndex.from_columns(
        bm25=bm25,
        keys=np.arange(count, dtype=np.int64),
        matrix=matrix,
        has_vector=has_vector,
        importance=_floats(records, "importance"),
        confidence=_floats(records, "confidence"),
        strength=_floats(records, "strength"),
        # A recall restarts the forgetting curve.
        reference_time=np.maximum(occurred, recalled),
        # One session's memories (extracted from it, or imported with its id) are
        # neighbours in the order they happened; others stand alone.
        groups=[r.group for r in records],
        ordinals=np.arange(count, dtype=np.int64),
        window=weights.neighbour_window,
    )


def _vectors(raw: Sequence[bytes | None]) -> tuple[Vector | None, npt.NDArray[np.bool_]]:
    """Rows of pgvector's halfvec binary form (dimension int16, unused int16, big-endian
    float16s) stacked into one float32 matrix, zero rows where a memory has none."""
    has_vector = np.fromiter((r is not None for r in raw), np.bool_, len(raw))
    present = [r for r in raw if r is not None]
    if not present:
        return None, has_vector
    width = len(present[0])
    if any(len(r) != width for r in present):
        raise ValueError("vectors of different dimensions in one partition")
    rows = np.frombuffer(b"".join(present), dtype=np.uint8).reshape(len(present), width)
    values = rows[:, 4:].copy().view(">f2").astype(np.float32)
    matrix = np.zeros((len(raw), values.shape[1]), dtype=np.float32)
    matrix[has_vector] = values
    return matrix, has_vector


class PartitionStore:
    def __init__(
        self,
        redis: Redis,
        weights: RankWeights,
        ttl_seconds: int,
        local_capacity: int,
        embedding_model: str | None = None,
        sessions: async_sessionmaker[AsyncSession] | None = None,
    ) -> None:
        """``sessions``: where background fills after a cold read get their own
        session; without it (workers, the CLI) nothing is filled."""
        # Vectors of another model (before `tether reindex` ran) are not comparable
        # with query vectors: those memories rank lexically until reindexed.
        self._model = embedding_model
        self._redis = redis
        self._weights = weights
        self._layout = _layout(weights)
        self._ttl = ttl_seconds
        self._capacity = local_capacity
        self._sessions = sessions
        self._local: OrderedDict[tuple[uuid.UUID, uuid.UUID], _Local] = OrderedDict()
        self._decoding: dict[
            tuple[uuid.UUID, uuid.UUID], asyncio.Future[LoadedPartition | None]
        ] = {}
        self._filling: dict[tuple[uuid.UUID, uuid.UUID], asyncio.Task[None]] = {}
        self._fill_slots = asyncio.Semaphore(FILLS_AT_ONCE)
        self.stats = TierStats()

    @traced("recall.load")
    async def load(
        self,
        session: AsyncSession,
        scope: RelationshipScope,
        query_vector: Awaitable[Vector | None],
    ) -> tuple[LoadedPartition, bool]:
        """The partition and whether Redis was unavailable (the read went to Postgres).

        ``query_vector`` is awaited only when the partition is cold: Postgres then ranks
        the vectors by it, and the partition is filled into the hot tiers afterwards."""
        version_key, blob_key = partition_keys(scope)
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
            hot = await self._from_redis_once(scope, blob_key, version)
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
            return await self._cold(session, scope, query_vector, "unverified"), True
        cold = await self._cold(session, scope, query_vector, version)
        self.stats.cold += 1
        self._fill_later(scope, cold, blob_key)
        return cold, False

    async def invalidate(self, scope: RelationshipScope) -> None:
        """A memory of this relationship changed (call after commit)."""
        version_key, blob_key = partition_keys(scope)
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
        raw = await self._redis.getex(blob_key, ex=self._ttl)
        if raw is None:
            return None
        try:
            blob = _decoder.decode(as_bytes(raw))
        except msgspec.DecodeError:
            return None  # another release's layout: rebuilt from Postgres
        if blob.version != version or blob.layout != self._layout:
            return None
        count = len(blob.records)
        matrix: Vector | None = None
        has_vector = np.frombuffer(blob.has_vector, dtype=np.bool_)
        if blob.dimension and count:
            halves = np.frombuffer(blob.vectors, dtype=np.float16)
            matrix = halves.reshape(count, blob.dimension).astype(np.float32)
        bm25 = Bm25Index.from_parts(
            Bm25Parts(
                blob.terms,
                np.frombuffer(blob.offsets, dtype=np.int64),
                np.frombuffer(blob.postings, dtype=np.int32),
                np.frombuffer(blob.weights, dtype=np.float32),
                count,
            )
        )
        built = _index(blob.records, bm25, matrix, has_vector, self._weights)
        return _assemble(blob.records, built, version, "hot")

    @staticmethod
    def _columns(*extra: ColumnElement[Any]) -> Any:
        return select(
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
            # One string and a count, not an array: SQLAlchemy's per-element array
            # processing cost more than the whole query on a 5,000-memory partition.
            func.array_to_string(Memory.tokens, " "),
            func.coalesce(func.cardinality(Memory.tokens), 0),
            *extra,
        )

    def _usable(self) -> ColumnElement[bool]:
        if self._model is None:
            return literal(True)
        return Memory.embedding_model == self._model

    @staticmethod
    def _partition(statement: Any, scope: RelationshipScope) -> Any:
        """``statement`` narrowed to the partition's active memories, in their order."""
        return statement.where(
            Memory.relationship_id == scope.relationship_id,
            Memory.tenant_id == scope.tenant_id,
            Memory.deleted_at.is_(None),
            *active_now(datetime.now(UTC)),
        ).order_by(Memory.occurred_at, Memory.id)

    def _bm25(self, rows: Sequence[Any]) -> Bm25Index:
        """The BM25 index of rows from :meth:`_columns`: their tokens in one split (a
        stored token never holds a space; the counts check it)."""
        lengths = np.fromiter((row[14] for row in rows), np.int64, len(rows))
        tokens = " ".join(row[13] for row in rows if row[14]).split(" ") if lengths.any() else []
        params = Bm25Params(k1=self._weights.bm25_k1, b=self._weights.bm25_b)
        if len(tokens) != int(lengths.sum()):  # a token with a space or a NULL: row by row
            return Bm25Index.build([row[13].split(" ") if row[13] else [] for row in rows], params)
        return Bm25Index.build_flat(tokens, lengths, params)

    @traced("recall.cold")
    async def _cold(
        self,
        session: AsyncSession,
        scope: RelationshipScope,
        query_vector: Awaitable[Vector | None],
        version: str,
    ) -> LoadedPartition:
        """The partition for one query, without its vectors: pgvector computes the
        query's cosine distance to each memory and only those numbers come back."""
        vector = await query_vector
        distance: ColumnElement[Any] = literal(None)
        if vector is not None:
            # A vector of another dimension would make Postgres refuse the whole query.
            usable = self._usable() & (Memory.embedding_dim == len(vector))
            usable &= Memory.embedding.is_not(None)
            distance = case((usable, Memory.embedding.cosine_distance(vector)), else_=None)
        # Core execution: the ORM's per-row bookkeeping is a third of the time here.
        connection = await session.connection()
        rows = (await connection.execute(self._partition(self._columns(distance), scope))).all()
        records = [PartitionRecord(row[0].bytes, *row[1:13]) for row in rows]
        count = len(rows)
        distances = [row[15] for row in rows]
        has_vector = np.fromiter((d is not None for d in distances), np.bool_, count)
        similarity: Vector | None = None
        # As the hot path: no usable vector at all means no vector signal (not a zero one).
        if vector is not None and has_vector.any():
            cosine = 1.0 - np.array([1.0 if d is None else d for d in distances], np.float32)
            similarity = np.nan_to_num(cosine, nan=0.0)  # a zero vector's distance is NaN
        built = _index(records, self._bm25(rows), None, has_vector, self._weights)
        return _assemble(records, built, version, "cold", similarity)

    async def _vectors_of(
        self, session: AsyncSession, scope: RelationshipScope, records: list[PartitionRecord]
    ) -> tuple[Vector | None, npt.NDArray[np.bool_]]:
        """The partition's vectors in ``records`` order (zero rows where none is usable).
        Usually the same rows in the same order; a write in between is matched by id."""
        usable = (Memory.embedding.is_not(None)) & self._usable()
        vector = case((usable, func.halfvec_send(Memory.embedding)), else_=None)
        connection = await session.connection()
        rows = (await connection.execute(self._partition(select(Memory.id, vector), scope))).all()
        if [row[0].bytes for row in rows] == [r.key for r in records]:
            return _vectors([row[1] for row in rows])
        found = {row[0].bytes: row[1] for row in rows}
        return _vectors([found.get(r.key) for r in records])

    def _fill_later(self, scope: RelationshipScope, cold: LoadedPartition, blob_key: str) -> None:
        key = (scope.tenant_id, scope.relationship_id)
        if self._sessions is None or key in self._filling:
            return
        if len(self._filling) >= FILLS_AT_ONCE + FILLS_WAITING:
            return
        task = spawn(self._fill(self._sessions, scope, cold, blob_key), "hot partition fill")
        self._filling[key] = task
        task.add_done_callback(lambda _: self._filling.pop(key, None))

    async def drain(self) -> None:
        """Wait for the background fills in flight (before shutdown; tests)."""
        await asyncio.gather(*self._filling.values(), return_exceptions=True)

    async def _fill(
        self,
        sessions: async_sessionmaker[AsyncSession],
        scope: RelationshipScope,
        cold: LoadedPartition,
        blob_key: str,
    ) -> None:
        """Complete a cold read with the partition's vectors and keep it in this process
        and in Redis (off the request that found it cold)."""
        async with self._fill_slots:
            version_key, _ = partition_keys(scope)
            try:
                if _text(await self._redis.get(version_key)) != cold.version:
                    return  # written to while this fill waited: the copy would be stale
                async with tenant_session(sessions, TenantId(scope.tenant_id)) as session:
                    matrix, has_vector = await self._vectors_of(session, scope, cold.records)
            except (SQLAlchemyError, RedisError) as exc:
                log.warning("hot partition not filled: %s", exc)
                return
            index = replace(cold.index, matrix=matrix, has_vector=has_vector)
            full = replace(cold, index=index, source="hot", similarity=None)
            # A write after the version check replaced the token: this copy is then never
            # used (local and Redis copies are both checked against the current token).
            self._remember(scope, full)
            await self._store(blob_key, full)

    async def _store(self, blob_key: str, partition: LoadedPartition) -> None:
        index = partition.index
        matrix = index.matrix
        bm25 = index.bm25.parts()
        blob = _Blob(
            layout=self._layout,
            version=partition.version,
            records=partition.records,
            terms=bm25.terms,
            offsets=bm25.offsets.tobytes(),
            postings=bm25.docs.tobytes(),
            weights=bm25.weights.tobytes(),
            dimension=0 if matrix is None else int(matrix.shape[1]),
            vectors=b"" if matrix is None else matrix.astype(np.float16).tobytes(),
            has_vector=index.has_vector.tobytes(),
        )
        try:
            await self._redis.set(blob_key, _encoder.encode(blob), ex=self._ttl)
        except RedisError as exc:
            log.warning("hot partition not stored: %s", exc)
