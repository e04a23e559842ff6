"""Cold reads: a partition from Postgres, when neither this process nor Redis has it.

Two ways, both without moving vectors (pgvector computes the query's cosine distance to
each memory and only those numbers come back):

- from a snapshot (large partitions): the encoded records and BM25 postings of the
  partition, stored by an earlier read, plus one aggregate over the rows that returns
  their ids, distances and recall statistics (always taken from the rows). Memories the
  snapshot does not hold, or that a write since recorded in its ``changed``, are read
  from their rows and merged in (decision 0014).
- from rows: every active memory with its tokens, indexed here.

A snapshot is stored after a read from rows (in the background, see hot.py) only if the
rows still have the same ids and versions (``xmin``) under an advisory lock that every
write which changes what a snapshot holds also takes. Such writes then record what they
changed in it, or delete it if they changed or removed a text (migrations 0008, 0009).
See decisions 0011 and 0014.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy import (
    BigInteger,
    ColumnElement,
    LargeBinary,
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
from sqlalchemy.dialects.postgresql import ARRAY, REAL, insert
from sqlalchemy.dialects.postgresql import UUID as PG_UUID
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession, async_sessionmaker
from sqlalchemy.orm import QueryableAttribute

from tenancy.ids import RelationshipScope
from tenancy.models import Relationship
from tether.core.ids import TenantId
from tether.core.telemetry import traced
from tether.core.tenant_sessions import tenant_transaction
from tether.memories.models import Memory
from tether.memories.repositories import active_now
from tether.recall import encoding
from tether.recall.bm25 import Bm25Index, Bm25Params
from tether.recall.loaded import (
    NEVER_EXPIRES,
    NEVER_RECALLED,
    NO_DISTANCE,
    STATISTICS_ROW,
    LoadedPartition,
    PartitionRecord,
    Vector,
    assemble,
    build_index,
    similarity_of,
    stack_vectors,
)
from tether.recall.models import PartitionSnapshot
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
# One row of a snapshot check (_check_row): id, cosine distance, statistics.
CHECK_ROW = np.dtype(
    [("key", "V16"), ("distance", ">f4"), ("statistics", f"V{STATISTICS_ROW.itemsize}")]
)


def _joined(*parts: ColumnElement[bytes]) -> ColumnElement[bytes]:
    """``parts`` concatenated into one bytea."""
    joined = parts[0]
    for part in parts[1:]:
        joined = joined.op("||", return_type=LargeBinary)(part)
    return joined


def _row_version() -> ColumnElement[bytes]:
    """A row's id and the transaction that wrote its current version: 24 bytes that
    change with any update of the row."""
    xmin = cast(cast(literal_column("xmin"), Text), BigInteger)
    return _joined(
        func.uuid_send(Memory.id, type_=LargeBinary), func.int8send(xmin, type_=LargeBinary)
    )


def _active(statement: Any, scope: RelationshipScope, now: datetime) -> Any:
    """``statement`` narrowed to the partition's memories active at ``now``."""
    return statement.where(
        Memory.relationship_id == scope.relationship_id,
        Memory.tenant_id == scope.tenant_id,
        Memory.deleted_at.is_(None),
        *active_now(now),
    )


def _ordered(statement: Any, scope: RelationshipScope, now: datetime) -> Any:
    """``statement`` narrowed to the partition's active memories, in their order."""
    return _active(statement, scope, now).order_by(Memory.occurred_at, Memory.id)


def _concatenated(
    row: ColumnElement[bytes], scope: RelationshipScope, now: datetime, *also: Any
) -> Any:
    """One bytea of ``row`` for every active memory of the partition, in order (and
    ``also``, evaluated in the same statement)."""
    rows = _ordered(select(row.label("row")), scope, now).subquery()
    return select(func.string_agg(rows.c.row, literal(b"", LargeBinary), type_=LargeBinary), *also)


