"""GET /v1/tenant/retention-runs: the retention sweep's progress (admin)."""

from __future__ import annotations

from litestar import Controller, get
from litestar.di import NamedDependency
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.guard import policy
from tenancy.access.principal import Principal
from tether.retention.schemas import RetentionRunList
from tether.retention.services import RetentionRunService


class RetentionRunController(Controller):
    path = "/v1/tenant/retention-runs"
    tags = ["tenant"]  # noqa: RUF012

    @get(operation_id="ListRetentionRuns", opt=policy("tenant_settings", "read"))
    async def runs(
        self, db_session: NamedDependency[AsyncSession], principal: NamedDependency[Principal]
    ) -> RetentionRunList:
        """Each retention kind's last run: its cutoff, what it removed, in how many
        batches, and whether it finished (what it removed is also audited)."""
        return await RetentionRunService(db_session, principal.tenant_id).runs()
