"""The single enforcement point: every route declares ``opt={"policy": (object, action)}``
and this guard decides. A route without a declaration is refused (fail closed)."""

from __future__ import annotations

import logging
from typing import Any

from litestar.connection import ASGIConnection
from litestar.handlers.base import BaseRouteHandler

from tenancy.access.policy import Decision
from tenancy.access.principal import Principal
from tenancy.access.tenant_policies import TenantPolicies
from tenancy.audit.log import Actor, AuditLog, rule_text
from tenancy.route_policy import POLICY_OPT as POLICY_OPT
from tenancy.route_policy import PUBLIC_OPT as PUBLIC_OPT
from tenancy.route_policy import policy as policy
from tether.core.database_errors import DATABASE_ERRORS
from tether.core.errors import Forbidden, Unauthenticated, WrongRegion
from tether.core.resources import Resources
from tether.core.tenant_sessions import tenant_transaction

log = logging.getLogger(__name__)

WRITE_ACTIONS = frozenset({"write", "delete"})


def _is_framework_route(handler: BaseRouteHandler) -> bool:
    # Litestar's own OpenAPI document routes: public, and they carry no domain content.
    return handler.fn.__module__.startswith("litestar.")


async def policy_guard(
    connection: ASGIConnection[Any, Any, Any, Any], handler: BaseRouteHandler
) -> None:
    if handler.opt.get(PUBLIC_OPT) or _is_framework_route(handler):
        return
    declared = handler.opt.get(POLICY_OPT)
    if declared is None:
        raise Forbidden("this route declares no policy, so nobody may call it")
    principal = connection.scope.get("user")
    if not isinstance(principal, Principal):
        raise Unauthenticated()
    policies: TenantPolicies = connection.app.state.policy
    # The caller tenant's own rules count (re-read here when the snapshot is stale).
    enforcer = await policies.refresh(principal.tenant_id)
    obj, action = declared
    decision = enforcer.decide(principal.role.value, obj, action)
    if not decision.allowed:
        await _audit_denial(connection, principal, obj, action, decision)
        raise Forbidden(f"role {principal.role.value!r} may not {action} {obj}")
    if action in WRITE_ACTIONS:
        _require_home_region(connection, principal)


def _require_home_region(
    connection: ASGIConnection[Any, Any, Any, Any], principal: Principal
) -> None:
    # Data stays in region: a deployment writes only for tenants of its own region.
    resources: Resources = connection.app.state.resources
    if principal.region != resources.settings.region:
        raise WrongRegion(
            f"tenant region {principal.region!r}, this deployment serves "
            f"{resources.settings.region!r}"
        )


async def _audit_denial(
    connection: ASGIConnection[Any, Any, Any, Any],
    principal: Principal,
    obj: str,
    action: str,
    decision: Decision,
) -> None:
    """Every refused request is audited, in its own transaction (there is no action
    to share one with). A failing audit write is logged; the answer stays 403."""
    resources: Resources = connection.app.state.resources
    try:
        async with tenant_transaction(resources.sessions, principal.tenant_id) as session:
            await AuditLog(session).record(
                principal.tenant_id,
                Actor.of(principal),
                action,
                obj,
                allowed=False,
                matched_rule=rule_text(decision.matched_rule),
                detail={
                    "route": connection.scope.get("path", ""),
                    "method": connection.scope.get("method", ""),
                    "rule_source": decision.source,
                },
            )
    except DATABASE_ERRORS as exc:
        log.error("a denied request could not be audited: %s", exc)
