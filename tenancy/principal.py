"""The authenticated caller, derived from its API key (never from a request body): a
value every layer of the identity plane may hold (the access guard decides on it, the
audit log records it)."""

from __future__ import annotations

from dataclasses import dataclass

from tenancy.enums import Role
from tenancy.ids import ApiKeyId
from tether.core.ids import TenantId


@dataclass(frozen=True, slots=True)
class Principal:
    key_id: ApiKeyId
    tenant_id: TenantId
    role: Role
    subject: str | None
    region: str
