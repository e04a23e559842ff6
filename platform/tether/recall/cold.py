"""Cold reads: a partition from Postgres, when neither this process nor Redis has it.

Two ways, both without moving vectors (pgvector computes the query's cosine distance to
each memory and only those numbers come back):

- from a snapshot (large partitions): the encoded records and BM25 postings of the
  partition, stored by an earlier read, plus one aggregate over the rows that returns
  their ids, distances and recall statistics (always taken from the rows). Memories the
  snapshot does not hold, or that a write since recorded in its ``changed``, are read
  from their rows and merged in (decision 0014).
- from rows: every active memory with its tokens, indexed here.

Both read a partition as one row of aggregates: a fixed-width binary row per memory
(``ROW``: id, distance, statistics, times, ``xmin``) concatenated, and the text columns
as arrays, which the driver decodes in C. One row per memory through the ORM or Core
cost more than Postgres's whole scan (0015).

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
from sqlalchemy.sql.sqltypes import NullType

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
    PartitionColumns,
    PartitionRecord,
    Vector,
    from_columns,
    similarity_of,
    stack_vectors,
)
from tether.recall.models import PartitionSnapshot
from tether.recall.partition import neighbour_table
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
# Times leave Postgres in their binary form (timestamptz_send: big-endian microseconds
# since 2000-01-01): extract(epoch ...) computes in numeric, and cost a read of 5,000
# memories milliseconds. NULL is sent as the int64 extreme that sorts the same way,
# which is also how Postgres encodes -infinity and infinity.
POSTGRES_EPOCH = 946_684_800_000_000  # 2000-01-01 in microseconds since 1970-01-01
# One memory as a read sends it (_row): its id, its cosine distance to the query, its
# statistics, when it occurred, the transaction that wrote its row, whether it is private.
ROW = np.dtype(
    [
        ("key", "V16"),
        ("distance", ">f4"),
        ("statistics", f"V{STATISTICS_ROW.itemsize}"),
        ("occurred", ">i8"),
        ("xmin", ">i8"),
        ("private", "?"),
    ]
)
# A row's id and xmin as store_snapshot compares them (_row_version).
ROW_VERSION = np.dtype([("key", "V16"), ("xmin", ">i8")])


def _joined(*parts: ColumnElement[bytes]) -> ColumnElement[bytes]:
    """``parts`` concatenated into one bytea."""
    joined = parts[0]
    for part in parts[1:]:
        joined = joined.op("||", return_type=LargeBinary)(part)
    return joined


def _row_version() -> ColumnElement[bytes]:
    """A row's id and the transaction that wrote its current version: 24 bytes that
    change with any update of the row."""
    return _joined(func.uuid_send(Memory.id, type_=LargeBinary), _xmin())


def _xmin() -> ColumnElement[bytes]:
    """The transaction that wrote a memory row's current version, as 8 bytes."""
    xmin = cast(cast(literal_column(f"{Memory.__tablename__}.xmin"), Text), BigInteger)
    return func.int8send(xmin, type_=LargeBinary)


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


# A memory's tokens leave Postgres as one string: the tokens are that string split on
# spaces (none if it is empty). Every reader splits a row this way, so a merged row and
# an indexed one always agree (a stored token with a space in it, or a NULL one, would
# otherwise count differently in different readers).
_TOKENS = func.coalesce(func.array_to_string(Memory.tokens, " "), "")
# The PartitionRecord fields a read sends as arrays, in order; the rest is in ROW.
_TEXTS: tuple[ColumnElement[Any] | QueryableAttribute[Any], ...] = (
    Memory.external_id,
    Memory.content,
    Memory.memory_type,
    Memory.layer,
    Memory.occurred_at,
    Memory.expires_at,
    Memory.last_recalled_at,
    Memory.source_session_id,
    _TOKENS,
)


def _split(tokens: str) -> list[str]:
    """One memory's tokens as sent (see ``_TOKENS``)."""
    return tokens.split(" ") if tokens else []


def _time(moment: QueryableAttribute[Any], default: int) -> ColumnElement[bytes]:
    """``moment`` as 8 bytes (see ``POSTGRES_EPOCH``), ``default`` where it is NULL."""
    sent = func.timestamptz_send(moment, type_=LargeBinary)
    return func.coalesce(sent, literal(default.to_bytes(8, "big", signed=True), LargeBinary))


