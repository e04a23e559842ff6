"""Where each tenant's retention sweep of one kind stands."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import BigInteger, DateTime, ForeignKey, Integer, String
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.orm import Mapped, mapped_column

from tether.core.database import Base


class RetentionRun(Base):
    """One row per tenant and kind (``raw_turns``, ``memories:<type>``): the cutoff of the
    run under way or last finished, and what it removed so far. A run whose
    ``finished_at`` is null is resumed with the same cutoff, so an interrupted sweep
    neither skips rows nor counts one twice (each batch and its progress commit together)."""

    __tablename__ = "retention_runs"

    tenant_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    kind: Mapped[str] = mapped_column(String(32), primary_key=True)
    cutoff: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    removed: Mapped[int] = mapped_column(BigInteger, server_default="0")
    batches: Mapped[int] = mapped_column(Integer, server_default="0")
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
