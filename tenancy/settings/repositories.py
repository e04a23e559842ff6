"""Every SQL statement on tenant settings, bound to one tenant."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import ColumnElement, String, func, select
from sqlalchemy.ext.asyncio import AsyncSession

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
