"""POST /v1/policies/check: explain a decision of the casbin policy (admin, compliance)."""

from __future__ import annotations

from litestar import Controller, post
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.params import JSONBody
from litestar.status_codes import HTTP_200_OK
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.guard import policy
from tenancy.access.policy import PolicyEnforcer
from tenancy.access.principal import Principal
from tenancy.access.schemas import PolicyCheck, PolicyDecision
from tenancy.audit.log import Actor, AuditLog, rule_text


class PolicyController(Controller):
    path = "/v1/policies"
    tags = ["access"]  # noqa: RUF012

    @post(
        "/check", operation_id="CheckPolicy", status_code=HTTP_200_OK, opt=policy("policy", "read")
    )
    async def check(
        self,
        state: State,
        data: JSONBody[PolicyCheck],
        principal: NamedDependency[Principal],
        db_session: NamedDependency[AsyncSession],
    ) -> PolicyDecision:
        """Would ``role`` be allowed ``action`` on ``object``, and by which rule. Resource
        ownership (a creator's own personas, an operator's current relationships) is
        checked on top of this by the services."""
        enforcer: PolicyEnforcer = state.policy
        decision = enforcer.decide(data.role.value, data.object, data.action)
        rule = list(decision.matched_rule) if decision.matched_rule else None
        if decision.allowed:
            why = f"allowed by rule {rule_text(decision.matched_rule)}"
        elif rule:
            why = f"denied by rule {rule_text(decision.matched_rule)}"
        else:
            why = "denied: no rule allows it (the default)"
        await AuditLog(db_session).record(
            principal.tenant_id,
            Actor.of(principal),
            "policy.check",
            "policy",
            detail={
                "role": data.role.value,
                "object": data.object,
                "action": data.action,
                "allowed": decision.allowed,
            },
        )
        return PolicyDecision(decision.allowed, rule, why)
