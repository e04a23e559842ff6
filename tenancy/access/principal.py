"""The authenticated caller, derived from its API key (never from a request body)."""

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
