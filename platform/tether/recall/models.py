"""Partition snapshots: a large relationship's recall index, kept in Postgres so a cold
read decodes one value instead of indexing thousands of rows (decision 0011).

Derived data only: every row can be dropped at any time and is rebuilt by the next cold
read, so the table is unlogged (decision 0026): Postgres empties it after a crash. A
trigger on ``memories`` (migrations 0008, 0009) records in ``changed`` the memories a
write adds or changes, which a cold read then takes from their rows, and deletes the
snapshot when a memory is deleted or its text changes, so edited or erased
text never outlives its memory here.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import DateTime, ForeignKey, Integer, LargeBinary, String, func, text
from sqlalchemy.dialects.postgresql import ARRAY, UUID
from sqlalchemy.orm import Mapped, mapped_column

from tether.core.database import Base


class PartitionSnapshot(Base):
    """One relationship's active memories as the partition store's encoded index
    (records and BM25 postings, no vectors), built from rows read at ``built_at``."""

    __tablename__ = "recall_snapshots"
    # Derived data: not written to the WAL, emptied after a crash (migration 0015).
    __table_args__ = ({"prefixes": ["UNLOGGED"]},)

    relationship_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("relationships.id", ondelete="CASCADE"), primary_key=True
    )
    tenant_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("tenants.id", ondelete="CASCADE")
    )
    # The encoding and ranking parameters the body was built with; another is a miss.
    layout: Mapped[str] = mapped_column(String(64))
    memories: Mapped[int] = mapped_column(Integer)
    body: Mapped[bytes] = mapped_column(LargeBinary)
    built_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    # Memories written since it was built (appended by the trigger): read from their rows.
    changed: Mapped[list[uuid.UUID]] = mapped_column(
        ARRAY(UUID(as_uuid=True)), server_default=text("'{}'::uuid[]")
    )