@dataclass(frozen=True, slots=True)
class _Read:
    """One cold read's statements: its connection, and its partition as of one moment
    (so that its statements agree on which memories have expired)."""

    connection: AsyncConnection
    scope: RelationshipScope
    now: datetime

    def active(self, statement: Any) -> Any:
        return _active(statement, self.scope, self.now)

    def ordered(self, statement: Any) -> Any:
        return _ordered(statement, self.scope, self.now)

    def concatenated(self, row: ColumnElement[bytes], *also: Any) -> Any:
        return _concatenated(row, self.scope, self.now, *also)


@dataclass(frozen=True, slots=True)
class _Snapshot:
    encoded: encoding.EncodedPartition
    version: str  # the transaction that last wrote its row (_snapshot_version)
    changed: set[bytes]  # ids of memories written since it was built


async def _no_query() -> None:
    return None


def _record(row: Any) -> PartitionRecord:
    """A :meth:`ColdReader._columns` row as a record."""
    return PartitionRecord(row[0].bytes, *row[1:13])


# A memory's tokens leave Postgres as one string and a count, not an array: SQLAlchemy's
# per-element array processing cost more than the whole query on a 5,000-memory
# partition. The tokens are the string split on spaces (none if it is empty), and the
# count is computed the same way, so that every reader splits a row identically (a
# stored token with a space in it, or a NULL one, would otherwise count differently).
_TOKENS = func.coalesce(func.array_to_string(Memory.tokens, " "), "")
_TOKEN_COUNT = case(
    (_TOKENS == "", 0),
    else_=func.length(_TOKENS) - func.length(func.replace(_TOKENS, " ", "")) + 1,
)


def _tokens(row: Any) -> list[str]:
    """The tokens of a :meth:`ColdReader._columns` row (see ``_TOKENS``)."""
    tokens: list[str] = row[13].split(" ") if row[14] else []
    return tokens


def _micros(moment: QueryableAttribute[Any], default: int) -> ColumnElement[Any]:
    exact = cast(func.extract("epoch", moment) * 1_000_000, BigInteger)
    return func.coalesce(exact, literal(default, BigInteger))


def _check_row(distance: ColumnElement[Any]) -> ColumnElement[bytes]:
    """A memory as one ``CHECK_ROW``: what a snapshot cannot hold (its distance to the
    query, its statistics) with the id that says the row is the snapshot's."""
    return _joined(
        func.uuid_send(Memory.id, type_=LargeBinary),
        func.float4send(cast(func.coalesce(distance, NO_DISTANCE), REAL), type_=LargeBinary),
        func.float8send(Memory.importance, type_=LargeBinary),
        func.float8send(Memory.confidence, type_=LargeBinary),
        func.float8send(Memory.strength, type_=LargeBinary),
        func.int8send(_micros(Memory.last_recalled_at, NEVER_RECALLED), type_=LargeBinary),
        func.int8send(_micros(Memory.expires_at, NEVER_EXPIRES), type_=LargeBinary),
    )


def _snapshot_version() -> ColumnElement[str]:
    """The transaction that wrote a snapshot row: it changes with every store."""
    return cast(literal_column("recall_snapshots.xmin"), Text)


