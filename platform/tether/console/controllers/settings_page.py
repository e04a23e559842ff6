"""Tenant admin: the tenant's settings as they stand (region, privacy patterns, policy
rules, console sessions), the deployment's limits that apply to it, and the tenant
settings document, one form per section, saved with If-Match through the service behind
``PUT /v1/tenant/settings`` (a 412 shows the version in force and lets the admin apply
the edit again; a 422 names the field)."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, get, post
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath
from litestar.response import Redirect, Template

from tenancy.access.guard import policy
from tenancy.access.policy_controllers import provide_policy_service
from tenancy.access.policy_services import PolicyService
from tenancy.access.principal import Principal
from tenancy.settings.controllers import provide_tenant_settings_service
from tenancy.settings.errors import SettingsChanged
from tenancy.settings.providers import ProviderRefused
from tenancy.settings.services import TenantSettingsService, etag
from tether.console import forms, settings_form
from tether.console.pages import back_to, may, render
from tether.core.errors import NotFound
from tether.core.settings import Settings
from tether.privacy.controllers import provide_privacy_pattern_service
from tether.privacy.services import PrivacyPatternService

AnyRequest = Request[Any, Any, Any]
TenantSettings = NamedDependency[TenantSettingsService]


class SettingsPages(Controller):
    path = "/admin/settings"
    dependencies = {  # noqa: RUF012
        "policy_service": Provide(provide_policy_service, sync_to_thread=False),
        "privacy_pattern_service": Provide(provide_privacy_pattern_service, sync_to_thread=False),
        "tenant_settings_service": Provide(provide_tenant_settings_service, sync_to_thread=False),
    }

    async def _page(
        self,
        request: AnyRequest,
        principal: Principal,
        settings: Settings,
        privacy_pattern_service: PrivacyPatternService,
        policy_service: PolicyService,
        tenant_settings_service: TenantSettingsService,
        status: int = 200,
        **extra: Any,
    ) -> Template:
        patterns = await privacy_pattern_service.get()
        rules = await policy_service.tenant_rules() if may(request, "policy", "read") else None
        current = await tenant_settings_service.get()
        values = settings_form.document(current)
        drafts: dict[str, Any] = extra.pop("drafts", {})
        return render(
            request,
            "admin/settings.html",
            status=status,
            principal=principal,
            settings=settings,
            pattern_count=len(patterns.patterns),
            rule_count=None if rules is None else len(rules.rules),
            current=current,
            sections=settings_form.sections({**values, **drafts}),
            in_force={s.name: s for s in settings_form.sections(values)},
            may_write=may(request, "tenant_settings", "write"),
            saved=request.query_params.get("saved", ""),
            **extra,
        )

    @get("/", opt=policy("tenant_settings", "read"))
    async def settings_page(
        self,
        request: AnyRequest,
        principal: NamedDependency[Principal],
        settings: NamedDependency[Settings],
        privacy_pattern_service: NamedDependency[PrivacyPatternService],
        policy_service: NamedDependency[PolicyService],
        tenant_settings_service: TenantSettings,
    ) -> Template:
        """What is set for this tenant, and the deployment-wide limits it runs under."""
        return await self._page(
            request,
            principal,
            settings,
            privacy_pattern_service,
            policy_service,
            tenant_settings_service,
        )

    @post("/{section:str}", opt=policy("tenant_settings", "write"))
    async def save_section(
        self,
        request: AnyRequest,
        section: FromPath[str],
        principal: NamedDependency[Principal],
        settings: NamedDependency[Settings],
        privacy_pattern_service: NamedDependency[PrivacyPatternService],
        policy_service: NamedDependency[PolicyService],
        tenant_settings_service: TenantSettings,
    ) -> Template | Redirect:
        """Save one section (the others as the version read), If-Match the version read."""
        if not settings_form.is_section(section):
            raise NotFound(f"no settings section {section}")
        form = await request.form()
        read_version = forms.number(form, "version")
        reason = forms.text(form, "reason")
        current = await tenant_settings_service.get()
        values = settings_form.document(current)
        mine = settings_form.read_section(form, section, values)
        page = (
            request,
            principal,
            settings,
            privacy_pattern_service,
            policy_service,
            tenant_settings_service,
        )
        try:
            data = settings_form.validate({**values, section: mine}, reason)
        except settings_form.Invalid as exc:
            return await self._page(
                *page,
                status=422,
                drafts={section: mine},
                draft_section=section,
                draft_version=read_version,
                invalid=exc,
                reason=reason,
            )
        try:
            saved = await tenant_settings_service.put(data, etag(read_version))
        except ProviderRefused as exc:
            first = exc.extra["errors"][0]
            return await self._page(
                *page,
                status=422,
                drafts={section: mine},
                draft_section=section,
                draft_version=read_version,
                invalid=settings_form.Invalid(first["field"], first["message"]),
                reason=reason,
            )
        except SettingsChanged:
            return await self._page(
                *page,
                status=412,
                drafts={section: mine},
                draft_section=section,
                conflict=section,
                reason=reason,
            )
        return back_to(f"/console/admin/settings?saved={saved.version}#section-{section}")
