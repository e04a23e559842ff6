"""Audit events and the per-tenant head of their hash chain.

Rows are never updated or deleted: a trigger refuses it and the application role is
granted only INSERT and SELECT (migration 0005). Events carry ids and decisions, never
content, so erasing a user's data never needs to touch the audit log.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    DateTime,
    ForeignKey,
    Index,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, UUID
from sqlalchemy.orm import Mapped, mapped_column

from tether.core.database import Base


class AuditEvent(Base):
    __tablename__ = "audit_events"
    __table_args__ = (
        UniqueConstraint("tenant_id", "seq"),
        Index("ix_audit_events_tenant_at", "tenant_id", "at"),
    )

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    tenant_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("tenants.id", ondelete="RESTRICT")
    )
    seq: Mapped[int] = mapped_column(BigInteger)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    actor_key_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    actor_role: Mapped[str | None] = mapped_column(String(16))
    actor_subject: Mapped[str | None] = mapped_column(String(128))
    action: Mapped[str] = mapped_column(String(32))
    object: Mapped[str] = mapped_column(String(64))
    decision: Mapped[str] = mapped_column(String(8))
    matched_rule: Mapped[str | None] = mapped_column(Text)
    relationship_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    global_user_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    request_id: Mapped[str | None] = mapped_column(String(64))
    detail: Mapped[dict[str, Any]] = mapped_column(JSONB)
    prev_hash: Mapped[str] = mapped_column(String(64))
    hash: Mapped[str] = mapped_column(String(64))


class AuditChainHead(Base):
    """The last link of a tenant's chain; locked while an event is appended."""

    __tablename__ = "audit_chain_heads"

    tenant_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("tenants.id", ondelete="RESTRICT"), primary_key=True
    )
    seq: Mapped[int] = mapped_column(BigInteger)
    hash: Mapped[str] = mapped_column(String(64))
    # The first sequence number whose hash is keyed (HMAC); earlier ones are legacy
    # SHA-256 links made before migration 0022.
    keyed_from: Mapped[int] = mapped_column(BigInteger, server_default=text("1"))


class AuditAccessEvent(Base):
    """One read of relationship content: who, which relationship (and global user), which
    memories it returned or injected, why. Appended without a lock; the sealer sets
    ``sealed_seq`` once, to the chain event whose Merkle root covers it (a trigger
    refuses every other change, and deletion)."""

    __tablename__ = "audit_access_events"
    __table_args__ = (
        Index("ix_audit_access_events_user", "tenant_id", "global_user_id", "id"),
        Index("ix_audit_access_events_relationship", "tenant_id", "relationship_id", "id"),
        Index(
            "ix_audit_access_events_unsealed",
            "tenant_id",
            "id",
            postgresql_where=text("sealed_seq IS NULL"),
        ),
        Index("ix_audit_access_events_sealed", "tenant_id", "sealed_seq"),
    )

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    tenant_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("tenants.id", ondelete="RESTRICT")
    )
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    actor_key_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    actor_role: Mapped[str | None] = mapped_column(String(16))
    actor_subject: Mapped[str | None] = mapped_column(String(128))
    purpose: Mapped[str] = mapped_column(String(32))
    relationship_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    global_user_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    request_id: Mapped[str | None] = mapped_column(String(64))
    memory_ids: Mapped[list[uuid.UUID]] = mapped_column(ARRAY(UUID(as_uuid=True)))
    sealed_seq: Mapped[int | None] = mapped_column(BigInteger)


class _SignedChainPoint:
    """A signed point of a tenant's chain: its sequence number and hash, how far back
    the chain is keyed, and the signatures. The HMAC under the tenant's checkpoint key:
    rows from before migration 0029 have only this ("hmac-sha256"); later rows
    ("ed25519") keep it for a previous release still running, and carry the Ed25519
    signature that counts in ``public_signature`` with its key's fingerprint (decision
    0073)."""

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    tenant_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("tenants.id", ondelete="RESTRICT")
    )
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    seq: Mapped[int] = mapped_column(BigInteger)
    hash: Mapped[str] = mapped_column(String(64))
    keyed_from: Mapped[int] = mapped_column(BigInteger)
    signature: Mapped[str] = mapped_column(String(64))
    algorithm: Mapped[str] = mapped_column(String(32), server_default="hmac-sha256")
    key_id: Mapped[str | None] = mapped_column(String(48))
    public_signature: Mapped[str | None] = mapped_column(String(128))


class AuditCheckpoint(_SignedChainPoint, Base):
    """A signed copy of a tenant's chain head at one moment, kept (append-only) and
    exported so that a later truncation of the chain's tail shows."""

    __tablename__ = "audit_checkpoints"
    __table_args__ = (Index("ix_audit_checkpoints_tenant_seq", "tenant_id", "seq"),)


class AuditAnchor(_SignedChainPoint, Base):
    """Where a tenant's chain starts after audit retention removed its oldest events:
    the sequence number and hash of the last removed link, signed (decision 0072).
    Append-only; a trigger lets an audit event (or a sealed access event) be deleted only
    at or below an anchor's ``seq``, and verification starts from the latest anchor."""

    __tablename__ = "audit_anchors"
    __table_args__ = (Index("ix_audit_anchors_tenant_seq", "tenant_id", "seq"),)

    # The retention run that removed up to here: its kind and its cutoff.
    run: Mapped[str] = mapped_column(String(96))
    cutoff: Mapped[datetime] = mapped_column(DateTime(timezone=True))
