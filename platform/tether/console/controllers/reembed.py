"""Tenant admin: the re-embed runs a change of the embedding model started, through the
service behind ``GET /v1/tenant/reembed-runs`` (decision 0079)."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, get
from litestar.di import NamedDependency, Provide
from litestar.response import Template

from tenancy.access.guard import policy
from tenancy.settings.controllers import provide_tenant_settings_service
from tenancy.settings.services import TenantSettingsService
from tether.console.pages import render

AnyRequest = Request[Any, Any, Any]
# The most recent runs: one per change of the embedding model, so a few a year.
RECENT = 50


class ReembedPages(Controller):
    path = "/admin/reembed-runs"
    dependencies = {  # noqa: RUF012
        "tenant_settings_service": Provide(provide_tenant_settings_service, sync_to_thread=False)
    }

    @get("/", opt=policy("tenant_settings", "read"))
    async def runs(
        self,
        request: AnyRequest,
        tenant_settings_service: NamedDependency[TenantSettingsService],
    ) -> Template:
        """Each re-embed run, newest first: the model it moves to, status, progress."""
        runs = await tenant_settings_service.reembed_runs(RECENT)
        return render(request, "admin/reembed.html", runs=runs.items)
