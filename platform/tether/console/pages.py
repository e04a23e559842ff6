"""Rendering a console page: the template, the signed-in session, the locale, and the
navigation this key's role may use (the same policy decisions the guard makes)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from litestar import Request
from litestar.response import Redirect, Template

from tenancy.access.tenant_policies import TenantPolicies
from tenancy.errors import PolicyUnavailable
from tether.console.csrf import SESSION_STATE
from tether.console.i18n import COOKIE, Translator, pick
from tether.console.middleware import cookies_of
from tether.console.sessions import ConsoleSession
from tether.core.errors import Forbidden
from tether.core.ids import TenantId

AnyRequest = Request[Any, Any, Any]


@dataclass(frozen=True, slots=True)
class NavItem:
    key: str  # the message key of its label
    href: str
    policy: tuple[str, str]


NAV = (
    NavItem("nav.personas", "/console/personas", ("identity", "read")),
    NavItem("nav.relationships", "/console/relationships", ("relationship_memory", "read")),
    NavItem("nav.playground", "/console/playground", ("relationship_memory", "read")),
    NavItem("nav.extract", "/console/extract", ("relationship_memory", "read")),
    NavItem("nav.audit", "/console/audit", ("audit", "read")),
    NavItem("nav.users", "/console/users", ("global_user_profile", "read")),
    NavItem("nav.keys", "/console/admin/keys", ("api_key", "read")),
    NavItem("nav.policies", "/console/admin/policies", ("policy", "read")),
    NavItem("nav.privacy", "/console/admin/privacy", ("tenant_settings", "read")),
    NavItem("nav.knowledge", "/console/admin/knowledge", ("knowledge", "read")),
    NavItem("nav.settings", "/console/admin/settings", ("tenant_settings", "read")),
    NavItem("nav.session_defaults", "/console/admin/session-defaults", ("tenant_settings", "read")),
    NavItem("nav.retention", "/console/admin/retention", ("tenant_settings", "read")),
)


def session_of(request: AnyRequest) -> ConsoleSession | None:
    found = request.scope.get("state", {}).get(SESSION_STATE)
    return found if isinstance(found, ConsoleSession) else None


def locale_of(request: AnyRequest) -> str:
    return pick(cookies_of(request.scope).get(COOKIE), request.headers.get("accept-language"))


def may(request: AnyRequest, obj: str, action: str) -> bool:
    """Whether the signed-in key's role may ``action`` on ``obj`` (for what a page
    offers; the guard and the services decide again on every request)."""
    session = session_of(request)
    if session is None:
        return False
    policies: TenantPolicies = request.app.state.policy
    try:
        enforcer = policies.for_tenant(TenantId(uuid.UUID(session.tenant_id)))
    except PolicyUnavailable:
        return False
    return enforcer.decide(session.role, obj, action).allowed


def require(request: AnyRequest, obj: str, action: str) -> None:
    """A page that calls the services of more than one API route needs every policy
    those routes declare (the guard checked the page's own)."""
    if not may(request, obj, action):
        raise Forbidden(f"this key's role may not {action} {obj}")


def nav_for(request: AnyRequest) -> list[NavItem]:
    return [item for item in NAV if may(request, *item.policy)]


def render(request: AnyRequest, template: str, status: int = 200, **context: Any) -> Template:
    session = session_of(request)
    locale = locale_of(request)
    common = {
        "t": Translator(locale),
        "locale": locale,
        "session": session,
        "csrf": session.csrf if session else "",
        "nav": nav_for(request) if session else [],
        "path": request.url.path,
        "query": request.url.query,
        "htmx": request.headers.get("hx-request") == "true",
        "status": status,
        "error": "",
    }
    return Template(template_name=template, context=common | context, status_code=status)


def back_to(path: str) -> Redirect:
    """After a form post: see the result with a GET (post/redirect/get)."""
    return Redirect(path=path, status_code=303)


def safe_next(value: str | None) -> str:
    """Only a console path of this site (never //host or a scheme: no open redirect)."""
    if value and value.startswith("/console") and "//" not in value and "\\" not in value:
        return value
    return "/console/"
