"""The console's two middlewares: security headers on every answer, and the session
that stands in for the API's bearer key (its Principal is what the guard and every
service see, exactly as for an API call)."""

from __future__ import annotations

from http.cookies import SimpleCookie
from typing import Any

from litestar.datastructures import MutableScopeHeaders
from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from tenancy.access.authenticator import Authenticator
from tether.console.csrf import SESSION_STATE
from tether.console.sessions import ConsoleSession, SessionStore
from tether.core.errors import Unauthenticated
from tether.core.resources import Resources
from tether.core.settings import ConsoleSettings

SESSION_COOKIE = "tether_console"
# Pages anyone may open (signing in); every other page needs a session.
PUBLIC_OPT = "console_public"

CSP = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
    ]
)
_HEADERS = {
    "content-security-policy": CSP,
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "cross-origin-opener-policy": "same-origin",
}


class SignInRequired(Unauthenticated):
    code = "console_sign_in_required"
    title = "Sign in to the console"


def cookies_of(scope: Scope) -> dict[str, str]:
    jar: SimpleCookie = SimpleCookie()
    for name, value in scope.get("headers", []):
        if name == b"cookie":
            try:
                jar.load(value.decode("latin-1"))
            except Exception:  # noqa: BLE001 - a malformed cookie header is no cookie
                return {}
    return {key: morsel.value for key, morsel in jar.items()}


def is_tls(scope: Scope, settings: ConsoleSettings) -> bool:
    if settings.trust_forwarded_proto:
        for name, value in scope.get("headers", []):
            if name == b"x-forwarded-proto":
                return value.decode("latin-1").split(",")[0].strip().lower() == "https"
    return scope.get("scheme") == "https"


def secure_cookies(scope: Scope, settings: ConsoleSettings) -> bool:
    if settings.secure_cookies == "auto":
        return is_tls(scope, settings)
    return settings.secure_cookies == "always"


def security_headers(app: ASGIApp) -> ASGIApp:
    """CSP without inline scripts, no framing, no sniffing; pages are never cached."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await app(scope, receive, send)
            return
        static = scope.get("path", "").startswith("/console/static/")

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableScopeHeaders.from_message(message)
                for name, value in _HEADERS.items():
                    headers[name] = value
                if not static:
                    headers["cache-control"] = "no-store"
            await send(message)

        await app(scope, receive, with_headers)

    return middleware


def console_session(app: ASGIApp) -> ASGIApp:
    """Loads the session named by the cookie and re-checks its key; a page that needs
    one and has none answers with the sign-in page (SignInRequired)."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await app(scope, receive, send)
            return
        handler = scope.get("route_handler")
        public = handler is not None and (
            bool(handler.opt.get(PUBLIC_OPT)) or handler.fn.__module__.startswith("litestar.")
        )
        found = await _signed_in(scope)
        if found is not None:
            session, principal = found
            scope["user"] = principal
            scope.setdefault("state", {})[SESSION_STATE] = session
        elif not public:
            raise SignInRequired()
        await app(scope, receive, send)

    return middleware


async def _signed_in(scope: Scope) -> tuple[ConsoleSession, Any] | None:
    cookie = cookies_of(scope).get(SESSION_COOKIE)
    if not cookie:
        return None
    litestar_app = scope["app"]
    resources: Resources = litestar_app.state.resources
    store = SessionStore(resources.redis, resources.settings.console)
    session = await store.load(cookie)
    if session is None:
        return None
    authenticator: Authenticator = litestar_app.state.authenticator
    try:
        principal = await authenticator.authenticate_digest(bytes.fromhex(session.key_digest))
    except Unauthenticated:
        await store.end(session)  # the key was revoked: so is every session it opened
        return None
    return session, principal
