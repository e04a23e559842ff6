"""How a cold read's statements send a partition (decision 0015): one row of aggregates,
a fixed-width binary ``ROW`` per memory concatenated in partition order and one array
per text column, and how they are read back.

Every aggregate orders its input the same way and is computed by the same aggregate
node, so the binary rows and the arrays align by construction.

The partition a statement reads is given by bind parameters (``PARTITION``), so a
reader builds its aggregate statements once and executes them with
:func:`partition_params`: building the statement of a 5,000-memory read, and
SQLAlchemy's cache key for it, cost ≈ 4 ms of every read."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy import (
    BigInteger,
    BindParameter,
    ColumnElement,
    DateTime,
    LargeBinary,
    Select,
    Subquery,
    Text,
    bindparam,
    case,
    cast,
    func,
    literal,
    literal_column,
    select,
    text,
    union_all,
)
from sqlalchemy.dialects.postgresql import ARRAY, REAL, aggregate_order_by
from sqlalchemy.dialects.postgresql import UUID as PG_UUID
from sqlalchemy.orm import QueryableAttribute
from sqlalchemy.sql.sqltypes import NullType

from tenancy.ids import RelationshipScope
from tether.memories.models import RECALLABLE, VECTOR_FITS, VECTOR_TOO_WIDE, Memory
from tether.memories.repositories import active_now
from tether.recall.loaded import (
    EPOCH,
    NEVER_EXPIRES,
    NEVER_RECALLED,
    NO_DISTANCE,
    STATISTICS_ROW,
    PartitionRecord,
)

# Times leave Postgres in their binary form (timestamptz_send: big-endian microseconds
# since 2000-01-01): extract(epoch ...) computes in numeric, and cost a read of 5,000
# memories milliseconds. NULL is sent as the int64 extreme that sorts the same way,
# which is also how Postgres encodes -infinity and infinity.
POSTGRES_EPOCH = 946_684_800_000_000  # 2000-01-01 in microseconds since 1970-01-01
# One memory as a read sends it (row_sent): its id, its cosine distance to the query, its
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
# One memory as a read for a query sends it (query_row_sent): what ranking needs of it,
# without its texts (decision 0017): its id, statistics and time as in ROW, whether it is
# private, how many tokens it has, its kind and layer as codes (1 + the position in
# MemoryType / MemoryLayer, 0 for any other value), then its distance. All but the
# distance is the memory's generated ``query_row`` column (decision 0018).
QUERY_ROW = np.dtype(
    [
        ("key", "V16"),
        ("statistics", f"V{STATISTICS_ROW.itemsize}"),
        ("occurred", ">i8"),
        ("private", "?"),
        ("length", ">i4"),
        ("kind", ">i2"),
        ("layer", ">i2"),
        ("distance", ">f4"),
    ]
)
# The distinct terms of the query a read for a query ranks.
QUERY_TERMS = bindparam("query_terms", type_=ARRAY(Text))
# A row's id and xmin as store_snapshot compares them (row_version).
ROW_VERSION = np.dtype([("key", "V16"), ("xmin", ">i8")])


@dataclass(frozen=True, slots=True)
class Partition:
    """The bind parameters that name a partition and the moment it is read at (so that a
    read's statements agree on which memories have expired)."""

    relationship_id: BindParameter[Any]
    tenant_id: BindParameter[Any]
    now: BindParameter[datetime]


PARTITION = Partition(
    bindparam("partition_relationship", type_=PG_UUID(as_uuid=True)),
    bindparam("partition_tenant", type_=PG_UUID(as_uuid=True)),
    bindparam("partition_now", type_=DateTime(timezone=True)),
)


def partition_params(scope: RelationshipScope, now: datetime) -> dict[str, Any]:
    """The values of ``PARTITION`` for the partition of ``scope`` at ``now``."""
    return {
        PARTITION.relationship_id.key: scope.relationship_id,
        PARTITION.tenant_id.key: scope.tenant_id,
        PARTITION.now.key: now,
    }


def joined(*parts: ColumnElement[bytes]) -> ColumnElement[bytes]:
    """``parts`` concatenated into one bytea."""
    joined = parts[0]
    for part in parts[1:]:
        joined = joined.op("||", return_type=LargeBinary)(part)
    return joined


def row_version() -> ColumnElement[bytes]:
    """A row's id and the transaction that wrote its current version: 24 bytes that
    change with any update of the row."""
    return joined(func.uuid_send(Memory.id, type_=LargeBinary), xmin())


def xmin() -> ColumnElement[bytes]:
    """The transaction that wrote a memory row's current version, as 8 bytes."""
    xmin = cast(cast(literal_column(f"{Memory.__tablename__}.xmin"), Text), BigInteger)
    return func.int8send(xmin, type_=LargeBinary)


def active(statement: Any) -> Any:
    """``statement`` narrowed to the ``PARTITION``'s memories active at its moment."""
    return statement.where(
        Memory.relationship_id == PARTITION.relationship_id,
        Memory.tenant_id == PARTITION.tenant_id,
        Memory.deleted_at.is_(None),
        *active_now(PARTITION.now),
    )


def ordered(statement: Any) -> Any:
    """``statement`` narrowed to the ``PARTITION``'s active memories, in their order."""
    return active(statement).order_by(Memory.occurred_at, Memory.id)


def _in_order(statement: Select[Any]) -> Select[Any]:
    """``statement`` with the columns that give the partition order (``_ordered_by``)."""
    return statement.add_columns(Memory.occurred_at.label("at"), Memory.id.label("id"))


def _ordered_by(rows: Subquery, value: ColumnElement[Any]) -> Any:
    """``value`` of ``rows`` (a ``_in_order`` subquery) to aggregate in partition order.
    Postgres guarantees that order only in the aggregate. The subquery is sorted too, so
    that it sorts the memories' computed rows, not the table's (whose vectors made the
    sort spill to disk); its output is then already in order, and the aggregates, which
    share their order, add no sort of their own."""
    return aggregate_order_by(value, rows.c.at, rows.c.id)


def concatenated(row: ColumnElement[bytes], *also: Any) -> Any:
    """One bytea of ``row`` for every active memory of the ``PARTITION``, in order (and
    ``also``, evaluated in the same statement)."""
    rows = ordered(_in_order(select(row.label("row")))).subquery()
    return select(_concatenation(rows), *also)


def _concatenation(rows: Subquery) -> ColumnElement[bytes]:
    # ORDER BY goes after the last argument (string_agg(row, '' ORDER BY ...)).
    separator = _ordered_by(rows, literal(b"", LargeBinary))
    return func.string_agg(rows.c.row, separator, type_=LargeBinary)


# A memory's tokens leave Postgres as one string: the tokens are that string split on
# spaces (none if it is empty). Every reader splits a row this way, so a merged row and
# an indexed one always agree (a stored token with a space in it, or a NULL one, would
# otherwise count differently in different readers).
TOKENS = func.coalesce(func.array_to_string(Memory.tokens, " "), "")
# The PartitionRecord fields a read sends as arrays, in order; the rest is in ROW. The
# times come from ROW too: the driver's decoding of 5,000 timestamps into datetimes
# cost ≈ 4.5 ms, twice what building them from ROW costs (``moments``).
TEXTS: tuple[ColumnElement[Any] | QueryableAttribute[Any], ...] = (
    Memory.external_id,
    Memory.content,
    Memory.memory_type,
    Memory.layer,
    Memory.source_session_id,
    TOKENS,
)


def split_tokens(tokens: str) -> list[str]:
    """One memory's tokens as sent (see ``TOKENS``)."""
    return tokens.split(" ") if tokens else []


def time_sent(moment: QueryableAttribute[Any], default: int) -> ColumnElement[bytes]:
    """``moment`` as 8 bytes (see ``POSTGRES_EPOCH``), ``default`` where it is NULL."""
    sent = func.timestamptz_send(moment, type_=LargeBinary)
    return func.coalesce(sent, literal(default.to_bytes(8, "big", signed=True), LargeBinary))


def unix_micros(sent: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    """Times as ``time_sent`` sends them, in microseconds since 1970 (the extremes kept)."""
    micros = sent.astype(np.int64)
    extreme = (micros == NEVER_RECALLED) | (micros == NEVER_EXPIRES)
    return np.where(extreme, micros, micros + POSTGRES_EPOCH)


def _distance_sent(distance: ColumnElement[Any]) -> ColumnElement[bytes]:
    return func.float4send(cast(func.coalesce(distance, NO_DISTANCE), REAL), type_=LargeBinary)


def row_sent(distance: ColumnElement[Any]) -> ColumnElement[bytes]:
    """A memory as one ``ROW``."""
    return joined(
        func.uuid_send(Memory.id, type_=LargeBinary),
        _distance_sent(distance),
        func.float8send(Memory.importance, type_=LargeBinary),
        func.float8send(Memory.confidence, type_=LargeBinary),
        func.float8send(Memory.strength, type_=LargeBinary),
        time_sent(Memory.last_recalled_at, NEVER_RECALLED),
        time_sent(Memory.expires_at, NEVER_EXPIRES),
        func.timestamptz_send(Memory.occurred_at, type_=LargeBinary),
        xmin(),
        func.boolsend(Memory.private_to_creator, type_=LargeBinary),
    )


def query_row_sent(distance: ColumnElement[Any]) -> ColumnElement[bytes]:
    """A memory as one ``QUERY_ROW``: its generated ``query_row`` and its distance. The
    token count and the test for a query term are those of the split tokens because
    stored tokens are words (migration 0010)."""
    return joined(Memory.query_row.expression, _distance_sent(distance))


def for_query(distance: ColumnElement[Any]) -> Select[Any]:
    """One row: the ``QUERY_ROW`` of every active memory of the ``PARTITION``
    concatenated in partition order, and two arrays in the same order: their sessions,
    and the tokens (as ``TOKENS`` sends them) of those that hold one of ``QUERY_TERMS``,
    NULL for the others.

    Read from the recall indexes alone but for the matching memories' tokens (migration
    0014, decision 0024): the memories whose vector fits ``ix_memories_recall`` from it,
    the others from their rows, and the tokens through ``memory_terms()``."""
    recalled = union_all(_recalled(distance, VECTOR_FITS), _recalled(distance, VECTOR_TOO_WIDE))
    rows = recalled.subquery("recalled")
    terms = PARTITION.relationship_id, PARTITION.tenant_id, QUERY_TERMS
    matched = func.memory_terms(*terms).table_valued("id", "tokens").alias("matched")
    joined = rows.outerjoin(matched, matched.c.id == rows.c.id)
    sessions = func.array_agg(_ordered_by(rows, rows.c.session), type_=NullType())
    tokens = func.array_agg(_ordered_by(rows, matched.c.tokens), type_=NullType())
    return select(_concatenation(rows), sessions, tokens).select_from(joined)


def _recalled(distance: ColumnElement[Any], vector: str) -> Select[Any]:
    """The ``QUERY_ROW``, session and order (``_in_order``'s columns) of the
    ``PARTITION``'s active memories whose vector is as ``vector`` says. The conditions of
    the recall indexes are stated in their own words: Postgres uses a partial index only
    for a query it can prove them of."""
    sent = select(query_row_sent(distance).label("row"), Memory.source_session_id.label("session"))
    return _in_order(sent).where(
        Memory.relationship_id == PARTITION.relationship_id,
        Memory.tenant_id == PARTITION.tenant_id,
        text(f"({RECALLABLE})"),
        text(f"({vector})"),
        Memory.expires_at.is_(None) | (Memory.expires_at > PARTITION.now),
    )


def aggregated(
    distance: ColumnElement[Any],
    *,
    texts_of: Subquery | None = None,
    where: Sequence[ColumnElement[bool]] = (),
    also: Sequence[Any] = (),
) -> Select[Any]:
    """One row: the ``ROW`` of every active memory of the ``PARTITION`` (that ``where``
    selects) concatenated in partition order, then each ``TEXTS`` column as an
    array in the same order, of all those memories or, given ``texts_of`` (a subquery of
    ids, column ``id``), of those it holds; then ``also``."""
    texts: list[Any] = list(TEXTS)
    statement = select(row_sent(distance).label("row"))
    if texts_of is not None:
        # Joined, not tested per column: a membership test per text column and row
        # cost more than the rest of the statement.
        marked = texts_of.c.id.is_not(None)
        texts = [case((marked, column)) for column in texts]
        outer = Memory.__table__.outerjoin(texts_of, texts_of.c.id == Memory.id)
        statement = statement.add_columns(marked.label("marked")).select_from(outer)
    statement = statement.add_columns(*(t.label(f"text{i}") for i, t in enumerate(texts)))
    sent = ordered(_in_order(statement)).where(*where).subquery()

    def array(i: int) -> Any:
        # Untyped: SQLAlchemy's per-element processing of typed arrays costs more than
        # decoding them, which the driver does.
        values = func.array_agg(_ordered_by(sent, sent.c[f"text{i}"]), type_=NullType())
        return values if texts_of is None else values.filter(sent.c.marked)

    return select(_concatenation(sent), *(array(i) for i in range(len(texts))), *also)


@dataclass(frozen=True, slots=True)
class Aggregated:
    """What an :func:`aggregated` statement read: every memory's ``ROW``, and the text columns
    of those it read them for."""

    rows: npt.NDArray[np.void]
    texts: tuple[list[Any], ...]

    @classmethod
    def of(cls, values: Sequence[Any]) -> Aggregated:
        texts = tuple(list(column or ()) for column in values[1 : 1 + len(TEXTS)])
        return cls(np.frombuffer(values[0] or b"", dtype=ROW), texts)

    def records(self, rows: npt.NDArray[np.void]) -> tuple[tuple[PartitionRecord, ...], list[str]]:
        """``rows`` (those the texts were read for, in order) as records, and each
        one's tokens as sent (``split_tokens`` splits them)."""
        if any(len(column) != len(rows) for column in self.texts):
            raise ValueError("the texts read are not those of the rows")
        external, content, kind, layer, group, tokens = self.texts
        statistics = statistics_of(rows)
        occurred = moments(unix_micros(rows["occurred"]), None)
        expires = moments(statistics["expires_at"], NEVER_EXPIRES)
        recalled = moments(statistics["last_recalled_at"], NEVER_RECALLED)
        keys = rows["key"].tobytes()
        records = tuple(
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


# Below this many microseconds from 1970 (either way: years 1834 to 2106), a time as float
# seconds is within half a microsecond of its exact value, which fromtimestamp restores
# exactly (it rounds to the nearest microsecond).
_FLOAT_EXACT = 2**32 * 1_000_000


def moments(micros: npt.NDArray[np.int64], never: int | None) -> list[datetime | None]:
    """Microseconds since 1970 as UTC datetimes (None where ``never``): the values the
    driver would decode, in half its time (exact integer arithmetic outside ±2^32 s).
    An infinite time (an int64 extreme other than ``never``; the API never writes one)
    raises ``OverflowError``, as 0015 says."""
    present = np.ones(len(micros), np.bool_) if never is None else micros != never
    if not present.any():
        return [None] * len(micros)
    at = datetime.fromtimestamp
    seconds = (micros / 1e6).tolist()
    exact = present & (micros > -_FLOAT_EXACT) & (micros < _FLOAT_EXACT)
    if exact.all():
        return [at(s, UTC) for s in seconds]
    found: list[datetime | None] = [None] * len(micros)
    for i in np.flatnonzero(exact).tolist():
        found[i] = at(seconds[i], UTC)
    for i in np.flatnonzero(present & ~exact).tolist():
        found[i] = EPOCH + timedelta(microseconds=int(micros[i]))
    return found


def statistics_of(rows: npt.NDArray[np.void]) -> npt.NDArray[np.void]:
    """The ``STATISTICS_ROW`` of each of ``rows``, with times since 1970."""
    statistics = np.frombuffer(rows["statistics"].tobytes(), dtype=STATISTICS_ROW).copy()
    for moment in ("last_recalled_at", "expires_at"):
        statistics[moment] = unix_micros(statistics[moment])
    return statistics


def row_versions(rows: npt.NDArray[np.void]) -> bytes:
    """The rows' ids and ``xmin``, as store_snapshot reads them back (row_version)."""
    versions = np.empty(len(rows), dtype=ROW_VERSION)
    versions["key"] = rows["key"]
    versions["xmin"] = rows["xmin"]
    return versions.tobytes()
