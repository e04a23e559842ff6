"""SQLAlchemy models of the identity plane. Every table carries ``tenant_id`` and every
unique key includes it, so one tenant's identifiers never collide with another's."""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum

from sqlalchemy import (
    Boolean,
    DateTime,
    Enum,
    ForeignKey,
    Index,
    LargeBinary,
    SmallInteger,
    String,
    Text,
    UniqueConstraint,
    false,
    func,
    text,
    true,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, UUID
from sqlalchemy.orm import Mapped, mapped_column

from tenancy.enums import OperatorKind, PolicyEffect, PrivacyMode, Role
from tether.core.database import Base, TenantOwned
from tether.core.ids import new_id


def _enum(kind: type[StrEnum], name: str) -> Enum:
    return Enum(
        kind,
        name=name,
        native_enum=False,
        create_constraint=True,
        length=16,
        values_callable=lambda members: [m.value for m in members],
    )


def _pk() -> Mapped[uuid.UUID]:
    return mapped_column(UUID(as_uuid=True), primary_key=True, default=new_id)


def _created() -> Mapped[datetime]:
    return mapped_column(DateTime(timezone=True), server_default=func.now())


class Tenant(Base):
    __tablename__ = "tenants"

    id: Mapped[uuid.UUID] = _pk()
    name: Mapped[str] = mapped_column(String(128), unique=True)
    region: Mapped[str] = mapped_column(String(64))
    # The tenant's own privacy patterns: [[tag, regex], ...] (see docs/privacy-filter.md).
    privacy_patterns: Mapped[list[list[str]]] = mapped_column(JSONB, server_default="[]")
    # Whether knowledge-base documents pass the privacy filter when they are indexed.
    privacy_filter_documents: Mapped[bool] = mapped_column(Boolean, server_default=false())
    # Session agent flags' defaults (decision 0051), and whether turns captured with
    # memory off are stored at all.
    session_memory_enabled: Mapped[bool] = mapped_column(Boolean, server_default=true())
    session_knowledge_enabled: Mapped[bool] = mapped_column(Boolean, server_default=false())
    keep_turns_without_memory: Mapped[bool] = mapped_column(Boolean, server_default=true())
    created_at: Mapped[datetime] = _created()
    # Set by the operator (`tether tenant disable`): its keys are refused with a 403.
    disabled_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class ApiKey(TenantOwned, Base):
    __tablename__ = "api_keys"

    role: Mapped[Role] = mapped_column(_enum(Role, "api_key_role"))
    subject: Mapped[str | None] = mapped_column(String(128))
    name: Mapped[str] = mapped_column(String(128), default="")
    prefix: Mapped[str] = mapped_column(String(16))
    key_hash: Mapped[bytes] = mapped_column(LargeBinary(32), unique=True)
    created_at: Mapped[datetime] = _created()
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # Lifecycle (decision 0036): an optional end, the last use (written at most once a
    # minute per process), the key a rotation replaced this one with, and whether the
    # token carries a signature (keys issued before 0018 do not).
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    replaced_by: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    signed: Mapped[bool] = mapped_column(Boolean, default=True, server_default="false")

    __table_args__ = (Index("ix_api_keys_tenant_id", "tenant_id"),)


class ApiKeySigning(Base):
    """The one row holding the secret that signs API tokens, so a forged token is refused
    without a query (decision 0035). It proves nothing about a key: the digest does."""

    __tablename__ = "api_key_signing"

    id: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    secret: Mapped[bytes] = mapped_column(LargeBinary(32))
    # Whether keys without a signature existed when signing began (they are then looked
    # up in Postgres like before).
    legacy_tokens: Mapped[bool] = mapped_column(Boolean)


class TenantPolicy(TenantOwned, Base):
    """One rule a tenant added on top of the versioned file policy (``policies/``)."""

    __tablename__ = "tenant_policies"

    role: Mapped[Role] = mapped_column(_enum(Role, "tenant_policy_role"))
    object: Mapped[str] = mapped_column(String(64))
    action: Mapped[str] = mapped_column(String(16))
    effect: Mapped[PolicyEffect] = mapped_column(_enum(PolicyEffect, "tenant_policy_effect"))
    created_by_key_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))

    __table_args__ = (UniqueConstraint("tenant_id", "role", "object", "action", "effect"),)


