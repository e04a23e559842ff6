"""Persona profiles are append-only: every edit is a new row with the next version, so
the history is the table itself and the unique key serialises concurrent editors."""

from __future__ import annotations

import uuid

from sqlalchemy import ForeignKey, Integer, Text, UniqueConstraint
from sqlalchemy.dialects.postgresql import JSONB, UUID
from sqlalchemy.orm import Mapped, mapped_column

from tether.core.database import Base, TenantOwned


class PersonaProfileVersion(TenantOwned, Base):
    __tablename__ = "persona_profile_versions"

    creator_persona_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("creator_personas.id", ondelete="CASCADE")
    )
    version: Mapped[int] = mapped_column(Integer)
    background: Mapped[str] = mapped_column(Text, default="")
    tone: Mapped[str] = mapped_column(Text, default="")
    taboos: Mapped[list[str]] = mapped_column(JSONB, default=list)
    scripts: Mapped[list[str]] = mapped_column(JSONB, default=list)
    notes: Mapped[str] = mapped_column(Text, default="")
    edited_by_key_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))

    __table_args__ = (UniqueConstraint("tenant_id", "creator_persona_id", "version"),)