def _unix_micros(sent: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    """Times as ``_time`` sends them, in microseconds since 1970 (the extremes kept)."""
    micros = sent.astype(np.int64)
    extreme = (micros == NEVER_RECALLED) | (micros == NEVER_EXPIRES)
    return np.where(extreme, micros, micros + POSTGRES_EPOCH)


def _row(distance: ColumnElement[Any]) -> ColumnElement[bytes]:
    """A memory as one ``ROW``."""
    return _joined(
        func.uuid_send(Memory.id, type_=LargeBinary),
        func.float4send(cast(func.coalesce(distance, NO_DISTANCE), REAL), type_=LargeBinary),
        func.float8send(Memory.importance, type_=LargeBinary),
        func.float8send(Memory.confidence, type_=LargeBinary),
        func.float8send(Memory.strength, type_=LargeBinary),
        _time(Memory.last_recalled_at, NEVER_RECALLED),
        _time(Memory.expires_at, NEVER_EXPIRES),
        func.timestamptz_send(Memory.occurred_at, type_=LargeBinary),
        _xmin(),
        func.boolsend(Memory.private_to_creator, type_=LargeBinary),
    )


@dataclass(frozen=True, slots=True)
class _Read:
    """One cold read's statements: its connection, and its partition as of one moment
    (so that its statements agree on which memories have expired)."""

    connection: AsyncConnection
    scope: RelationshipScope
    now: datetime

    def active(self, statement: Any) -> Any:
        return _active(statement, self.scope, self.now)

    def aggregated(
        self,
        distance: ColumnElement[Any],
        *,
        texts_of: Any = None,
        where: Sequence[ColumnElement[bool]] = (),
        also: Sequence[Any] = (),
    ) -> Any:
        """One row: the ``ROW`` of every active memory of the partition (that ``where``
        selects) concatenated in partition order, then each ``_TEXTS`` column as an array
        in the same order, of all those memories or, given ``texts_of`` (a subquery of
        ids, column ``id``), of those it holds; then ``also``."""
        texts: list[Any] = list(_TEXTS)
        statement = select(_row(distance).label("row"))
        if texts_of is not None:
            # Joined, not tested per column: a membership test per text column and row
            # cost more than the rest of the statement.
            marked = texts_of.c.id.is_not(None)
            texts = [case((marked, column)) for column in texts]
            joined = Memory.__table__.outerjoin(texts_of, texts_of.c.id == Memory.id)
            statement = statement.add_columns(marked.label("marked")).select_from(joined)
        statement = statement.add_columns(*(t.label(f"text{i}") for i, t in enumerate(texts)))
        rows = _ordered(statement, self.scope, self.now).where(*where).subquery()

        def array(i: int) -> Any:
            # Untyped: SQLAlchemy's per-element processing of typed arrays costs more
            # than decoding them, which the driver does.
            values = func.array_agg(rows.c[f"text{i}"], type_=NullType())
            return values if texts_of is None else values.filter(rows.c.marked)

        concatenated = func.string_agg(rows.c.row, literal(b"", LargeBinary), type_=LargeBinary)
        return select(concatenated, *(array(i) for i in range(len(texts))), *also)


@dataclass(frozen=True, slots=True)
class _Aggregated:
    """What :meth:`_Read.aggregated` read: every memory's ``ROW``, and the text columns
    of those it read them for."""

    rows: npt.NDArray[np.void]
    texts: tuple[list[Any], ...]

    @classmethod
    def of(cls, values: Sequence[Any]) -> _Aggregated:
        texts = tuple(list(column or ()) for column in values[1 : 1 + len(_TEXTS)])
        return cls(np.frombuffer(values[0] or b"", dtype=ROW), texts)

    def records(self, rows: npt.NDArray[np.void]) -> tuple[list[PartitionRecord], list[str]]:
        """``rows`` (those the texts were read for, in order) as records, and each
        one's tokens as sent (``_split`` splits them)."""
        if any(len(column) != len(rows) for column in self.texts):
            raise ValueError("the texts read are not those of the rows")
        external, content, kind, layer, occurred, expires, recalled, group, tokens = self.texts
        statistics = _statistics(rows)
        keys = rows["key"].tobytes()
        records = list(
            map(
                PartitionRecord,
                [keys[i : i + 16] for i in range(0, len(keys), 16)],
                external,
                content,
                kind,
                layer,
                occurred,
                expires,
                statistics["importance"].tolist(),
                statistics["confidence"].tolist(),
                statistics["strength"].tolist(),
                recalled,
                rows["private"].tolist(),
                group,
            )
        )
        return records, tokens


def _statistics(rows: npt.NDArray[np.void]) -> npt.NDArray[np.void]:
    """The ``STATISTICS_ROW`` of each of ``rows``, with times since 1970."""
    statistics = np.frombuffer(rows["statistics"].tobytes(), dtype=STATISTICS_ROW).copy()
    for moment in ("last_recalled_at", "expires_at"):
        statistics[moment] = _unix_micros(statistics[moment])
    return statistics


def _row_versions(rows: npt.NDArray[np.void]) -> bytes:
    """The rows' ids and ``xmin``, as store_snapshot reads them back (_row_version)."""
    versions = np.empty(len(rows), dtype=ROW_VERSION)
    versions["key"] = rows["key"]
    versions["xmin"] = rows["xmin"]
    return versions.tobytes()


@dataclass(frozen=True, slots=True)
class _Snapshot:
    encoded: encoding.EncodedPartition
    version: str  # the transaction that last wrote its row (_snapshot_version)
    changed: set[bytes]  # ids of memories written since it was built


async def _no_query() -> None:
    return None


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

        The same statement reads the texts of the memories the snapshot row records as
        changed; a current row the snapshot lacks without such a record is read by a
        second statement, which must find the snapshot row unchanged too."""
        still = self._snapshot_of(read.scope, _snapshot_version()).scalar_subquery()
        # Whether this transaction wrote already: a later write of its own would leave
        # the snapshot row's xmin as it is, so what it builds must not be stored.
        writing = func.txid_current_if_assigned().is_not(None)
        changed = (
            self._snapshot_of(read.scope, func.unnest(PartitionSnapshot.changed).label("id"))
            .distinct()
            .subquery()
        )
        check = read.aggregated(self._distance(vector), texts_of=changed, also=(still, writing))
        *values, current_version, wrote = (await read.connection.execute(check)).one()
        if current_version != snapshot.version:
            return None  # changed since it was fetched: read the rows
        found = _Aggregated.of(values)
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
            statistics=_statistics(rows),
            changes=changes,
        )
        # Completed with changes: worth storing in the snapshot's place (store_snapshot).
        if changes is None or wrote:
            return partition
        return replace(partition, merged_from=snapshot.version)

    async def _changes(
        self, read: _Read, snapshot: _Snapshot, found: _Aggregated
    ) -> encoding.Changes | None:
        """Where each current row is in the snapshot, and the rows it has no current copy
        of (read with the check if recorded as changed); None if a write came in between."""
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
        if np.array_equal(wanted, np.flatnonzero(recorded)):
            added, tokens = found.records(found.rows[wanted])
        else:  # never the case while every write is recorded; read them all
            ids = [uuid.UUID(bytes=current[i]) for i in wanted]
            still = self._snapshot_of(read.scope, _snapshot_version()).scalar_subquery()
            bound = bindparam("wanted", ids, type_=ARRAY(PG_UUID(as_uuid=True)))
            statement = read.aggregated(
                literal(None), where=[Memory.id == any_(bound)], also=(still,)
            )
            *values, version = (await read.connection.execute(statement)).one()
            again = _Aggregated.of(values)
            if version != snapshot.version or again.rows["key"].tobytes() != b"".join(
                current[i] for i in wanted
            ):
                return None
            added, tokens = again.records(again.rows)
        return encoding.Changes(origin, added, [_split(t) for t in tokens], self._params)

    def _bm25(self, tokens: Sequence[str]) -> Bm25Index:
        """The BM25 index of memories whose tokens are ``tokens`` as sent (``_split``),
        in one split of all of them."""
        lengths = np.fromiter((t.count(" ") + 1 if t else 0 for t in tokens), np.int64, len(tokens))
        flat = " ".join(t for t in tokens if t).split(" ") if lengths.any() else []
        return Bm25Index.build_flat(flat, lengths, self._params)

    async def _from_rows(self, read: _Read, vector: Vector | None, version: str) -> LoadedPartition:
        statement = read.aggregated(self._distance(vector))
        found = _Aggregated.of((await read.connection.execute(statement)).one())
        rows = found.rows
        records, tokens = found.records(rows)
        similarity, has_vector = similarity_of(
            rows["distance"].astype(np.float32), vector is not None
        )
        row_versions = None
        if self._snapshot_min is not None and len(rows) >= self._snapshot_min:
            row_versions = _row_versions(rows)
        groups = [r.group for r in records]
        columns = PartitionColumns(
            records=records,
            built=_statistics(rows),
            occurred=_unix_micros(rows["occurred"]) / 1e6,
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
