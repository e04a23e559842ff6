"""Raw turns (hash-partitioned by relationship) and chat sessions."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import (
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Integer,
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


class Turn(Base):
    """One chat message after the privacy filter. The id is given when the API accepts
    it, so every path that stores it (worker, synchronous fallback, redelivery) writes
    the same row at most once."""

    __tablename__ = "turns"
    __table_args__ = (
        PrimaryKeyConstraint("relationship_id", "id"),
        Index(
            "uq_turns_idempotency_key",
            "relationship_id",
            "idempotency_key",
            unique=True,
            postgresql_where=text("idempotency_key IS NOT NULL"),
        ),
        Index("ix_turns_session", "relationship_id", "session_id", "id"),
        # Raw turns by age, for the retention sweep (decision 0046).
        Index("ix_turns_tenant_at", "tenant_id", "at"),
        partition_by_relationship(),
    )

    relationship_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("relationships.id", ondelete="CASCADE")
    )
    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    tenant_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("tenants.id", ondelete="CASCADE")
    )
    session_id: Mapped[str] = mapped_column(String(128))
    role: Mapped[str] = mapped_column(String(16))
    text: Mapped[str] = mapped_column(Text)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    masked: Mapped[list[str]] = mapped_column(ARRAY(String(32)), server_default="{}")
    idempotency_key: Mapped[str | None] = mapped_column(String(128))
    # False: captured with memory off (never extracted). None: before flags existed.
    memory_enabled: Mapped[bool | None] = mapped_column(Boolean)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class ChatSession(Base):
    """A session of one relationship: open until ended explicitly or by the idle sweep;
    ``extracted_at`` is set once its memories were extracted."""

    __tablename__ = "chat_sessions"
    __table_args__ = (
        PrimaryKeyConstraint("relationship_id", "session_id"),
        Index("ix_chat_sessions_open", "last_turn_at", postgresql_where=text("ended_at IS NULL")),
        Index(
            "ix_chat_sessions_pending",
            "ended_at",
            postgresql_where=text("ended_at IS NOT NULL AND extracted_at IS NULL"),
        ),
    )

    relationship_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("relationships.id", ondelete="CASCADE")
    )
    session_id: Mapped[str] = mapped_column(String(128))
    tenant_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("tenants.id", ondelete="CASCADE")
    )
    opened_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    last_turn_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    turn_count: Mapped[int] = mapped_column(Integer, server_default="0")
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    end_reason: Mapped[str | None] = mapped_column(String(16))
    extracted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # The session's agent flags; None inherits the persona's, then the tenant's.
    memory_enabled: Mapped[bool | None] = mapped_column(Boolean)
    knowledge_enabled: Mapped[bool | None] = mapped_column(Boolean)
