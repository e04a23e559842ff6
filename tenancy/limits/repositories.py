"""SQL for the tenant_limits table (one tenant's row)."""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.limits.models import TenantLimitsRow
from tenancy.models import Tenant
from tether.core.ids import TenantId


class TenantLimitsRepository:
    def __init__(self, session: AsyncSession, tenant_id: TenantId) -> None:
        self._session = session
        self._tenant_id = tenant_id

    async def get(self, *, lock: bool = False) -> TenantLimitsRow | None:
        statement = select(TenantLimitsRow).where(TenantLimitsRow.tenant_id == self._tenant_id)
        if lock:
            # Serialise changes of this tenant's limits (the row may not exist yet).
            await self._session.execute(
                select(Tenant.id)
                .where(Tenant.id == self._tenant_id)
                .with_for_update(key_share=True)
            )
        return (await self._session.execute(statement)).scalar_one_or_none()

    async def save(
        self,
        *,
        chosen: Mapping[str, int] | None = None,
        allowance: Mapping[str, int] | None = None,
    ) -> None:
        """Replace the tenant's choice or the operator's allowance (or both)."""
        values: dict[str, object] = {}
        if chosen is not None:
            values["chosen"] = dict(chosen)
        if allowance is not None:
            values["allowance"] = dict(allowance)
        statement = insert(TenantLimitsRow).values(tenant_id=self._tenant_id, **values)
        await self._session.execute(
            statement.on_conflict_do_update(
                index_elements=[TenantLimitsRow.tenant_id],
                set_={**values, "updated_at": func.now()},
            )
        )
