"""Signing in with an API key (exchanged for a server-side session), signing out, and
the language switch."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Request, Response, get, post
from litestar.params import FromPath, QueryParameter
from litestar.response import Redirect, Template

from tenancy.access.authenticator import Authenticator
from tenancy.access.guard import PUBLIC_OPT as NO_POLICY
from tenancy.access.principal import Principal
from tenancy.access.tokens import digest
from tenancy.audit.log import Actor, AuditLog
from tether.console.csrf import (
    FIELD,
    LOGIN_COOKIE,
    OWN_CHECK_OPT,
    CsrfRejected,
    new_token,
    same,
    submitted_token,
)
from tether.console.i18n import COOKIE, LOCALES
from tether.console.middleware import PUBLIC_OPT, SESSION_COOKIE, cookies_of, secure_cookies
from tether.console.pages import render, safe_next, session_of
from tether.console.sessions import SessionStore
from tether.core.errors import Unauthenticated
from tether.core.resources import Resources
from tether.core.tenant_sessions import tenant_transaction

AnyRequest = Request[Any, Any, Any]
NextPath = Annotated[str | None, QueryParameter(name="next")]
PUBLIC = {PUBLIC_OPT: True, NO_POLICY: True, OWN_CHECK_OPT: True}


def _store(resources: Resources) -> SessionStore:
    return SessionStore(resources.redis, resources.settings.console)


def _login_form(
    request: AnyRequest, next_path: str, error: str = "", status: int = 200
) -> Template:
    token = new_token()
    page = render(
        request, "sign_in.html", status=status, login_csrf=token, next=next_path, error=error
    )
    secure = secure_cookies(request.scope, request.app.state.resources.settings.console)
    page.set_cookie(
        LOGIN_COOKIE,
        token,
        path="/console",
        httponly=True,
        samesite="strict",
        secure=secure,
        max_age=3600,
    )
    return page


async def _audit_sign_in(resources: Resources, principal: Principal, action: str) -> None:
    async with tenant_transaction(resources.sessions, principal.tenant_id) as session:
        await AuditLog(session).record(
            principal.tenant_id, Actor.of(principal), action, "console_session"
        )


class AuthController(Controller):
    path = "/"

    @get("/sign-in", opt=PUBLIC)
    async def sign_in_form(self, request: AnyRequest, next_path: NextPath = None) -> Template:
        """The sign-in page."""
        return _login_form(request, safe_next(next_path))

    @post("/sign-in", opt=PUBLIC)
    async def sign_in(self, request: AnyRequest) -> Response[Any]:
        """Exchange an API key for a session cookie; the key is not kept in the browser."""
        form = await request.form()
        next_path = safe_next(str(form.get("next") or ""))
        if not same(cookies_of(request.scope).get(LOGIN_COOKIE, ""), form.get(FIELD)):
            return _login_form(request, next_path, "sign_in.expired", 403)
        token = str(form.get("api_key") or "").strip()
        authenticator: Authenticator = request.app.state.authenticator
        try:
            principal = await authenticator.authenticate(token)
        except Unauthenticated:
            return _login_form(request, next_path, "sign_in.refused", 401)
        resources: Resources = request.app.state.resources
        cookie, _ = await _store(resources).create(
            principal, digest(token), request.headers.get("user-agent", "")
        )
        await _audit_sign_in(resources, principal, "console.sign_in")
        settings = resources.settings.console
        response = Redirect(path=next_path, status_code=303)
        response.set_cookie(
            SESSION_COOKIE,
            cookie,
            path="/console",
            httponly=True,
            samesite="strict",
            secure=secure_cookies(request.scope, settings),
            max_age=int(settings.session_max_hours * 3600),
        )
        response.delete_cookie(LOGIN_COOKIE, path="/console")
        return response

    @post("/sign-out", opt=PUBLIC)
    async def sign_out(self, request: AnyRequest) -> Redirect:
        """End this session."""
        session = session_of(request)
        resources: Resources = request.app.state.resources
        if session is not None:
            if not same(session.csrf, await submitted_token(request)):
                raise CsrfRejected()
            await _store(resources).end(session)
            principal = request.scope.get("user")
            if isinstance(principal, Principal):
                await _audit_sign_in(resources, principal, "console.sign_out")
        response = Redirect(path="/console/sign-in", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path="/console")
        return response

    @get("/locale/{code:str}", opt={PUBLIC_OPT: True, NO_POLICY: True})
    async def locale(
        self,
        request: AnyRequest,
        code: FromPath[str],
        next_path: NextPath = None,
    ) -> Redirect:
        """Switch the console's language (English / 中文)."""
        response = Redirect(path=safe_next(next_path), status_code=303)
        if code in LOCALES:
            secure = secure_cookies(request.scope, request.app.state.resources.settings.console)
            response.set_cookie(
                COOKIE,
                code,
                path="/console",
                samesite="strict",
                secure=secure,
                max_age=365 * 24 * 3600,
            )
        return response
