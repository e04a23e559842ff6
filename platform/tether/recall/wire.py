"""The SQL of a cold read, and the shape of what it sends back.

Every read returns ONE row of aggregates over a partition's active memories, in
partition order (occurred_at, id): a ``bytea`` concatenating one fixed-width ``QUERY_ROW``
per memory (its generated ``query_row`` column and its distance to the query, decoded
with ``np.frombuffer``), and one array per text column, aligned with it because every
aggregate orders its input the same way (decision 0030). Three reads use that shape:

- ``for_query``: what ranking one query needs, answered from the recall indexes, with the
  tokens of only the memories that hold a query term (``memory_terms``);
- ``texts``: what a response shows of the memories it returns;
- ``whole``: everything, vectors included, for the copy a fill keeps.

The partition is named by bind parameters (``PARTITION``), so the statements are built
once and executed with :func:`partition_params`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy import (
    BindParameter,
    ColumnElement,
    DateTime,
    LargeBinary,
    Select,
    Subquery,
    Text,
    any_,
    bindparam,
    cast,
    func,
    literal,
    select,
    text,
    union_all,
)
from sqlalchemy.dialects.postgresql import ARRAY, REAL, aggregate_order_by
from sqlalchemy.dialects.postgresql import UUID as PG_UUID
from sqlalchemy.sql.sqltypes import NullType

from tenancy.ids import RelationshipScope
from tether.recall.models import RECALLABLE, VECTOR_FITS, VECTOR_TOO_WIDE, Memory, active_now

# Times travel as Postgres sends them (big-endian microseconds since 2000-01-01), NULL
# as the int64 extreme that sorts the same way (models.QUERY_ROW_FIELDS).
POSTGRES_EPOCH = 946_684_800_000_000  # 2000-01-01 in microseconds since 1970-01-01
NEVER_RECALLED = int(np.iinfo(np.int64).min)
NEVER_EXPIRES = int(np.iinfo(np.int64).max)
NO_DISTANCE = -1.0  # where a memory has no usable vector (a cosine distance is >= 0)
# One memory as a read sends it: its ``query_row`` (models.QUERY_ROW_FIELDS, the kind and
# layer as 1 + their position in MemoryType / MemoryLayer, 0 for any other value), then
# its cosine distance to the query.
QUERY_ROW = np.dtype(
    [
        ("key", "V16"),
        ("importance", ">f8"),
        ("confidence", ">f8"),
        ("strength", ">f8"),
        ("last_recalled_at", ">i8"),
        ("expires_at", ">i8"),
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
# The ids whose texts a ``texts`` read sends.
WANTED = bindparam("wanted", type_=ARRAY(PG_UUID(as_uuid=True)))
# A memory's tokens leave Postgres as one string, split on spaces by every reader (stored
# tokens are words, migration 0010, so this agrees with ``cardinality`` and ``&&``).
TOKENS = func.coalesce(func.array_to_string(Memory.tokens, " "), "")
# What a response shows of a memory, after its ``QUERY_ROW``.
SHOWN = (Memory.external_id, Memory.content, Memory.memory_type, Memory.layer)


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


def split_tokens(tokens: str) -> list[str]:
    """One memory's tokens as sent (see ``TOKENS``)."""
    return tokens.split(" ") if tokens else []


