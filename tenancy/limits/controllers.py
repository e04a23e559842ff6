"""GET/PUT /v1/tenant/limits: a tenant's rate limits and quotas (admin)."""

from __future__ import annotations

from litestar import Controller, Request, get, put
from litestar.di import NamedDependency, Provide
from litestar.params import JSONBody
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.guard import policy
from tenancy.access.principal import Principal
from tenancy.audit.log import Actor
from tenancy.limits.cache import TenantLimitsCache
from tenancy.limits.schemas import TenantLimitsRead, TenantLimitsUpdate
from tenancy.limits.services import TenantLimitsService
from tether.core.settings import Settings


def provide_tenant_limits_service(
    db_session: NamedDependency[AsyncSession],
    principal: NamedDependency[Principal],
    settings: NamedDependency[Settings],
) -> TenantLimitsService:
    return TenantLimitsService(
        db_session, principal.tenant_id, settings.limits, Actor.of(principal)
    )


Limits = NamedDependency[TenantLimitsService]


class TenantLimitsController(Controller):
    path = "/v1/tenant/limits"
    tags = ["limits"]  # noqa: RUF012
    dependencies = {  # noqa: RUF012
        "tenant_limits_service": Provide(provide_tenant_limits_service, sync_to_thread=False)
    }

    @get(operation_id="GetTenantLimits", opt=policy("tenant_settings", "read"))
    async def get_limits(self, tenant_limits_service: Limits) -> TenantLimitsRead:
        """Each limit in force, the most this tenant is allowed, and what it chose."""
        return await tenant_limits_service.get()

    @put(operation_id="PutTenantLimits", opt=policy("tenant_settings", "write"))
    async def put_limits(
        self,
        data: JSONBody[TenantLimitsUpdate],
        tenant_limits_service: Limits,
        principal: NamedDependency[Principal],
        request: Request,  # type: ignore[type-arg]
    ) -> TenantLimitsRead:
        """Replace the tenant's own limits (each at most its allowance; null: the
        allowance). This process applies them at once, others within
        ``TETHER_IDENTITY__TENANT_SETTINGS_TTL_SECONDS``."""
        answer = await tenant_limits_service.choose(data)
        cache: TenantLimitsCache = request.app.state.tenant_limits
        cache.forget(principal.tenant_id)
        return answer
