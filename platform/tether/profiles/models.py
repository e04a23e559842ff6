"""Global profile fields of a user and the history of the user's consent."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import Boolean, DateTime, ForeignKey, Index, PrimaryKeyConstraint, String, func
from sqlalchemy.dialects.postgresql import ARRAY, UUID
from sqlalchemy.orm import Mapped, mapped_column

from tether.core.database import Base


def _user_fk() -> Mapped[uuid.UUID]:
    return mapped_column(UUID(as_uuid=True), ForeignKey("global_users.id", ondelete="CASCADE"))


def _tenant_fk() -> Mapped[uuid.UUID]:
    return mapped_column(UUID(as_uuid=True), ForeignKey("tenants.id", ondelete="CASCADE"))


class GlobalProfileField(Base):
    """One stable, non-sensitive fact about the user across relationships (language,
    region, spending tier…), with the consent scope that covers it and where it came from."""

    __tablename__ = "global_profile_fields"
    __table_args__ = (PrimaryKeyConstraint("global_user_id", "field"),)

    global_user_id: Mapped[uuid.UUID] = _user_fk()
    field: Mapped[str] = mapped_column(String(64))
    tenant_id: Mapped[uuid.UUID] = _tenant_fk()
    value: Mapped[str] = mapped_column(String(512))
    scope: Mapped[str] = mapped_column(String(32))
    sensitivity: Mapped[str] = mapped_column(String(8))
    source_relationship_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class ConsentRecord(Base):
    """A consent decision of the user: the scopes granted from then on (append-only; the
    newest record is the consent in force)."""

    __tablename__ = "consent_records"
    __table_args__ = (Index("ix_consent_records_user", "global_user_id", "id"),)

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    global_user_id: Mapped[uuid.UUID] = _user_fk()
    tenant_id: Mapped[uuid.UUID] = _tenant_fk()
    scopes: Mapped[list[str]] = mapped_column(ARRAY(String(32)))
    source: Mapped[str] = mapped_column(String(128))
    withdrawn: Mapped[bool] = mapped_column(Boolean, server_default="false")
    actor_key_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
