"""Cold reads: a partition from Postgres, when neither this process nor Redis has it.

Three ways, none moving vectors to rank (pgvector computes the query's cosine distance
to each memory and only those numbers come back):

- for a query (every cold request): what ranking that query needs of every memory,
  without the texts (each memory's generated ``query_row`` and its distance), and
  afterwards the records of the memories the ranking returns (query_read.py, decisions
  0017 and 0018);
- from a snapshot (the fill after a request, of a large partition): the encoded records
  and BM25 postings of the partition, stored by an earlier fill, plus one aggregate over
  the rows that returns their ids and recall statistics (always taken from the rows).
  Memories the snapshot does not hold, or that a write since recorded in its
  ``changed``, are read from their rows and merged in (decision 0014);
- from rows: every active memory with its tokens, indexed here (a fill without a usable
  snapshot, snapshot rebuilds).

Each reads a partition as one row of aggregates (wire.py, decision 0015).

A snapshot is stored after a read from rows (in the background, see hot.py) only if the
rows still have the same ids and versions (``xmin``) under an advisory lock that every
write which changes what a snapshot holds also takes. Such writes then record what they
changed in it, or delete it if they changed or removed a text (migrations 0008, 0009).
See decisions 0011 and 0014.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from operator import attrgetter
from typing import Any, Final

import numpy as np
import numpy.typing as npt
from pgvector.sqlalchemy import HALFVEC
from sqlalchemy import (
    ColumnElement,
    Integer,
    Row,
    Select,
    Text,
    any_,
    bindparam,
    case,
    cast,
    func,
    literal,
    literal_column,
    select,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, insert
from sqlalchemy.dialects.postgresql import UUID as PG_UUID
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession, async_sessionmaker

from tenancy.ids import RelationshipScope
from tenancy.models import Relationship
from tether.core.ids import TenantId
from tether.core.telemetry import traced
from tether.core.tenant_sessions import tenant_transaction
from tether.memories.models import Memory
from tether.recall import encoding, wire
from tether.recall.bm25 import Bm25Index, Bm25Params
from tether.recall.loaded import (
    LoadedPartition,
    PartitionColumns,
    PartitionRecord,
    Vector,
    from_columns,
    similarity_of,
    stack_vectors,
)
from tether.recall.models import PartitionSnapshot
from tether.recall.partition import neighbour_table
from tether.recall.query_read import (
    QueryPartition,
    QueryRead,
)
from tether.recall.weights import RankWeights

log = logging.getLogger(__name__)

# pg_advisory_xact_lock(LOCK_CLASS, hashtext(relationship_id::text) & LOCK_BUCKETS):
# shared by writes that change snapshots, exclusive while one is stored (migration 0008).
LOCK_CLASS = 7301
LOCK_BUCKETS = 255
# The memory columns a snapshot holds or is filtered by: a write changing any of them is
# recorded in the relationship's snapshot or deletes it (migration 0009 lists the same).
SNAPSHOT_COLUMNS = (
    "relationship_id",
    "tenant_id",
    "content",
    "tokens",
    "external_id",
    "memory_type",
    "layer",
    "occurred_at",
    "private_to_creator",
    "source_session_id",
    "is_active",
    "superseded_by",
    "deleted_at",
)
# A write that would record more changed memories than this drops the snapshot instead
# (migration 0009): completing it would cost about what indexing the rows costs.
MAX_CHANGES = 256
# Bumped when the snapshot body's layout changes.
SNAPSHOT_FORMAT = 2
# How long storing a snapshot may wait for a row lock (a tenant's deletion holds one).
STORE_LOCK_TIMEOUT = "200ms"
# The query's vector and its dimension, bound when a read executes (wire.PARTITION).
_QUERY_VECTOR = bindparam("query_vector", type_=HALFVEC())
_QUERY_DIMENSION = bindparam("query_dimension", type_=Integer)
# The ids of the memories _unrecorded reads.
_WANTED = bindparam("wanted", type_=ARRAY(PG_UUID(as_uuid=True)))


@dataclass(frozen=True, slots=True)
class _Read:
    """One cold read: its connection, and the values of its statements' bind parameters
    (its partition as of one moment, so that its statements agree on which memories have
    expired, and the query's vector)."""

    connection: AsyncConnection
    params: dict[str, Any]
    now: datetime

    @classmethod
    def of(
        cls,
        connection: AsyncConnection,
        scope: RelationshipScope,
        now: datetime,
        vector: Vector | None = None,
    ) -> _Read:
        params = wire.partition_params(scope, now)
        if vector is not None:
            params |= {_QUERY_VECTOR.key: vector, _QUERY_DIMENSION.key: len(vector)}
        return cls(connection, params, now)

    @property
    def has_query(self) -> bool:
        return _QUERY_VECTOR.key in self.params

    async def one(self, statement: Any, **more: Any) -> Row[Any]:
        return (await self.connection.execute(statement, self.params | more)).one()

    async def scalar(self, statement: Any) -> Any:
        return await self.connection.scalar(statement, self.params)


@dataclass(frozen=True, slots=True)
class _Snapshot:
    encoded: encoding.EncodedPartition
    version: str  # the transaction that last wrote its row (_snapshot_version)
    changed: set[bytes]  # ids of memories written since it was built


def _no_query() -> asyncio.Future[None]:
    """No query vector, as an awaitable that is already done: a coroutine would warn
    that it was never awaited when the read fails before awaiting it."""
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    done.set_result(None)
    return done


def _snapshot_version() -> ColumnElement[str]:
    """The transaction that wrote a snapshot row: it changes with every store."""
    return cast(literal_column("recall_snapshots.xmin"), Text)


def _token_counts(tokens: Sequence[str]) -> npt.NDArray[np.int64]:
    """How many tokens each token string holds, as ``wire.split_tokens`` splits it: its
    spaces plus one, none in an empty string (counted in bulk, over the strings as UTF-8
    joined by newlines, unless one holds a newline)."""
    data = ("\n".join(tokens) + "\n").encode() if tokens else b""
    raw = np.frombuffer(data, np.uint8)
    ends = np.flatnonzero(raw == ord("\n"))
    if len(ends) != len(tokens):
        return np.fromiter((t.count(" ") + 1 if t else 0 for t in tokens), np.int64, len(tokens))
    spaces = np.flatnonzero(raw == ord(" "))
    within = np.diff(np.searchsorted(spaces, ends), prepend=0)
    starts = np.concatenate(([0], ends[:-1] + 1))
    return np.where(ends > starts, within + 1, 0).astype(np.int64)


class ColdReader:
    def __init__(
        self,
        weights: RankWeights,
        embedding_model: str | None,
        snapshot_min_memories: int | None,
        *,
        rewrite_after_changes: int = 1,
    ) -> None:
        """``snapshot_min_memories``: partitions at least this large get a snapshot
        (None: snapshots are read but never stored, as in the CLI).
        ``rewrite_after_changes``: a snapshot is stored again, completed with the
        changes writes recorded in it, once it records this many (decision 0027);
        until then each fill completes it anew."""
        if not 1 <= rewrite_after_changes <= MAX_CHANGES:
            raise ValueError(f"rewrite_after_changes must be within 1..{MAX_CHANGES}")
        self._weights = weights
        # Vectors of another model (before `tether reindex` ran) are not comparable
        # with query vectors: those memories rank lexically until reindexed.
        self._model = embedding_model
        self._snapshot_min = snapshot_min_memories
        self._rewrite_after = rewrite_after_changes
        self._params = Bm25Params(k1=weights.bm25_k1, b=weights.bm25_b)
        self._query_read = QueryRead(self._params, weights.neighbour_window)
        self.snapshot_layout: Final = (
            f"snapshot{SNAPSHOT_FORMAT}:{weights.bm25_k1}:{weights.bm25_b}:"
            f"{weights.neighbour_window}"
        )
        self._statements()

    def _usable(self) -> ColumnElement[bool]:
        usable = Memory.embedding.is_not(None)
        return usable if self._model is None else usable & (Memory.embedding_model == self._model)

    def _distance(self) -> ColumnElement[Any]:
        """The query's cosine distance to a memory (``_QUERY_VECTOR``), NULL where it has
        no usable vector."""
        # A vector of another dimension would make Postgres refuse the whole query.
        usable = self._usable() & (Memory.embedding_dim == _QUERY_DIMENSION)
        return case((usable, Memory.embedding.cosine_distance(_QUERY_VECTOR)), else_=None)

    def _statements(self) -> None:
        """The statements every cold read executes, built once (see wire.PARTITION)."""
        # With a distance (True) for reads for a query; whole reads with one are
        # tests' only (read).
        distance = {False: literal(None), True: self._distance()}
        self._rows = {has: wire.aggregated(d) for has, d in distance.items()}
        self._query_rows = {has: wire.for_query(d) for has, d in distance.items()}
        self._checks = {has: self._check(d) for has, d in distance.items()}
        self._fetch = self._snapshot_of(
            PartitionSnapshot.body, _snapshot_version(), PartitionSnapshot.changed
        )
        still = self._snapshot_of(_snapshot_version()).scalar_subquery()
        wanted = [Memory.id == any_(_WANTED)]
        self._unrecorded_rows = wire.aggregated(literal(None), where=wanted, also=(still,))
        self._wanted_rows = wire.aggregated(literal(None), where=wanted)

    @traced("recall.cold")
    async def read(
        self,
        session: AsyncSession,
        scope: RelationshipScope,
        query_vector: Awaitable[Vector | None],
        version: str,
    ) -> LoadedPartition:
        """The whole partition, from its snapshot if it has a usable one, with each
        memory's distance to ``query_vector`` if that gives one (awaited after the
        snapshot is fetched). Fills pass none (``read_whole``); only tests pass a vector,
        to compare this read's ranking with a read for a query."""
        # Core execution on the request's connection: the ORM's per-row bookkeeping was
        # a third of the time here, and a second connection per request deadlocked a
        # full pool.
        connection = await session.connection()
        now = datetime.now(UTC)
        params = wire.partition_params(scope, now)
        stored = (await connection.execute(self._fetch, params)).first()
        snapshot = None if stored is None else encoding.decode(stored[0])
        vector = await query_vector
        read = _Read.of(connection, scope, now, vector)
        if stored is not None and snapshot is not None:
            found = _Snapshot(snapshot, stored[1], {c.bytes for c in stored[2]})
            partition = await self._from_snapshot(read, found, vector, version)
            if partition is not None:
                return partition
        return await self._from_rows(read, version)

    @traced("recall.cold")
    async def read_for_query(
        self,
        session: AsyncSession,
        scope: RelationshipScope,
        query_vector: Awaitable[Vector | None],
        version: str,
        terms: Sequence[str],
    ) -> QueryPartition:
        """What ranking ``terms`` needs of the partition's rows (query_read.py;
        :meth:`records` reads the records of the memories the ranking returns). Cheaper
        than reading a snapshot, even one without recorded changes (decision 0018), which
        is why a request never does."""
        # Taken before the vector is awaited, so that it overlaps the query's embedding.
        connection = await session.connection()
        now = datetime.now(UTC)
        read = _Read.of(connection, scope, now, await query_vector)
        return await self._for_query(read, version, terms)

    async def read_whole(
        self, session: AsyncSession, scope: RelationshipScope, version: str
    ) -> LoadedPartition:
        """The whole partition, without distances (to keep or store it)."""
        return await self.read(session, scope, _no_query(), version)

    def _snapshot_of(self, *columns: Any) -> Any:
        """``columns`` of the ``wire.PARTITION``'s snapshot."""
        return select(*columns).where(
            PartitionSnapshot.relationship_id == wire.PARTITION.relationship_id,
            PartitionSnapshot.tenant_id == wire.PARTITION.tenant_id,
            PartitionSnapshot.layout == self.snapshot_layout,
        )

    async def read_for_snapshot(
        self, session: AsyncSession, scope: RelationshipScope
    ) -> LoadedPartition | None:
        """The partition to store as the relationship's snapshot, if it needs one: read
        from rows if it is large enough and has none, or its snapshot completed with the
        changes recorded since it was built once they are ``rewrite_after_changes``;
        otherwise None."""
        if self._snapshot_min is None:
            return None
        read = _Read.of(await session.connection(), scope, datetime.now(UTC))
        changes = await read.scalar(self._snapshot_of(func.cardinality(PartitionSnapshot.changed)))
        if changes is not None and changes < self._rewrite_after:
            return None
        if changes is not None:  # no distances needed: only the index is stored
            return await self.read_whole(session, scope, "")
        size = await read.scalar(wire.active(select(func.count())))
        if (size or 0) < self._snapshot_min:
            return None
        return await self._from_rows(read, "")

    async def _from_snapshot(
        self, read: _Read, snapshot: _Snapshot, vector: Vector | None, version: str
    ) -> LoadedPartition | None:
        """The snapshot completed from the rows, if it is still stored: the rows and the
        snapshot row are read by one statement (``_check``), and a write that changes
        what a snapshot holds updates or deletes it in its own transaction, so a write
        committed since the snapshot was fetched is seen here (and the rows are read
        instead)."""
        *values, current_version, wrote = await read.one(self._checks[vector is not None])
        if current_version != snapshot.version:
            return None  # changed since it was fetched: read the rows
        found = wire.Aggregated.of(values)
        rows = found.rows
        changes = None
        if rows["key"].tobytes() != snapshot.encoded.keys or snapshot.changed:
            changes = await self._changes(read, snapshot, found)
            if changes is None:
                return None
        similarity, has_vector = similarity_of(
            rows["distance"].astype(np.float32), vector is not None
        )
        partition = encoding.loaded(
            snapshot.encoded,
            version,
            "snapshot",
            self._weights.neighbour_window,
            has_vector=has_vector,
            similarity=similarity,
            statistics=wire.statistics_of(rows),
            changes=changes,
        )
        # Completed with changes: stored in the snapshot's place (store_snapshot) once
        # they are enough to be worth a rewrite, or when the rows moved without a
        # recorded write (expiry), which no later write would record.
        if changes is None or wrote or 0 < len(snapshot.changed) < self._rewrite_after:
            return partition
        return replace(partition, merged_from=snapshot.version)

    def _check(self, distance: ColumnElement[Any]) -> Select[Any]:
        """The partition's rows with the texts of the memories the snapshot row records
        as changed, the snapshot row's version, and whether this transaction wrote
        already (a later write of its own would leave that version as it is, so what it
        builds must not be stored)."""
        changed = (
            self._snapshot_of(func.unnest(PartitionSnapshot.changed).label("id"))
            .distinct()
            .subquery()
        )
        still = self._snapshot_of(_snapshot_version()).scalar_subquery()
        writing = func.txid_current_if_assigned().is_not(None)
        return wire.aggregated(distance, texts_of=changed, also=(still, writing))

    async def _changes(
        self, read: _Read, snapshot: _Snapshot, found: wire.Aggregated
    ) -> encoding.Changes | None:
        """Where each current row is in the snapshot, and the rows it has no current copy
        of (their texts came with the check if a write was recorded, as it always is);
        None if a write came in between."""
        held = snapshot.encoded.keys
        position = {held[i : i + 16]: i // 16 for i in range(0, len(held), 16)}
        keys = found.rows["key"].tobytes()
        current = [keys[i : i + 16] for i in range(0, len(keys), 16)]
        recorded = np.fromiter((key in snapshot.changed for key in current), np.bool_, len(current))
        origin = np.fromiter((position.get(key, -1) for key in current), np.intp, len(current))
        origin[recorded] = -1
        wanted = np.flatnonzero(origin < 0)
        if len(wanted) > MAX_CHANGES:
            return None  # rows that came back without a recorded write (expiry moved)
        if not np.array_equal(wanted, np.flatnonzero(recorded)):
            unrecorded = await self._unrecorded(read, snapshot, [current[i] for i in wanted])
            if unrecorded is None:
                return None
            found, wanted = unrecorded, np.arange(len(wanted))
        try:
            added, tokens = found.records(found.rows[wanted])
        except ValueError:  # texts not those of the rows: never seen; read the rows
            log.warning("a snapshot check read texts of other rows; reading the rows")
            return None
        return encoding.Changes(origin, added, [wire.split_tokens(t) for t in tokens], self._params)

    async def _unrecorded(
        self, read: _Read, snapshot: _Snapshot, keys: list[bytes]
    ) -> wire.Aggregated | None:
        """The rows of ``keys`` (memories the snapshot lacks with no record of a write:
        one made with triggers off), if the snapshot row is still unchanged."""
        ids = [uuid.UUID(bytes=key) for key in keys]
        *values, version = await read.one(self._unrecorded_rows, **{_WANTED.key: ids})
        found = wire.Aggregated.of(values)
        if version != snapshot.version or found.rows["key"].tobytes() != b"".join(keys):
            return None
        return found

    def _bm25(self, tokens: Sequence[str]) -> Bm25Index:
        """The BM25 index of memories whose tokens are ``tokens`` as sent (``wire.split_tokens``),
        in one split of all of them."""
        lengths = _token_counts(tokens)
        flat = " ".join(t for t in tokens if t).split(" ") if lengths.any() else []
        return Bm25Index.build_flat(flat, lengths, self._params)

    async def _from_rows(self, read: _Read, version: str) -> LoadedPartition:
        found = wire.Aggregated.of(await read.one(self._rows[read.has_query]))
        rows = found.rows
        records, tokens = found.records(rows)
        similarity, has_vector = similarity_of(rows["distance"].astype(np.float32), read.has_query)
        row_versions = None
        if self._snapshot_min is not None and len(rows) >= self._snapshot_min:
            row_versions = wire.row_versions(rows)
        groups = list(map(attrgetter("group"), records))
        columns = PartitionColumns(
            records=records,
            built=wire.statistics_of(rows),
            occurred=wire.unix_micros(rows["occurred"]) / 1e6,
            private=rows["private"].copy(),
            neighbours=neighbour_table(
                groups, np.arange(len(rows), dtype=np.int64), self._weights.neighbour_window
            ),
            bm25=self._bm25(tokens),
        )
        return from_columns(
            columns,
            version,
            "cold",
            has_vector=has_vector,
            similarity=similarity,
            row_versions=row_versions,
        )

    async def _for_query(self, read: _Read, version: str, terms: Sequence[str]) -> QueryPartition:
        wanted = {wire.QUERY_TERMS.key: list(dict.fromkeys(terms))}
        values = await read.one(self._query_rows[read.has_query], **wanted)
        return self._query_read.partition(values, tuple(terms), version, read.now, read.has_query)

    async def records(
        self,
        session: AsyncSession,
        scope: RelationshipScope,
        partition: QueryPartition,
        rows: Sequence[int],
    ) -> dict[int, PartitionRecord]:
        """The records of ``rows`` of ``partition``, read as of the moment it was; a
        memory a write has made inactive since (or deleted) has none."""
        if not rows:
            return {}
        read = _Read.of(await session.connection(), scope, partition.read_at)
        ids = {_WANTED.key: [partition.memory_id(row) for row in rows]}
        found = wire.Aggregated.of(await read.one(self._wanted_rows, **ids))
        records, _ = found.records(found.rows)
        by_key = {record.key: record for record in records}
        return {row: by_key[partition.key(row)] for row in rows if partition.key(row) in by_key}

    async def vectors(
        self, session: AsyncSession, scope: RelationshipScope, records: Sequence[PartitionRecord]
    ) -> tuple[Vector | None, npt.NDArray[np.bool_]]:
        """The partition's vectors in ``records`` order (zero rows where none is usable).
        Usually the same rows in the same order; a write in between is matched by id."""
        vector = case((self._usable(), func.halfvec_send(Memory.embedding)), else_=None)
        connection = await session.connection()
        statement = wire.ordered(select(Memory.id, vector))
        params = wire.partition_params(scope, datetime.now(UTC))
        rows = (await connection.execute(statement, params)).all()
        if [row[0].bytes for row in rows] == [r.key for r in records]:
            return stack_vectors([row[1] for row in rows])
        found = {row[0].bytes: row[1] for row in rows}
        return stack_vectors([found.get(r.key) for r in records])

    async def store_snapshot(
        self,
        sessions: async_sessionmaker[AsyncSession],
        scope: RelationshipScope,
        partition: LoadedPartition,
    ) -> bool:
        """Store ``partition`` as the relationship's snapshot: one read from rows if its
        rows are unchanged, one completed from a snapshot if that snapshot's row is
        unchanged (every write the trigger records changes it); False if they changed or
        a write holds the lock."""
        if partition.row_versions is None and partition.merged_from is None:
            return False
        if self._snapshot_min is None or len(partition.records) < self._snapshot_min:
            return False
        # Encoded before the lock is taken: writes to this bucket wait while it is held.
        body = encoding.encode(self.snapshot_layout, "", partition, vectors=False)
        async with tenant_transaction(sessions, TenantId(scope.tenant_id)) as session:
            # A snapshot is a cache: rather than wait, give up.
            await session.execute(text(f"SET LOCAL lock_timeout = '{STORE_LOCK_TIMEOUT}'"))
            # The relationship's row first: deleting it (an erasure) cascades into the
            # trigger, which waits for the lock below; the insert's foreign-key check
            # would then wait for the delete, a deadlock the erasure would lose.
            found = await session.scalar(
                select(Relationship.id)
                .where(Relationship.id == scope.relationship_id)
                .with_for_update(key_share=True)
            )
            if found is None:
                return False
            bucket = func.hashtext(str(scope.relationship_id)).op("&")(LOCK_BUCKETS)
            lock = func.pg_try_advisory_xact_lock(LOCK_CLASS, bucket)
            if not await session.scalar(select(lock)):
                return False
            params = wire.partition_params(scope, datetime.now(UTC))
            if partition.row_versions is not None:
                current = await session.scalar(wire.concatenated(wire.row_version()), params)
            else:
                current = await session.scalar(self._snapshot_of(_snapshot_version()), params)
            expected: bytes | str | None = partition.row_versions
            if expected is None:
                expected = partition.merged_from
            if current != expected:
                return False
            values = {
                "layout": self.snapshot_layout,
                "memories": len(partition.records),
                "body": body,
                "built_at": func.now(),
                "changed": [],
            }
            await session.execute(
                insert(PartitionSnapshot)
                .values(relationship_id=scope.relationship_id, tenant_id=scope.tenant_id, **values)
                .on_conflict_do_update(index_elements=["relationship_id"], set_=values)
            )
        return True
