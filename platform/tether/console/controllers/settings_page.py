"""Tenant admin: the tenant's settings as they stand (region, privacy patterns, policy
rules, console sessions) and the deployment's limits that apply to it."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, get
from litestar.di import NamedDependency, Provide
from litestar.response import Template

from tenancy.access.guard import policy
from tenancy.access.policy_controllers import provide_policy_service
from tenancy.access.policy_services import PolicyService
from tenancy.access.principal import Principal
from tether.console.pages import may, render
from tether.core.settings import Settings
from tether.privacy.controllers import provide_privacy_pattern_service
from tether.privacy.services import PrivacyPatternService


class SettingsPages(Controller):
    path = "/admin/settings"
    dependencies = {  # noqa: RUF012
        "policy_service": Provide(provide_policy_service, sync_to_thread=False),
        "privacy_pattern_service": Provide(provide_privacy_pattern_service, sync_to_thread=False),
    }

    @get("/", opt=policy("tenant_settings", "read"))
    async def settings_page(
        self,
        request: Request[Any, Any, Any],
        principal: NamedDependency[Principal],
        settings: NamedDependency[Settings],
        privacy_pattern_service: NamedDependency[PrivacyPatternService],
        policy_service: NamedDependency[PolicyService],
    ) -> Template:
        """What is set for this tenant, and the deployment-wide limits it runs under."""
        patterns = await privacy_pattern_service.get()
        rules = await policy_service.tenant_rules() if may(request, "policy", "read") else None
        return render(
            request,
            "admin/settings.html",
            principal=principal,
            settings=settings,
            pattern_count=len(patterns.patterns),
            rule_count=None if rules is None else len(rules.rules),
        )
