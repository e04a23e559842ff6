"""API shapes for tenants and keys."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

import msgspec

from tenancy.access.policy_rules import MAX_TENANT_RULES, PolicyAction
from tenancy.enums import PolicyEffect, Role
from tether.core.text import Label, Name, items

Moment = Annotated[datetime, msgspec.Meta(tz=True)]
MAX_OVERLAP_SECONDS = 30 * 24 * 3600


class ApiKeyCreate(msgspec.Struct, forbid_unknown_fields=True):
    role: Role
    # creator keys: an existing creator's external id; operator keys: the pool operator
    # id; other roles have none.
    subject: Name | None = None
    name: Label = ""
    # When the key stops working (in the future, with a time zone); none: never.
    expires_at: Moment | None = None


class ApiKeyRotate(msgspec.Struct, forbid_unknown_fields=True):
    # How long the old token keeps working (default TETHER_ACCESS__ROTATION_OVERLAP_SECONDS).
    overlap_seconds: Annotated[int, msgspec.Meta(ge=0, le=MAX_OVERLAP_SECONDS)] | None = None
    # The new key's end; none: as long after now as the old key had from its creation.
    expires_at: Moment | None = None


class ApiKeyRead(msgspec.Struct):
    id: uuid.UUID
    role: Role
    subject: str | None
    name: str
    prefix: str
    created_at: datetime
    revoked_at: datetime | None
    expires_at: datetime | None = None
    last_used_at: datetime | None = None
    # The key a rotation replaced this one with (it works until ``expires_at``).
    replaced_by: uuid.UUID | None = None
    # False for keys issued before tokens were signed: rotate them (decision 0035).
    signed: bool = True


class ApiKeyPage(msgspec.Struct):
    items: list[ApiKeyRead]
    next_cursor: str | None


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
    # "file" (the versioned policy) or "tenant" (a rule of the caller's tenant); null
    # when no rule matched (denied by default).
    source: Literal["file", "tenant"] | None = None


class TenantPolicyRule(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """One rule a tenant adds on top of the file policy (deny beats allow)."""

    role: Role
    object: PolicyName
    action: PolicyAction
    effect: PolicyEffect


class TenantPolicyRules(msgspec.Struct, forbid_unknown_fields=True):
    """A tenant's whole rule set (PUT replaces it)."""

    rules: Annotated[list[TenantPolicyRule], items(MAX_TENANT_RULES)]
