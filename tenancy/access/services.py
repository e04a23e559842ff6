"""Tenant and API key management."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.repositories import ApiKeyRepository, TenantRepository
from tenancy.access.schemas import ApiKeyCreate, ApiKeyCreated, ApiKeyRead, TenantCreated
from tenancy.access.tokens import digest, display_prefix, generate_token
from tenancy.audit.log import SYSTEM, Actor, AuditLog
from tenancy.enums import Role
from tenancy.errors import ApiKeyNotFound
from tenancy.ids import ApiKeyId
from tenancy.models import ApiKey
from tether.core.ids import TenantId


def _read(key: ApiKey) -> ApiKeyRead:
    return ApiKeyRead(
        id=key.id,
        role=key.role,
        subject=key.subject,
        name=key.name,
        prefix=key.prefix,
        created_at=key.created_at,
        revoked_at=key.revoked_at,
    )


class ApiKeyService:
    """Issues and revokes a tenant's keys. The secret is returned once, stored hashed."""

    def __init__(self, session: AsyncSession, tenant_id: TenantId, actor: Actor = SYSTEM) -> None:
        self._keys = ApiKeyRepository(session, tenant_id)
        self._session = session
        self._tenant_id = tenant_id
        self._audit = AuditLog(session)
        self._actor = actor

    async def issue(self, data: ApiKeyCreate) -> ApiKeyCreated:
        token = generate_token()
        key = await self._keys.add(
            data.role, data.subject, data.name, display_prefix(token), digest(token)
        )
        await self._session.refresh(key)
        detail = {"key_id": str(key.id), "role": key.role.value, "subject": key.subject}
        await self._audit.record(
            self._tenant_id, self._actor, "key.issue", "api_key", detail=detail
        )
        return ApiKeyCreated(key=_read(key), token=token)

    async def list(self) -> list[ApiKeyRead]:
        return [_read(k) for k in await self._keys.list()]

    async def revoke(self, key_id: ApiKeyId) -> bytes:
        """Revoke a key; returns its digest so callers can evict caches."""
        revoked = await self._keys.revoke(key_id)
        if revoked is None:
            raise ApiKeyNotFound(f"no active API key {key_id}")
        detail = {"key_id": str(key_id)}
        await self._audit.record(
            self._tenant_id, self._actor, "key.revoke", "api_key", detail=detail
        )
        return revoked


class TenantService:
    """Creates tenants together with their first admin key (CLI only)."""

    def __init__(self, session: AsyncSession) -> None:
        self._session = session
        self._tenants = TenantRepository(session)

    async def create(
        self, name: str, region: str, tenant_id: TenantId | None = None
    ) -> TenantCreated:
        """Under row-level security the session must already be bound to
        ``tenant_id``, the new tenant's id (``tenant_sessions.tenant_transaction``)."""
        tenant = await self._tenants.add(name, region, tenant_id)
        created = await ApiKeyService(self._session, TenantId(tenant.id)).issue(
            ApiKeyCreate(role=Role.ADMIN, name="first admin key")
        )
        return TenantCreated(
            tenant_id=tenant.id,
            name=tenant.name,
            region=tenant.region,
            admin_key_id=created.key.id,
            admin_token=created.token,
        )
