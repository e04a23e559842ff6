"""Explaining decisions, and a tenant's own policy rules (on top of the file policy)."""

from __future__ import annotations

from typing import cast

from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.policy import Decision
from tenancy.access.policy_rules import PolicyAction, PolicyRule, normalised, refusal
from tenancy.access.principal import Principal
from tenancy.access.repositories import TenantPolicyRepository
from tenancy.access.schemas import PolicyCheck, PolicyDecision, TenantPolicyRule, TenantPolicyRules
from tenancy.access.tenant_policies import TenantPolicies
from tenancy.audit.log import Actor, AuditLog, rule_text
from tenancy.enums import PolicyEffect, Role
from tenancy.errors import PolicyRuleRefused
from tether.core.unit_of_work import on_commit


class PolicyService:
    """Decisions with the caller tenant's effective policy, and that tenant's rules."""

    def __init__(
        self, session: AsyncSession, principal: Principal, policies: TenantPolicies
    ) -> None:
        self._session = session
        self._principal = principal
        self._tenant_id = principal.tenant_id
        self._rules = TenantPolicyRepository(session, principal.tenant_id)
        self._audit = AuditLog(session)
        self._policies = policies

    async def check(self, data: PolicyCheck) -> PolicyDecision:
        """Would ``data.role`` be allowed, and by which rule (file or tenant). Audited."""
        enforcer = self._policies.for_tenant(self._tenant_id)
        decision = enforcer.decide(data.role.value, data.object, data.action)
        detail = {
            "role": data.role.value,
            "object": data.object,
            "action": data.action,
            "allowed": decision.allowed,
            "source": decision.source,
        }
        await self._audit.record(
            self._tenant_id, Actor.of(self._principal), "policy.check", "policy", detail=detail
        )
        rule = list(decision.matched_rule) if decision.matched_rule else None
        return PolicyDecision(decision.allowed, rule, _explain(decision), decision.source)

    def file_rules(self) -> list[TenantPolicyRule]:
        """The versioned file policy every tenant starts from, in file order."""
        rules = []
        for rule in self._policies.base.file_rules:
            role, obj, action, effect = rule
            rules.append(
                TenantPolicyRule(Role(role), obj, cast(PolicyAction, action), PolicyEffect(effect))
            )
        return rules

    async def tenant_rules(self) -> TenantPolicyRules:
        """The rules this tenant added, as stored."""
        return _schema(normalised(await self._rules.rules()))

    async def replace_tenant_rules(self, data: TenantPolicyRules) -> TenantPolicyRules:
        """Replace the tenant's rules as one change, audited with the rules before and
        after. This process applies them once the transaction commits; the others
        within ``access.policy_cache_seconds``.

        Raises:
            PolicyRuleRefused: a rule names an administrative or unknown object.
        """
        after = _validated(data)
        await self._rules.lock()
        before = normalised(await self._rules.rules())
        await self._rules.replace(after, self._principal.key_id)
        await self._audit.record(
            self._tenant_id,
            Actor.of(self._principal),
            "policy.change",
            "policy",
            detail={"before": [list(r) for r in before], "after": [list(r) for r in after]},
        )

        async def apply_here() -> None:
            self._policies.install(self._tenant_id, after)

        on_commit(self._session, apply_here)
        return _schema(after)


def _validated(data: TenantPolicyRules) -> tuple[PolicyRule, ...]:
    rules = [PolicyRule(r.role.value, r.object, r.action, r.effect.value) for r in data.rules]
    errors = []
    for index, rule in enumerate(rules):
        refused = refusal(rule)
        if refused is not None:
            field, reason = refused
            errors.append({"field": f"rules[{index}].{field}", "message": reason})
    if errors:
        raise PolicyRuleRefused(errors[0]["message"], errors=errors)
    return normalised(rules)


def _schema(rules: tuple[PolicyRule, ...]) -> TenantPolicyRules:
    return TenantPolicyRules(
        [
            TenantPolicyRule(
                Role(r.role), r.object, cast(PolicyAction, r.action), PolicyEffect(r.effect)
            )
            for r in rules
        ]
    )


def _explain(decision: Decision) -> str:
    rule = rule_text(decision.matched_rule)
    if rule is None:
        return "denied: no rule allows it (the default)"
    verdict = "allowed" if decision.allowed else "denied"
    return f"{verdict} by {decision.source} rule {rule}"
