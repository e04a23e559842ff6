"""SQL for tenants and API keys."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import cast

from sqlalchemy import (
    ColumnElement,
    DateTime,
    Table,
    Uuid,
    bindparam,
    delete,
    func,
    insert,
    literal,
    or_,
    select,
    text,
    tuple_,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.policy_rules import PolicyRule
from tenancy.enums import PolicyEffect, Role
from tenancy.errors import TenantNameTaken
from tenancy.ids import ApiKeyId
from tenancy.models import ApiKey, ApiKeySigning, Creator, Tenant, TenantPolicy
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

    async def set_disabled(self, tenant: Tenant, disabled: bool) -> bool:
        """Whether anything changed."""
        if (tenant.disabled_at is not None) == disabled:
            return False
        tenant.disabled_at = datetime.now(UTC) if disabled else None
        await self._session.flush()
        return True

    async def id_by_name(self, name: str) -> TenantId | None:
        """The id of the tenant named ``name``, whatever the session is bound to: a system
        function of migration 0018, for the operator's CLI."""
        found = await self._session.scalar(
            text("SELECT tether_tenant_by_name(:name)"), {"name": name}
        )
        return None if found is None else TenantId(found)

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
            .where(ApiKey.key_hash == key_digest, ApiKey.revoked_at.is_(None), _unexpired())
        )
        row = (await self._session.execute(statement)).first()
        return None if row is None else (row[0], row[1])


def _unexpired() -> ColumnElement[bool]:
    return or_(ApiKey.expires_at.is_(None), ApiKey.expires_at > func.now())


class SigningRepository:
    """The deployment's token signing secret (one row, made by migration 0018)."""

    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def get(self) -> ApiKeySigning:
        return (await self._session.execute(select(ApiKeySigning))).scalar_one()


class ApiKeyRepository:
    """API keys of one tenant."""

    def __init__(self, session: AsyncSession, tenant_id: TenantId) -> None:
        self._session = session
        self._tenant_id = tenant_id

    async def add(
        self,
        role: Role,
        subject: str | None,
        name: str,
        prefix: str,
        key_digest: bytes,
        expires_at: datetime | None = None,
    ) -> ApiKey:
        key = ApiKey(
            tenant_id=self._tenant_id,
            role=role,
            subject=subject,
            name=name,
            prefix=prefix,
            key_hash=key_digest,
            expires_at=expires_at,
        )
        self._session.add(key)
        await self._session.flush()
        return key

    async def creator_exists(self, external_id: str) -> bool:
        """Whether a creator key's subject names a creator of this tenant."""
        statement = select(Creator.id).where(
            Creator.tenant_id == self._tenant_id, Creator.external_id == external_id
        )
        return (await self._session.execute(statement.limit(1))).first() is not None

    async def get_active(self, key_id: ApiKeyId) -> ApiKey | None:
        """The key if it may still authenticate, locked until the transaction ends."""
        statement = (
            select(ApiKey)
            .where(
                ApiKey.id == key_id,
                ApiKey.tenant_id == self._tenant_id,
                ApiKey.revoked_at.is_(None),
                _unexpired(),
            )
            .with_for_update()
        )
        return (await self._session.execute(statement)).scalar_one_or_none()

    async def retire(self, key_id: uuid.UUID, replaced_by: uuid.UUID, until: datetime) -> ApiKey:
        """Mark a rotated key: it ends at ``until`` (or earlier, if it already did)."""
        statement = (
            update(ApiKey)
            .where(ApiKey.id == key_id, ApiKey.tenant_id == self._tenant_id)
            .values(
                replaced_by=replaced_by,
                expires_at=func.least(func.coalesce(ApiKey.expires_at, until), until),
            )
            .returning(ApiKey)
        )
        return (await self._session.execute(statement)).scalar_one()

    async def record_use(self, used: Sequence[tuple[uuid.UUID, datetime]]) -> None:
        """Write last-use times (one statement, run for each key); never moves one back."""
        table = cast(Table, ApiKey.__table__)
        statement = (
            update(table)
            .where(
                table.c.id == bindparam("key_id"),
                table.c.tenant_id == self._tenant_id,
                or_(table.c.last_used_at.is_(None), table.c.last_used_at < bindparam("at")),
            )
            .values(last_used_at=bindparam("at"))
        )
        await self._session.execute(statement, [{"key_id": k, "at": at} for k, at in used])

    async def get(self, key_id: ApiKeyId) -> ApiKey | None:
        statement = select(ApiKey).where(ApiKey.id == key_id, ApiKey.tenant_id == self._tenant_id)
        return (await self._session.execute(statement)).scalar_one_or_none()

    async def page(self, after: tuple[datetime, uuid.UUID] | None, limit: int) -> list[ApiKey]:
        """Up to ``limit`` keys after ``after``, oldest first: by creation time, then id
        (keys made in one transaction share their time)."""
        statement = select(ApiKey).where(ApiKey.tenant_id == self._tenant_id)
        if after is not None:
            at, key_id = after
            position = tuple_(literal(at, DateTime(timezone=True)), literal(key_id, Uuid()))
            statement = statement.where(tuple_(ApiKey.created_at, ApiKey.id) > position)
        statement = statement.order_by(ApiKey.created_at, ApiKey.id).limit(limit)
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