class ColdReader:
    def __init__(
        self,
        weights: RankWeights,
        embedding_model: str | None,
        snapshot_min_memories: int | None,
    ) -> None:
        """``snapshot_min_memories``: partitions at least this large get a snapshot
        (None: snapshots are read but never stored, as in the CLI)."""
        self._weights = weights
        # Vectors of another model (before `tether reindex` ran) are not comparable
        # with query vectors: those memories rank lexically until reindexed.
        self._model = embedding_model
        self._snapshot_min = snapshot_min_memories
        self._params = Bm25Params(k1=weights.bm25_k1, b=weights.bm25_b)
        self.snapshot_layout = (
            f"snapshot{SNAPSHOT_FORMAT}:{weights.bm25_k1}:{weights.bm25_b}:"
            f"{weights.neighbour_window}"
        )

    def _usable(self) -> ColumnElement[bool]:
        usable = Memory.embedding.is_not(None)
        return usable if self._model is None else usable & (Memory.embedding_model == self._model)

    def _distance(self, vector: Vector | None) -> ColumnElement[Any]:
        if vector is None:
            return literal(None)
        # A vector of another dimension would make Postgres refuse the whole query.
        usable = self._usable() & (Memory.embedding_dim == len(vector))
        return case((usable, Memory.embedding.cosine_distance(vector)), else_=None)

    @traced("recall.cold")
    async def read(
        self,
        session: AsyncSession,
        scope: RelationshipScope,
        query_vector: Awaitable[Vector | None],
        version: str,
    ) -> LoadedPartition:
        """The partition, ranked with ``query_vector`` (awaited after the snapshot is
        fetched, so fetching overlaps the query's embedding)."""
        # Core execution on the request's connection: the ORM's per-row bookkeeping was
        # a third of the time here, and a second connection per request deadlocked a
        # full pool.
        connection = await session.connection()
        read = _Read(connection, scope, datetime.now(UTC))
        stored = (
            await connection.execute(
                self._snapshot_of(
                    scope, PartitionSnapshot.body, _snapshot_version(), PartitionSnapshot.changed
                )
            )
        ).first()
        snapshot = None if stored is None else encoding.decode(stored[0])
        vector = await query_vector
        if stored is not None and snapshot is not None:
            found = await self._from_snapshot(
                read, _Snapshot(snapshot, stored[1], {c.bytes for c in stored[2]}), vector, version
            )
            if found is not None:
                return found
        return await self._from_rows(read, vector, version)

    def _snapshot_of(self, scope: RelationshipScope, *columns: Any) -> Any:
        return select(*columns).where(
            PartitionSnapshot.relationship_id == scope.relationship_id,
            PartitionSnapshot.tenant_id == scope.tenant_id,
            PartitionSnapshot.layout == self.snapshot_layout,
        )

    async def read_for_snapshot(
        self, session: AsyncSession, scope: RelationshipScope
    ) -> LoadedPartition | None:
        """The partition to store as the relationship's snapshot, if it needs one: read
        from rows if it is large enough and has none, or its snapshot completed with the
        changes recorded since it was built; otherwise None."""
        if self._snapshot_min is None:
            return None
        connection = await session.connection()
        changes = await connection.scalar(
            self._snapshot_of(scope, func.cardinality(PartitionSnapshot.changed))
        )
        if changes == 0:
            return None
        if changes is not None:  # no distances needed: only the index is stored
            return await self.read(session, scope, _no_query(), "")
        read = _Read(connection, scope, datetime.now(UTC))
        size = await connection.scalar(read.active(select(func.count())))
        if (size or 0) < self._snapshot_min:
            return None
        return await self._from_rows(read, None, "")

    async def _from_snapshot(
        self, read: _Read, snapshot: _Snapshot, vector: Vector | None, version: str
    ) -> LoadedPartition | None:
        """The snapshot completed from the rows, if it is still stored: the rows and the
        snapshot row are read by one statement, and a write that changes what a snapshot
        holds updates or deletes it in its own transaction, so a write committed since
        the snapshot was fetched is seen here (and the rows are read instead).

        Rows the snapshot does not hold, or whose memory a write since recorded as
        changed, are read with their content by a second statement, which must find
        the snapshot row unchanged too."""
        still = self._snapshot_of(read.scope, _snapshot_version()).scalar_subquery()
        # Whether this transaction wrote already: a later write of its own would leave
        # the snapshot row's xmin as it is, so what it builds must not be stored.
        writing = func.txid_current_if_assigned().is_not(None)
        check = read.concatenated(_check_row(self._distance(vector)), still, writing)
        raw, current_version, wrote = (await read.connection.execute(check)).one()
        rows = np.frombuffer(raw or b"", dtype=CHECK_ROW)
        if current_version != snapshot.version:
            return None  # changed since it was fetched: read the rows
        keys = rows["key"].tobytes()
        changes = None
        if keys != snapshot.encoded.keys or snapshot.changed:
            changes = await self._changes(read, snapshot, keys)
            if changes is None:
                return None
        distances = rows["distance"].astype(np.float32)
        similarity, has_vector = similarity_of(distances, vector is not None)
        now = np.frombuffer(rows["statistics"].tobytes(), dtype=STATISTICS_ROW)
        partition = encoding.loaded(
            snapshot.encoded,
            version,
            "snapshot",
            self._weights.neighbour_window,
            has_vector=has_vector,
            similarity=similarity,
            statistics=now,
            changes=changes,
        )
        # Completed with changes: worth storing in the snapshot's place (store_snapshot).
        if changes is None or wrote:
            return partition
        return replace(partition, merged_from=snapshot.version)

    async def _changes(
        self, read: _Read, snapshot: _Snapshot, keys: bytes
    ) -> encoding.Changes | None:
        """Where each current row (``keys``, in partition order) is in the snapshot, and
        the rows it has no current copy of, read; None if a write came in between."""
        held = snapshot.encoded.keys
        position = {held[i : i + 16]: i // 16 for i in range(0, len(held), 16)}
        origin = np.fromiter(
            (
                -1 if key in snapshot.changed else position.get(key, -1)
                for key in (keys[i : i + 16] for i in range(0, len(keys), 16))
            ),
            np.intp,
            len(keys) // 16,
        )
        wanted = [uuid.UUID(bytes=keys[16 * i : 16 * i + 16]) for i in np.flatnonzero(origin < 0)]
        if len(wanted) > MAX_CHANGES:
            return None  # rows that came back without a recorded write (expiry moved)
        added: list[PartitionRecord] = []
        tokens: list[list[str]] = []
        if wanted:
            still = self._snapshot_of(read.scope, _snapshot_version()).scalar_subquery()
            ids = bindparam("wanted", wanted, type_=ARRAY(PG_UUID(as_uuid=True)))
            statement = read.ordered(self._columns(still)).where(Memory.id == any_(ids))
            rows = (await read.connection.execute(statement)).all()
            if [row[0] for row in rows] != wanted or any(r[15] != snapshot.version for r in rows):
                return None
            added = [_record(row) for row in rows]
            tokens = [_tokens(row) for row in rows]
        return encoding.Changes(origin, added, tokens, self._params)

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
            _TOKENS,
            _TOKEN_COUNT,
            *extra,
        )

    def _bm25(self, rows: Sequence[Any]) -> Bm25Index:
        """The BM25 index of rows from :meth:`_columns`: their tokens (``_tokens``) in
        one split, which the per-row counts from Postgres match by construction."""
        lengths = np.fromiter((row[14] for row in rows), np.int64, len(rows))
        tokens = " ".join(row[13] for row in rows if row[14]).split(" ") if lengths.any() else []
        return Bm25Index.build_flat(tokens, lengths, self._params)

    async def _from_rows(self, read: _Read, vector: Vector | None, version: str) -> LoadedPartition:
        wants_snapshot = self._snapshot_min is not None
        extra = [self._distance(vector)] + ([_row_version()] if wants_snapshot else [])
        rows = (await read.connection.execute(read.ordered(self._columns(*extra)))).all()
        records = [_record(row) for row in rows]
        distances = np.fromiter(
            (NO_DISTANCE if row[15] is None else row[15] for row in rows), np.float32, len(rows)
        )
        similarity, has_vector = similarity_of(distances, vector is not None)
        row_versions = None
        if self._snapshot_min is not None and len(rows) >= self._snapshot_min:
            row_versions = b"".join(row[16] for row in rows)
        index = build_index(records, self._bm25(rows), None, has_vector, self._weights)
        return assemble(records, index, version, "cold", similarity, row_versions)

    async def vectors(
        self, session: AsyncSession, scope: RelationshipScope, records: list[PartitionRecord]
    ) -> tuple[Vector | None, npt.NDArray[np.bool_]]:
        """The partition's vectors in ``records`` order (zero rows where none is usable).
        Usually the same rows in the same order; a write in between is matched by id."""
        vector = case((self._usable(), func.halfvec_send(Memory.embedding)), else_=None)
        connection = await session.connection()
        statement = _ordered(select(Memory.id, vector), scope, datetime.now(UTC))
        rows = (await connection.execute(statement)).all()
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
            if partition.row_versions is not None:
                now = datetime.now(UTC)
                current = await session.scalar(_concatenated(_row_version(), scope, now))
            else:
                current = await session.scalar(self._snapshot_of(scope, _snapshot_version()))
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
