"""Tenant admin: the policy (the file rules and the tenant's own, and a test of one
request against them) and the privacy patterns (with a box that shows what a text
would be stored as)."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, get, post
from litestar.datastructures import FormMultiDict
from litestar.di import NamedDependency, Provide
from litestar.params import FromQuery
from litestar.response import Redirect, Template

from tenancy.access.guard import policy
from tenancy.access.policy_controllers import provide_policy_service
from tenancy.access.policy_services import PolicyService
from tenancy.access.schemas import PolicyCheck, PolicyDecision
from tenancy.enums import Role
from tether.console import forms
from tether.console.pages import back_to, may, render
from tether.core.errors import InvalidInput
from tether.privacy.controllers import provide_privacy_pattern_service
from tether.privacy.filter import MaskResult
from tether.privacy.schemas import PrivacyPatterns
from tether.privacy.services import PrivacyPatternService

AnyRequest = Request[Any, Any, Any]
Policies = NamedDependency[PolicyService]
Patterns = NamedDependency[PrivacyPatternService]


def _patterns(form: FormMultiDict) -> PrivacyPatterns:
    """One pattern a line: its TAG, whitespace, then the regular expression."""
    rows = []
    for line in forms.text(form, "patterns").splitlines():
        if line.strip():
            tag, _, pattern = line.strip().partition(" ")
            rows.append({"tag": tag.strip(), "pattern": pattern.strip()})
    return forms.parse(PrivacyPatterns, {"patterns": rows})


def _lines(data: PrivacyPatterns) -> str:
    return "\n".join(f"{p.tag} {p.pattern}" for p in data.patterns)


class PolicyPages(Controller):
    path = "/admin"
    dependencies = {  # noqa: RUF012
        "policy_service": Provide(provide_policy_service, sync_to_thread=False),
        "privacy_pattern_service": Provide(provide_privacy_pattern_service, sync_to_thread=False),
    }

    async def _policies(
        self,
        request: AnyRequest,
        policy_service: PolicyService,
        decision: PolicyDecision | None,
        check: dict[str, str],
    ) -> Template:
        return render(
            request,
            "admin/policies.html",
            file_rules=policy_service.file_rules(),
            tenant_rules=(await policy_service.tenant_rules()).rules,
            roles=list(Role),
            decision=decision,
            check=check,
        )

    @get("/policies", opt=policy("policy", "read"))
    async def policies(self, request: AnyRequest, policy_service: Policies) -> Template:
        """Who may do what: the versioned file rules, then the tenant's own."""
        check = {"role": "gateway", "object": "relationship_memory", "action": "read"}
        return await self._policies(request, policy_service, None, check)

    @post("/policies/check", opt=policy("policy", "read"))
    async def check(self, request: AnyRequest, policy_service: Policies) -> Template:
        """Test one request against the tenant's policy (audited, as POST /v1/policies/check)."""
        form = await request.form()
        check = {name: forms.text(form, name).strip() for name in ("role", "object", "action")}
        decision = await policy_service.check(forms.parse(PolicyCheck, check))
        return await self._policies(request, policy_service, decision, check)

    @get("/privacy", opt=policy("tenant_settings", "read"))
    async def privacy(
        self,
        request: AnyRequest,
        privacy_pattern_service: Patterns,
        saved: FromQuery[bool] = False,
    ) -> Template:
        """The tenant's own privacy patterns, on top of the built-in detectors."""
        current = await privacy_pattern_service.get()
        return render(
            request,
            "admin/privacy.html",
            patterns=_lines(current),
            sample="",
            result=None,
            saved=saved,
            error="",
            may_write=may(request, "tenant_settings", "write"),
        )

    @post("/privacy", opt=policy("tenant_settings", "write"))
    async def save_privacy(
        self, request: AnyRequest, privacy_pattern_service: Patterns
    ) -> Redirect | Template:
        """Replace the patterns (checked as PUT /v1/tenant/privacy-patterns checks them)."""
        form = await request.form()
        try:
            await privacy_pattern_service.put(_patterns(form))
        except InvalidInput as exc:
            return render(
                request,
                "admin/privacy.html",
                status=422,
                patterns=forms.text(form, "patterns"),
                sample="",
                result=None,
                saved=False,
                error=exc.detail,
                may_write=True,
            )
        return back_to("/console/admin/privacy?saved=true")

    @post("/privacy/test", opt=policy("tenant_settings", "read"))
    async def test_privacy(
        self, request: AnyRequest, privacy_pattern_service: Patterns
    ) -> Template:
        """What the write path would store for the sample text with these patterns."""
        form = await request.form()
        sample = forms.text(form, "sample")
        result: MaskResult | None = None
        error = ""
        try:
            result = privacy_pattern_service.try_patterns(_patterns(form), sample)
        except InvalidInput as exc:
            error = exc.detail
        return render(
            request,
            "admin/privacy.html",
            patterns=forms.text(form, "patterns"),
            sample=sample,
            result=result,
            saved=False,
            error=error,
            may_write=may(request, "tenant_settings", "write"),
        )
