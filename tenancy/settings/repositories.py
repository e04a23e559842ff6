"""Every SQL statement on tenant settings, bound to one tenant."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import ColumnElement, ScalarSelect, String, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.models import Tenant
from tenancy.settings.models import TenantSettingsVersion
from tether.core.ids import TenantId


class TenantSettingsRepository:
    def __init__(self, session: AsyncSession, tenant_id: TenantId) -> None:
        self._session = session
        self._tenant_id = tenant_id

    async def latest(self) -> TenantSettingsVersion | None:
        statement = (
            select(TenantSettingsVersion)
            .where(TenantSettingsVersion.tenant_id == self._tenant_id)
            .order_by(TenantSettingsVersion.version.desc())
            .limit(1)
        )
        return (await self._session.execute(statement)).scalar_one_or_none()

    async def append(
        self, version: int, document: dict[str, Any], actor_key_id: uuid.UUID | None
    ) -> TenantSettingsVersion:
        """Add a version (the primary key refuses a second writer of the same one)."""
        row = TenantSettingsVersion(
            tenant_id=self._tenant_id,
            version=version,
            document=document,
            actor_key_id=actor_key_id,
        )
        self._session.add(row)
        await self._session.flush()
        await self._session.refresh(row)
        return row

    async def mirror_session_defaults(self, memory: bool, knowledge: bool, keep: bool) -> None:
        """Keep the ``tenants`` columns that held the session defaults before decision
        0086 equal to the document, so the previous release (which reads them) agrees
        during a rolling upgrade or after a rollback. Dropped by a later contract."""
        await self._session.execute(
            update(Tenant)
            .where(Tenant.id == self._tenant_id)
            .values(
                session_memory_enabled=memory,
                session_knowledge_enabled=knowledge,
                keep_turns_without_memory=keep,
            )
        )


def default_privacy_mode(tenant_id: TenantId) -> ColumnElement[str]:
    """The privacy mode a new relationship of this tenant starts with, as SQL (its
    settings' ``privacy.default_mode``, else normal): evaluated inside the INSERT that
    creates the relationship, so creating one costs no extra round trip."""
    newest = (
        select(TenantSettingsVersion.document["privacy"]["default_mode"].astext)
        .where(TenantSettingsVersion.tenant_id == tenant_id)
        .order_by(TenantSettingsVersion.version.desc())
        .limit(1)
        .scalar_subquery()
    )
    return func.coalesce(newest, "normal", type_=String)


def sessions_section(tenant_id: uuid.UUID) -> ScalarSelect[Any]:
    """The ``sessions`` section of the tenant's newest settings version as SQL (JSONB,
    NULL when it has none): part of the one statement that reads a session's flag
    levels, so the tenant level is as fresh as the session's own (decision 0086)."""
    return (
        select(TenantSettingsVersion.document["sessions"])
        .where(TenantSettingsVersion.tenant_id == tenant_id)
        .order_by(TenantSettingsVersion.version.desc())
        .limit(1)
        .scalar_subquery()
    )
