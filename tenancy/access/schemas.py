"""API shapes for tenants and keys."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated

import msgspec

from tenancy.enums import Role

Name = Annotated[str, msgspec.Meta(min_length=1, max_length=128, pattern=r"^[^\x00-\x1f\x7f]+$")]


class ApiKeyCreate(msgspec.Struct, forbid_unknown_fields=True):
    role: Role
    subject: Name | None = None
    name: Annotated[str, msgspec.Meta(max_length=128, pattern=r"^[^\x00-\x1f\x7f]*$")] = ""


class ApiKeyRead(msgspec.Struct):
    id: uuid.UUID
    role: Role
    subject: str | None
    name: str
    prefix: str
    created_at: datetime
    revoked_at: datetime | None


class ApiKeyCreated(msgspec.Struct):
    """The only answer that ever carries the secret."""

    key: ApiKeyRead
    token: str


class TenantCreated(msgspec.Struct):
    tenant_id: uuid.UUID
    name: str
    region: str
    admin_key_id: uuid.UUID
    admin_token: str


PolicyName = Annotated[str, msgspec.Meta(min_length=1, max_length=64, pattern=r"^[a-z_:*]+$")]


class PolicyCheck(msgspec.Struct, forbid_unknown_fields=True):
    role: Role
    object: PolicyName
    action: PolicyName


class PolicyDecision(msgspec.Struct):
    allowed: bool
    matched_rule: list[str] | None
    explanation: str
