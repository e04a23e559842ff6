"""A tenant's settings, one row per version (the newest is in force)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import DateTime, ForeignKey, Index, Integer, String, Text, func
from sqlalchemy.dialects.postgresql import JSONB, UUID
from sqlalchemy.orm import Mapped, mapped_column

from tether.core.database import Base
from tether.core.ids import new_id


class TenantSettingsVersion(Base):
    __tablename__ = "tenant_settings"

    tenant_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    document: Mapped[dict[str, Any]] = mapped_column(JSONB)
    actor_key_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class ReembedRun(Base):
    """One re-embed of a tenant's memories and knowledge chunks, started by a change of
    its settings' embedding section (decision 0079). Written in the transaction of that
    change, so a run is never lost; a later change supersedes a run not yet done."""

    __tablename__ = "reembed_runs"
    __table_args__ = (Index("ix_reembed_runs_tenant_created", "tenant_id", "created_at"),)

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True, default=new_id)
    tenant_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("tenants.id", ondelete="CASCADE")
    )
    settings_version: Mapped[int] = mapped_column(Integer)
    # The provider chosen (null: the deployment's model); the model and its dimension
    # are recorded when the run starts.
    provider: Mapped[str | None] = mapped_column(String(64))
    model: Mapped[str | None] = mapped_column(String(64))
    dimension: Mapped[int | None] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16), server_default="pending")
    memories_total: Mapped[int] = mapped_column(Integer, server_default="0")
    memories_done: Mapped[int] = mapped_column(Integer, server_default="0")
    chunks_total: Mapped[int] = mapped_column(Integer, server_default="0")
    chunks_done: Mapped[int] = mapped_column(Integer, server_default="0")
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    updated_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
