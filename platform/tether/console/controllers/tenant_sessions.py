"""Tenant admin: the session defaults (GET|PUT /v1/tenant/session-defaults) and the
retention sweep's runs (GET /v1/tenant/retention-runs), through the API's services."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, get, post
from litestar.di import NamedDependency, Provide
from litestar.params import FromQuery
from litestar.response import Redirect, Template
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.guard import policy
from tenancy.access.principal import Principal
from tether.console import forms
from tether.console.pages import back_to, may, render
from tether.memories.session_controllers import provide_session_defaults, settings_changed_here
from tether.memories.session_flags import SessionDefaultsService
from tether.memories.session_schemas import SessionDefaults
from tether.retention.services import RetentionRunService

AnyRequest = Request[Any, Any, Any]
Defaults = NamedDependency[SessionDefaultsService]


class TenantSessionPages(Controller):
    path = "/admin"
    dependencies = {  # noqa: RUF012
        "session_defaults": Provide(provide_session_defaults, sync_to_thread=False)
    }

    @get("/session-defaults", opt=policy("tenant_settings", "read"))
    async def defaults(
        self, request: AnyRequest, session_defaults: Defaults, saved: FromQuery[int | None] = None
    ) -> Template:
        """The tenant's defaults for sessions whose persona does not decide."""
        return render(
            request,
            "admin/session_defaults.html",
            defaults=await session_defaults.get(),
            saved=saved,
            may_write=may(request, "tenant_settings", "write"),
        )

    @post("/session-defaults", opt=policy("tenant_settings", "write"))
    async def save_defaults(
        self,
        request: AnyRequest,
        session_defaults: Defaults,
        principal: NamedDependency[Principal],
    ) -> Redirect:
        """Replace the tenant's session defaults (unticked: off): the ``sessions``
        section of the settings document, as a new version."""
        form = await request.form()
        names = ("memory_enabled", "knowledge_enabled", "keep_turns_without_memory")
        data = forms.parse(SessionDefaults, {n: forms.text(form, n) == "on" for n in names})
        await session_defaults.put(data)
        settings_changed_here(request.app.state, principal)
        return back_to("/console/admin/session-defaults?saved=1")

    @get("/retention", opt=policy("tenant_settings", "read"))
    async def retention(
        self,
        request: AnyRequest,
        db_session: NamedDependency[AsyncSession],
        principal: NamedDependency[Principal],
    ) -> Template:
        """Each retention kind's last run: cutoff, what it removed, progress."""
        runs = await RetentionRunService(db_session, principal.tenant_id).runs()
        return render(request, "admin/retention.html", runs=runs.items)
