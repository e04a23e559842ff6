"""/v1/policies: explain a decision (admin, compliance) and manage the tenant's own
rules on top of the file policy (admin; compliance may read them)."""

from __future__ import annotations

from litestar import Controller, get, post, put
from litestar.datastructures import State
from litestar.di import NamedDependency, Provide
from litestar.params import JSONBody
from litestar.status_codes import HTTP_200_OK
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.guard import policy
from tenancy.access.policy_services import PolicyService
from tenancy.access.principal import Principal
from tenancy.access.schemas import PolicyCheck, PolicyDecision, TenantPolicyRules


def provide_policy_service(
    state: State, db_session: NamedDependency[AsyncSession], principal: NamedDependency[Principal]
) -> PolicyService:
    return PolicyService(db_session, principal, state.policy)


Policies = NamedDependency[PolicyService]


class PolicyController(Controller):
    path = "/v1/policies"
    tags = ["access"]  # noqa: RUF012
    dependencies = {"policy_service": Provide(provide_policy_service, sync_to_thread=False)}  # noqa: RUF012

    @post(
        "/check", operation_id="CheckPolicy", status_code=HTTP_200_OK, opt=policy("policy", "read")
    )
    async def check(self, data: JSONBody[PolicyCheck], policy_service: Policies) -> PolicyDecision:
        """Would ``role`` be allowed ``action`` on ``object`` in your tenant, and by which
        rule (``source``: the file policy or a tenant rule). Which objects a key reaches
        (a creator's own personas, an operator's current relationships) is decided on
        top of this for every object the request touches."""
        return await policy_service.check(data)

    @get("/tenant", operation_id="GetTenantPolicies", opt=policy("policy", "read"))
    async def get_tenant_rules(self, policy_service: Policies) -> TenantPolicyRules:
        """The rules your tenant added on top of the file policy."""
        return await policy_service.tenant_rules()

    @put("/tenant", operation_id="PutTenantPolicies", opt=policy("policy", "write"))
    async def put_tenant_rules(
        self, data: JSONBody[TenantPolicyRules], policy_service: Policies
    ) -> TenantPolicyRules:
        """Replace your tenant's rules (at most 200; content objects only; a deny beats
        every allow, so a file deny cannot be lifted). Audited as ``policy.change``.
        Other API processes apply the change within ``TETHER_ACCESS__POLICY_CACHE_SECONDS``."""
        return await policy_service.replace_tenant_rules(data)
