"""API shapes of relationships and ownership events."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated

import msgspec

from tenancy.enums import OperatorKind, PrivacyMode
from tenancy.resolve.schemas import ExternalId
from tenancy.settings.schemas import LayerName
from tether.core.text import text


class RelationshipRead(msgspec.Struct):
    id: uuid.UUID
    global_user_id: uuid.UUID
    user_facet_id: uuid.UUID
    creator_persona_id: uuid.UUID
    creator_id: uuid.UUID
    operator_kind: OperatorKind
    operator_id: str
    ownership_changed_at: datetime
    privacy_mode: PrivacyMode
    last_active_at: datetime | None
    created_at: datetime
    last_user_turn_at: datetime | None = None
    creator_replied_at: datetime | None = None
    pool_layers: list[str] | None = None


class RelationshipPage(msgspec.Struct):
    items: list[RelationshipRead]
    next_cursor: str | None


class RelationshipUpdate(msgspec.Struct, forbid_unknown_fields=True):
    privacy_mode: PrivacyMode


class OperatorRef(msgspec.Struct, forbid_unknown_fields=True):
    kind: OperatorKind
    id: ExternalId


class TransferRequest(msgspec.Struct, forbid_unknown_fields=True):
    to: OperatorRef
    reason: Annotated[str, text(1000)] = ""


class OwnershipEventRead(msgspec.Struct):
    id: uuid.UUID
    relationship_id: uuid.UUID
    from_kind: OperatorKind
    from_id: str
    to_kind: OperatorKind
    to_id: str
    reason: str
    actor_key_id: uuid.UUID | None
    created_at: datetime


class OwnershipEventPage(msgspec.Struct):
    items: list[OwnershipEventRead]
    next_cursor: str | None


class PoolInheritance(msgspec.Struct, forbid_unknown_fields=True):
    """The memory layers a pool operator inherits in this relationship (null: the
    tenant's ``ownership.pool_inherits_layers``). Private notes are never inherited."""

    layers: Annotated[list[LayerName], msgspec.Meta(max_length=3)] | None