def unix_micros(sent: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    """Times as sent, in microseconds since 1970 (the NULL extremes kept)."""
    micros = sent.astype(np.int64)
    extreme = (micros == NEVER_RECALLED) | (micros == NEVER_EXPIRES)
    return np.where(extreme, micros, micros + POSTGRES_EPOCH)


def rows_of(sent: bytes | None) -> npt.NDArray[np.void]:
    """The ``QUERY_ROW``s of a read's first column."""
    return np.frombuffer(sent or b"", dtype=QUERY_ROW)


def _query_row(distance: ColumnElement[Any]) -> ColumnElement[bytes]:
    sent = func.float4send(cast(func.coalesce(distance, NO_DISTANCE), REAL), type_=LargeBinary)
    return Memory.query_row.expression.op("||", return_type=LargeBinary)(sent)


def _ordered(rows: Subquery, value: ColumnElement[Any]) -> Any:
    """``value`` of ``rows`` to aggregate in partition order (Postgres guarantees an
    order only inside the aggregate; the subquery is sorted too, so that the sort works
    on the computed rows, and the aggregates add none of their own)."""
    return aggregate_order_by(value, rows.c.at, rows.c.id)


def _aggregated(rows: Subquery, *arrays: ColumnElement[Any]) -> Select[Any]:
    """One row: ``rows.c.row`` concatenated, then each of ``arrays`` (columns of
    ``rows`` or of a join to it) as an array, all in partition order."""
    concatenated = func.string_agg(
        rows.c.row, _ordered(rows, literal(b"", LargeBinary)), type_=LargeBinary
    )
    # Untyped: SQLAlchemy's per-element processing of typed arrays costs more than the
    # driver's decoding.
    return select(
        concatenated, *(func.array_agg(_ordered(rows, a), type_=NullType()) for a in arrays)
    )


def _in_partition(*columns: Any) -> Select[Any]:
    """``columns`` of the ``PARTITION``'s memories active at its moment, with the
    columns of partition order (``at``, ``id``)."""
    return select(*columns, Memory.occurred_at.label("at"), Memory.id.label("id")).where(
        Memory.relationship_id == PARTITION.relationship_id,
        Memory.tenant_id == PARTITION.tenant_id,
        Memory.deleted_at.is_(None),
        *active_now(PARTITION.now),
    )


def for_query(distance: ColumnElement[Any]) -> Select[Any]:
    """The ``QUERY_ROW``s, the sessions, and the tokens of the memories that hold one of
    ``QUERY_TERMS`` (NULL for the others).

    Read from the recall indexes alone (migration 0014, decision 0030): the memories whose
    vector fits ``ix_memories_recall`` from it by an index-only scan, the others from
    their rows, and the matching tokens through ``memory_terms()`` (row-level security
    would otherwise keep the term index from being used)."""
    recalled = union_all(_recalled(distance, VECTOR_FITS), _recalled(distance, VECTOR_TOO_WIDE))
    rows = recalled.subquery("recalled")
    terms = PARTITION.relationship_id, PARTITION.tenant_id, QUERY_TERMS
    matched = func.memory_terms(*terms).table_valued("id", "tokens").alias("matched")
    joined = rows.outerjoin(matched, matched.c.id == rows.c.id)
    return _aggregated(rows, rows.c.session, matched.c.tokens).select_from(joined)


def _recalled(distance: ColumnElement[Any], vector: str) -> Select[Any]:
    """The recallable memories whose vector is as ``vector`` says, with the conditions
    of the recall indexes in their own words: Postgres uses a partial index only for a
    query it can prove them of."""
    sent = (_query_row(distance).label("row"), Memory.source_session_id.label("session"))
    return select(*sent, Memory.occurred_at.label("at"), Memory.id.label("id")).where(
        Memory.relationship_id == PARTITION.relationship_id,
        Memory.tenant_id == PARTITION.tenant_id,
        text(f"({RECALLABLE})"),
        text(f"({vector})"),
        Memory.expires_at.is_(None) | (Memory.expires_at > PARTITION.now),
    )


def texts() -> Select[Any]:
    """The ``QUERY_ROW``s (without distances) and the ``SHOWN`` columns of the memories
    of ``WANTED``."""
    shown = [column.label(f"shown{i}") for i, column in enumerate(SHOWN)]
    rows = _in_partition(_query_row(literal(None)).label("row"), *shown)
    sent = rows.where(Memory.id == any_(WANTED)).order_by("at", "id").subquery()
    return _aggregated(sent, *(sent.c[f"shown{i}"] for i in range(len(SHOWN))))


def whole(vector: ColumnElement[Any]) -> Select[Any]:
    """Every memory's ``QUERY_ROW`` (without distance), session, tokens, ``SHOWN``
    columns and ``vector`` (pgvector's binary form, NULL where it has none usable)."""
    columns: Sequence[Any] = (
        Memory.source_session_id,
        TOKENS,
        *SHOWN,
        vector,
    )
    labelled = [column.label(f"c{i}") for i, column in enumerate(columns)]
    rows = _in_partition(_query_row(literal(None)).label("row"), *labelled)
    sent = rows.order_by("at", "id").subquery()
    return _aggregated(sent, *(sent.c[f"c{i}"] for i in range(len(columns))))