class GlobalUser(TenantOwned, Base):
    __tablename__ = "global_users"

    external_id: Mapped[str] = mapped_column(String(512))

    __table_args__ = (UniqueConstraint("tenant_id", "external_id"),)


class UserFacet(TenantOwned, Base):
    __tablename__ = "user_facets"

    global_user_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("global_users.id", ondelete="CASCADE")
    )
    name: Mapped[str] = mapped_column(String(512))

    __table_args__ = (UniqueConstraint("tenant_id", "global_user_id", "name"),)


class Creator(TenantOwned, Base):
    __tablename__ = "creators"

    external_id: Mapped[str] = mapped_column(String(512))
    display_name: Mapped[str] = mapped_column(String(256), default="")

    __table_args__ = (UniqueConstraint("tenant_id", "external_id"),)


class CreatorPersona(TenantOwned, Base):
    __tablename__ = "creator_personas"

    creator_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("creators.id", ondelete="CASCADE")
    )
    external_id: Mapped[str] = mapped_column(String(512))
    display_name: Mapped[str] = mapped_column(String(256), default="")
    # The persona's session flags; None inherits the tenant's (decision 0051).
    memory_enabled: Mapped[bool | None] = mapped_column(Boolean)
    knowledge_enabled: Mapped[bool | None] = mapped_column(Boolean)

    __table_args__ = (UniqueConstraint("tenant_id", "creator_id", "external_id"),)


class Relationship(TenantOwned, Base):
    """The unit of isolation: one user facet talking to one creator persona.

    ``global_user_id`` and ``creator_id`` are denormalised from the facet and persona so
    that "all relationships of a user/creator" is one index scan.
    """

    __tablename__ = "relationships"

    user_facet_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("user_facets.id", ondelete="CASCADE")
    )
    creator_persona_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("creator_personas.id", ondelete="CASCADE")
    )
    global_user_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("global_users.id", ondelete="CASCADE")
    )
    creator_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("creators.id", ondelete="CASCADE")
    )
    operator_kind: Mapped[OperatorKind] = mapped_column(
        _enum(OperatorKind, "operator_kind"), default=OperatorKind.CREATOR
    )
    operator_id: Mapped[str] = mapped_column(String(512))
    ownership_changed_at: Mapped[datetime] = _created()
    privacy_mode: Mapped[PrivacyMode] = mapped_column(
        _enum(PrivacyMode, "privacy_mode"), default=PrivacyMode.NORMAL
    )
    last_active_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # The ownership lifecycle (decision 0047): the user's latest turn and the creator's
    # latest reply (an assistant turn while the creator operates it, or a turn sent with
    # the creator's own key); the layers a pool operator inherits (null: the tenant's).
    last_user_turn_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    creator_replied_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    pool_layers: Mapped[list[str] | None] = mapped_column(ARRAY(String(16)))

    __table_args__ = (
        UniqueConstraint("tenant_id", "user_facet_id", "creator_persona_id"),
        Index("ix_relationships_tenant_user", "tenant_id", "global_user_id"),
        Index("ix_relationships_tenant_persona", "tenant_id", "creator_persona_id"),
        Index("ix_relationships_tenant_creator", "tenant_id", "creator_id"),
        Index(
            "ix_relationships_creator_silence",
            "tenant_id",
            "last_user_turn_at",
            postgresql_where=text("operator_kind = 'creator'"),
        ),
    )


class OwnershipEvent(TenantOwned, Base):
    """One change of who operates a relationship. Memory does not move with it."""

    __tablename__ = "ownership_events"

    relationship_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("relationships.id", ondelete="CASCADE")
    )
    from_kind: Mapped[OperatorKind] = mapped_column(_enum(OperatorKind, "operator_kind_from"))
    from_id: Mapped[str] = mapped_column(String(512))
    to_kind: Mapped[OperatorKind] = mapped_column(_enum(OperatorKind, "operator_kind_to"))
    to_id: Mapped[str] = mapped_column(String(512))
    reason: Mapped[str] = mapped_column(Text, default="")
    actor_key_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))

    __table_args__ = (
        Index("ix_ownership_events_relationship", "tenant_id", "relationship_id", "created_at"),
    )


class ErasureTombstone(Base):
    """A relationship of an erased user (ids and a time only): a worker that finds one
    for the relationship it is about to write to writes nothing (decision 0046)."""

    __tablename__ = "erasure_tombstones"

    tenant_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    relationship_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    created_at: Mapped[datetime] = _created()
