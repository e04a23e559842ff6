"""Partition snapshots: a large relationship's recall index, kept in Postgres so a cold
read decodes one value instead of indexing thousands of rows (decision 0011).

Derived data only: every row can be dropped at any time and is rebuilt by the next cold
read. A trigger on ``memories`` deletes a relationship's snapshot whenever a memory is
added, removed, or changes in anything but its recall statistics (migration 0008), so
erased text never outlives its memory here.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import DateTime, ForeignKey, Integer, LargeBinary, String, func
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.orm import Mapped, mapped_column

from tether.core.database import Base


class PartitionSnapshot(Base):
    """One relationship's active memories as the partition store's encoded index
    (records and BM25 postings, no vectors), built from rows read at ``built_at``."""

    __tablename__ = "recall_snapshots"

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
