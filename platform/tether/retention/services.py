"""Where a tenant's retention sweeps stand."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from tether.core.ids import TenantId
from tether.retention.models import RetentionRun
from tether.retention.schemas import RetentionRunList, RetentionRunRead


class RetentionRunService:
    def __init__(self, session: AsyncSession, tenant_id: TenantId) -> None:
        self._session = session
        self._tenant_id = tenant_id

    async def runs(self) -> RetentionRunList:
        """Each kind's run under way or last finished (a null ``finished_at``: under way,
        or interrupted and resumed at the next sweep)."""
        statement = (
            select(RetentionRun)
            .where(RetentionRun.tenant_id == self._tenant_id)
            .order_by(RetentionRun.kind)
        )
        rows = (await self._session.execute(statement)).scalars()
        return RetentionRunList(
            [
                RetentionRunRead(
                    r.kind,
                    r.cutoff,
                    r.removed,
                    r.batches,
                    r.started_at,
                    r.updated_at,
                    r.finished_at,
                )
                for r in rows
            ]
        )
