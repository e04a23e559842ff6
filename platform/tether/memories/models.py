"""Memory versions and the consolidation log, hash-partitioned by relationship like the
memories themselves (whose table is the recall store's: ``tether.recall.models``)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    DateTime,
    ForeignKey,
    Index,
    Integer,
    PrimaryKeyConstraint,
    String,
    Text,
    func,
)
from sqlalchemy.dialects.postgresql import JSONB, UUID
from sqlalchemy.orm import Mapped, mapped_column

from tether.core.database import Base
from tether.core.partitions import partition_by_relationship


def _relationship_fk() -> Mapped[uuid.UUID]:
    return mapped_column(UUID(as_uuid=True), ForeignKey("relationships.id", ondelete="CASCADE"))


def _tenant_fk() -> Mapped[uuid.UUID]:
    return mapped_column(UUID(as_uuid=True), ForeignKey("tenants.id", ondelete="CASCADE"))


def _now() -> Mapped[datetime]:
    return mapped_column(DateTime(timezone=True), server_default=func.now())


class MemoryVersion(Base):
    """Every state a memory had, with who changed it and why."""

    __tablename__ = "memory_versions"
    __table_args__ = (
        PrimaryKeyConstraint("relationship_id", "id"),
        Index("ix_memory_versions_memory", "relationship_id", "memory_id", "version"),
        partition_by_relationship(),
    )

    relationship_id: Mapped[uuid.UUID] = _relationship_fk()
    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    tenant_id: Mapped[uuid.UUID] = _tenant_fk()
    memory_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    version: Mapped[int] = mapped_column(Integer)
    change: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(Text)
    actor: Mapped[str] = mapped_column(String(64))
    snapshot: Mapped[dict[str, Any]] = mapped_column(JSONB)
    created_at: Mapped[datetime] = _now()


class ConsolidationRecord(Base):
    """The conflict log: what consolidation decided for each candidate, and why."""

    __tablename__ = "consolidation_log"
    __table_args__ = (
        PrimaryKeyConstraint("relationship_id", "id"),
        partition_by_relationship(),
    )

    relationship_id: Mapped[uuid.UUID] = _relationship_fk()
    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    tenant_id: Mapped[uuid.UUID] = _tenant_fk()
    session_id: Mapped[str | None] = mapped_column(String(128))
    outcome: Mapped[str] = mapped_column(String(16))
    candidate: Mapped[dict[str, Any]] = mapped_column(JSONB)
    target_memory_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    result_memory_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    reason: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = _now()
