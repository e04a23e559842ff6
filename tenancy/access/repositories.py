"""SQL for tenants and API keys."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime

from sqlalchemy import delete, insert, select, text, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.policy_rules import PolicyRule
from tenancy.enums import PolicyEffect, Role
from tenancy.errors import TenantNameTaken
from tenancy.ids import ApiKeyId
from tenancy.models import ApiKey, Tenant, TenantPolicy
from tether.core.ids import TenantId


class TenantRepository:
    """Tenants are the root of isolation, so this repository alone is unscoped."""

    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def add(self, name: str, region: str, tenant_id: TenantId | None = None) -> Tenant:
        tenant = Tenant(name=name, region=region)
        if tenant_id is not None:
            tenant.id = tenant_id
        self._session.add(tenant)
        try:
            async with self._session.begin_nested():
                await self._session.flush()
        except IntegrityError as exc:
            raise TenantNameTaken(f"tenant {name!r} already exists") from exc
        return tenant

    async def get(self, tenant_id: TenantId) -> Tenant | None:
        return await self._session.get(Tenant, tenant_id)

    async def ids(self) -> list[TenantId]:
        """Every tenant's id, whatever the session is bound to: a system function of
        migration 0017, for maintenance that visits each tenant in turn."""
        found = await self._session.scalars(text("SELECT id FROM tether_tenant_ids() AS id"))
        return [TenantId(tenant_id) for tenant_id in found]


# Binds the transaction to the tenant of the key with this digest ("" if none), asking
# the one system function that looks across tenants for it (migration 0017).
_BIND_KEY_TENANT = text(
    "SELECT set_config('tether.tenant_id', coalesce(tether_key_tenant(:digest)::text, ''), true)"
)


class KeyLookupRepository:
    """Finds a key by its digest before the tenant is known (authentication only)."""

    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def find_active(self, key_digest: bytes) -> tuple[ApiKey, Tenant] | None:
        """The key and its tenant, read under row-level security once the transaction
        is bound to the tenant the digest belongs to."""
        tenant = await self._session.scalar(_BIND_KEY_TENANT, {"digest": key_digest})
        if not tenant:
            return None
        statement = (
            select(ApiKey, Tenant)
            .join(Tenant, Tenant.id == ApiKey.tenant_id)
            .where(ApiKey.key_hash == key_digest, ApiKey.revoked_at.is_(None))
        )
        row = (await self._session.execute(statement)).first()
        return None if row is None else (row[0], row[1])


class ApiKeyRepository:
    """API keys of one tenant."""

    def __init__(self, session: AsyncSession, tenant_id: TenantId) -> None:
        self._session = session
        self._tenant_id = tenant_id

    async def add(
        self, role: Role, subject: str | None, name: str, prefix: str, key_digest: bytes
    ) -> ApiKey:
        key = ApiKey(
            tenant_id=self._tenant_id,
            role=role,
            subject=subject,
            name=name,
            prefix=prefix,
            key_hash=key_digest,
        )
        self._session.add(key)
        await self._session.flush()
        return key

    async def get(self, key_id: ApiKeyId) -> ApiKey | None:
        statement = select(ApiKey).where(ApiKey.id == key_id, ApiKey.tenant_id == self._tenant_id)
        return (await self._session.execute(statement)).scalar_one_or_none()

    async def list(self) -> list[ApiKey]:
        statement = select(ApiKey).where(ApiKey.tenant_id == self._tenant_id).order_by(ApiKey.id)
        return list((await self._session.execute(statement)).scalars())

    async def revoke(self, key_id: uuid.UUID) -> bytes | None:
        """Mark a key revoked; returns its digest (to evict caches) or None if unknown."""
        statement = (
            update(ApiKey)
            .where(
                ApiKey.id == key_id,
                ApiKey.tenant_id == self._tenant_id,
                ApiKey.revoked_at.is_(None),
            )
            .values(revoked_at=datetime.now(UTC))
            .returning(ApiKey.key_hash)
        )
        return (await self._session.execute(statement)).scalar_one_or_none()


class TenantPolicyRepository:
    """The rules one tenant added on top of the file policy."""

    def __init__(self, session: AsyncSession, tenant_id: TenantId) -> None:
        self._session = session
        self._tenant_id = tenant_id

    async def rules(self) -> list[PolicyRule]:
        statement = select(
            TenantPolicy.role, TenantPolicy.object, TenantPolicy.action, TenantPolicy.effect
        ).where(TenantPolicy.tenant_id == self._tenant_id)
        return [
            PolicyRule(role.value, obj, action, effect.value)
            for role, obj, action, effect in await self._session.execute(statement)
        ]

    async def lock(self) -> None:
        """Serialise rule changes of this tenant until the transaction ends. (NO KEY
        UPDATE: rows that reference the tenant can still be inserted meanwhile.)"""
        statement = (
            select(Tenant.id).where(Tenant.id == self._tenant_id).with_for_update(key_share=True)
        )
        await self._session.execute(statement)

    async def replace(self, rules: Sequence[PolicyRule], actor_key_id: uuid.UUID | None) -> None:
        await self._session.execute(
            delete(TenantPolicy).where(TenantPolicy.tenant_id == self._tenant_id)
        )
        if not rules:
            return
        rows = [
            {
                "tenant_id": self._tenant_id,
                "role": Role(rule.role),
                "object": rule.object,
                "action": rule.action,
                "effect": PolicyEffect(rule.effect),
                "created_by_key_id": actor_key_id,
            }
            for rule in rules
        ]
        await self._session.execute(insert(TenantPolicy), rows)
