"""GET/PUT /v1/tenant/settings: the tenant's own settings (admin)."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, Response, get, put
from litestar.datastructures import State
from litestar.di import NamedDependency, Provide
from litestar.params import FromQuery, JSONBody
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.guard import policy
from tenancy.access.principal import Principal
from tenancy.audit.log import Actor
from tenancy.settings.cache import TenantSettingsCache
from tenancy.settings.schemas import ReembedRunList, TenantSettingsRead, TenantSettingsWrite
from tenancy.settings.services import TenantSettingsService, etag
from tether.core.ids import TenantId
from tether.core.pagination import DEFAULT_LIMIT, Limit
from tether.core.resources import Resources
from tether.core.settings import Settings
from tether.core.text import header, printable


def provide_tenant_settings_service(
    db_session: NamedDependency[AsyncSession],
    principal: NamedDependency[Principal],
    settings: NamedDependency[Settings],
    resources: NamedDependency[Resources],
) -> TenantSettingsService:
    return TenantSettingsService(
        db_session, TenantId(principal.tenant_id), Actor.of(principal), settings, resources.tasks
    )


TenantSettings = NamedDependency[TenantSettingsService]


class TenantSettingsController(Controller):
    path = "/v1/tenant/settings"
    tags = ["tenant"]  # noqa: RUF012
    dependencies = {  # noqa: RUF012
        "tenant_settings_service": Provide(provide_tenant_settings_service, sync_to_thread=False)
    }

    @get(operation_id="GetTenantSettings", opt=policy("tenant_settings", "read"))
    async def get_settings(
        self, tenant_settings_service: TenantSettings
    ) -> Response[TenantSettingsRead]:
        """The settings in force (retention, ownership, context, knowledge, extraction,
        privacy, embedding; and the limits of /v1/tenant/limits, read only); the ETag is
        what a PUT sends."""
        current = await tenant_settings_service.get()
        return Response(current, headers={"ETag": etag(current.version)})

    @put(operation_id="PutTenantSettings", opt=policy("tenant_settings", "write"))
    async def put_settings(
        self,
        data: JSONBody[TenantSettingsWrite],
        tenant_settings_service: TenantSettings,
        state: State,
        principal: NamedDependency[Principal],
        if_match: Annotated[str | None, header(printable(64), "If-Match")] = None,
    ) -> Response[TenantSettingsRead]:
        """Replace the settings as a new version (412 if they changed since you read
        them). Workers and other processes apply them within
        ``TETHER_IDENTITY__TENANT_SETTINGS_TTL_SECONDS``. Audited."""
        written = await tenant_settings_service.put(data, if_match)
        cache: TenantSettingsCache | None = getattr(state, "tenant_settings", None)
        if cache is not None:  # this process applies them at once
            cache.forget(TenantId(principal.tenant_id))
        return Response(written, headers={"ETag": etag(written.version)})


class ReembedRunController(Controller):
    path = "/v1/tenant/reembed-runs"
    tags = ["tenant"]  # noqa: RUF012
    dependencies = {  # noqa: RUF012
        "tenant_settings_service": Provide(provide_tenant_settings_service, sync_to_thread=False)
    }

    @get(operation_id="ListReembedRuns", opt=policy("tenant_settings", "read"))
    async def runs(
        self, tenant_settings_service: TenantSettings, limit: FromQuery[Limit] = DEFAULT_LIMIT
    ) -> ReembedRunList:
        """The re-embeds a change of the embedding model started: status, model, and
        memories and knowledge chunks done of total (decision 0079)."""
        return await tenant_settings_service.reembed_runs(limit)
