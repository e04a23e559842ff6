"""The ``memories`` table: one row per memory of one relationship, hash-partitioned by
relationship so that a relationship's memories sit in one partition, with what the
recall store reads of it (its generated ``query_row``, the recall indexes' predicates).
Writers (tether.memories) own the rules for changing rows; this module owns their shape."""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any

from pgvector.sqlalchemy import HALFVEC
from sqlalchemy import (
    Boolean,
    CheckConstraint,
    ColumnElement,
    Computed,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    PrimaryKeyConstraint,
    String,
    Text,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, UUID
from sqlalchemy.orm import Mapped, mapped_column

from tether.core.database import Base
from tether.core.partitions import partition_by_relationship
from tether.recall.enums import MemoryLayer, MemoryType

# Stored tokens are words (migration 0010): readers count and match them as the tokens
# joined by spaces and split on them, which only words make exact.
TOKENS_ARE_WORDS = (
    "CASE WHEN array_ndims(tokens) > 1 THEN false "
    "ELSE array_position(tokens, NULL) IS NULL AND array_position(tokens, '') IS NULL "
    "AND strpos(array_to_string(tokens, ''), ' ') = 0 END"
)


def _code(column: str, known: type[StrEnum]) -> str:
    """``column`` as 2 bytes: 1 + its position among ``known``'s values, 0 for any other."""
    values = ", ".join(f"'{value}'" for value in known)
    return f"int2send(coalesce(array_position(ARRAY[{values}]::text[], {column}::text), 0)::int2)"


# What a read for one query sends of a memory apart from its distance to the query, in
# the order of tether.recall.wire.QUERY_ROW (decision 0030): Postgres keeps it in the row
# as a generated column, since computing it for each memory on every cold read was half
# of that read's statement. Times are big-endian microseconds since 2000 (their binary
# form), NULL as the int64 extreme that sorts the same way (wire.NEVER_*).
# Migration 0011 set the column to this expression; a change to it, or to MemoryType or
# MemoryLayer, needs a migration that sets the new one (test_cold_rows.py fails until then).
QUERY_ROW_FIELDS = " || ".join(
    (
        "uuid_send(id)",
        "float8send(importance)",
        "float8send(confidence)",
        "float8send(strength)",
        "coalesce(timestamptz_send(last_recalled_at), '\\x8000000000000000'::bytea)",
        "coalesce(timestamptz_send(expires_at), '\\x7fffffffffffffff'::bytea)",
        "timestamptz_send(occurred_at)",
        "boolsend(private_to_creator)",
        "int4send(cardinality(tokens))",
        _code("memory_type", MemoryType),
        _code("layer", MemoryLayer),
    )
)


# A memory a recall may return (expiry aside, which depends on the moment of the read):
# the predicate of the recall indexes (migration 0014, decision 0024), which a read must
# state in these words for Postgres to use them.
RECALLABLE = "is_active AND superseded_by IS NULL AND deleted_at IS NULL"
# Whether a memory's entry in ix_memories_recall, vector included, fits a btree entry
# (2,704 bytes; a 1,024-d halfvec takes 2,056): wider vectors are read from their rows.
INDEXED_VECTOR_DIMENSIONS = 1024
VECTOR_FITS = f"embedding_dim IS NULL OR embedding_dim <= {INDEXED_VECTOR_DIMENSIONS}"
VECTOR_TOO_WIDE = f"embedding_dim > {INDEXED_VECTOR_DIMENSIONS}"
# What a cold read for a query takes from ix_memories_recall besides its key columns, so
# that it never visits the heap for a memory (only for the tokens of those that hold a
# query term, found through ix_memories_terms). The predicate's columns are included too:
# a qual on them is then answered from the index whatever the planner proves.
RECALL_INCLUDES = (
    "tenant_id",
    "is_active",
    "superseded_by",
    "deleted_at",
    "expires_at",
    "source_session_id",
    "query_row",
    "embedding_model",
    "embedding_dim",
    "embedding",
)
# What VECTOR_FITS trusts: the recorded width is the vector's.
VECTOR_DIMENSION_RECORDED = (
    "embedding IS NULL OR (embedding_dim IS NOT NULL AND embedding_dim = vector_dims(embedding))"
)


def _relationship_fk() -> Mapped[uuid.UUID]:
    return mapped_column(UUID(as_uuid=True), ForeignKey("relationships.id", ondelete="CASCADE"))


def _tenant_fk() -> Mapped[uuid.UUID]:
    return mapped_column(UUID(as_uuid=True), ForeignKey("tenants.id", ondelete="CASCADE"))


def _now() -> Mapped[datetime]:
    return mapped_column(DateTime(timezone=True), server_default=func.now())


class Memory(Base):
    """One memory of one relationship. Never rewritten in place: an edit bumps
    ``version`` and records the previous state in ``memory_versions``; an update or a
    contradiction writes a new memory and marks this one ``superseded_by``."""

    __tablename__ = "memories"
    __table_args__ = (
        PrimaryKeyConstraint("relationship_id", "id"),
        Index(
            "uq_memories_external_id",
            "relationship_id",
            "external_id",
            unique=True,
            postgresql_where=text("external_id IS NOT NULL"),
        ),
        Index("ix_memories_active", "relationship_id", "is_active"),
        # A cold read for a query (decision 0030): every recallable memory of a
        # relationship in partition order, with all the read takes of it.
        Index(
            "ix_memories_recall",
            "relationship_id",
            "occurred_at",
            "id",
            postgresql_include=list(RECALL_INCLUDES),
            postgresql_where=text(f"({RECALLABLE}) AND ({VECTOR_FITS})"),
        ),
        Index(
            "ix_memories_recall_wide",
            "relationship_id",
            postgresql_where=text(f"({RECALLABLE}) AND {VECTOR_TOO_WIDE}"),
        ),
        # The memories of a relationship holding a query term (btree_gin: the uuid).
        # Without a pending list, which every search would scan (migration 0014).
        Index(
            "ix_memories_terms",
            "relationship_id",
            "tokens",
            postgresql_using="gin",
            postgresql_with={"fastupdate": "off"},
        ),
        CheckConstraint(TOKENS_ARE_WORDS, name="tokens_are_words"),
        CheckConstraint(VECTOR_DIMENSION_RECORDED, name="vector_dimension_recorded"),
        Index(
            "ix_memories_conflicts",
            "relationship_id",
            "conflicts_with",
            postgresql_where=text("conflicts_with IS NOT NULL"),
        ),
        Index(
            "ix_memories_expiring",
            "expires_at",
            postgresql_where=text("is_active AND expires_at IS NOT NULL"),
        ),
        partition_by_relationship(),
    )

    relationship_id: Mapped[uuid.UUID] = _relationship_fk()
    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    tenant_id: Mapped[uuid.UUID] = _tenant_fk()
    external_id: Mapped[str | None] = mapped_column(String(128))
    memory_type: Mapped[str] = mapped_column(String(16))
    layer: Mapped[str] = mapped_column(String(16))
    subject: Mapped[str] = mapped_column(String(128), server_default="")
    predicate: Mapped[str] = mapped_column(String(64), server_default="")
    object: Mapped[str] = mapped_column(String(256), server_default="")
    polarity: Mapped[str] = mapped_column(String(16))
    exclusive: Mapped[bool] = mapped_column(Boolean, server_default="false")
    content: Mapped[str] = mapped_column(Text)
    tokens: Mapped[list[str]] = mapped_column(ARRAY(Text))
    # float16: half the bytes, and the row stays under TOAST's threshold (0007).
    embedding: Mapped[Any | None] = mapped_column(HALFVEC())
    embedding_model: Mapped[str | None] = mapped_column(String(64))
    embedding_dim: Mapped[int | None] = mapped_column(Integer)
    importance: Mapped[float] = mapped_column(Float)
    confidence: Mapped[float] = mapped_column(Float)
    strength: Mapped[float] = mapped_column(Float, server_default="1")
    recall_count: Mapped[int] = mapped_column(Integer, server_default="0")
    confirmations: Mapped[int] = mapped_column(Integer, server_default="1")
    last_recalled_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    occurred_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    valid_from: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    is_active: Mapped[bool] = mapped_column(Boolean, server_default="true")
    superseded_by: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    source_turn_ids: Mapped[list[uuid.UUID]] = mapped_column(
        ARRAY(UUID(as_uuid=True)), server_default="{}"
    )
    source_session_id: Mapped[str | None] = mapped_column(String(128))
    private_to_creator: Mapped[bool] = mapped_column(Boolean, server_default="false")
    origin: Mapped[str] = mapped_column(String(16))
    # How it was learned (tether.memories.enums.Provenance; migration 0021).
    provenance: Mapped[str] = mapped_column(String(16), server_default="user_stated")
    # A held memory: inactive because it would have replaced this stronger one (an open
    # conflict while neither active nor superseded; decision 0053).
    conflicts_with: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    version: Mapped[int] = mapped_column(Integer, server_default="1")
    deleted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = _now()
    updated_at: Mapped[datetime] = _now()
    # Generated (QUERY_ROW_FIELDS); deferred: only cold reads for a query select it.
    query_row: Mapped[bytes] = mapped_column(
        LargeBinary, Computed(QUERY_ROW_FIELDS, persisted=True), deferred=True
    )


def active_now(now: datetime | ColumnElement[datetime]) -> tuple[ColumnElement[bool], ...]:
    """Active, not superseded, not expired at ``now`` (a value or a bind parameter)."""
    return (
        Memory.is_active.is_(True),
        Memory.superseded_by.is_(None),
        (Memory.expires_at.is_(None)) | (Memory.expires_at > now),
    )
