"""CSRF protection for the console's state-changing requests.

Signed in: a synchronizer token, one per session, kept server-side with the session and
put in every form (``_csrf``) and in an htmx request header. Signing in (no session
yet): a double-submit token, a random cookie the form must repeat, so another site
cannot sign a browser in with the attacker's key. Both compared in constant time.
"""

from __future__ import annotations

import hmac
import secrets
from typing import Any

from litestar import Request
from litestar.connection import ASGIConnection
from litestar.handlers.base import BaseRouteHandler

from tether.console.sessions import ConsoleSession
from tether.core.errors import Forbidden

FIELD = "_csrf"
HEADER = "x-csrf-token"
LOGIN_COOKIE = "tether_console_login"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Routes that check their own token (signing in has no session yet).
OWN_CHECK_OPT = "console_own_csrf"
SESSION_STATE = "console_session"


class CsrfRejected(Forbidden):
    code = "csrf_failed"
    title = "The form expired or did not come from this console; reload the page and retry"


def same(expected: str, submitted: str | None) -> bool:
    return bool(expected) and submitted is not None and hmac.compare_digest(expected, submitted)


def new_token() -> str:
    return secrets.token_urlsafe(32)


async def submitted_token(request: Request[Any, Any, Any]) -> str | None:
    header = request.headers.get(HEADER)
    if header:
        return header
    value = (await request.form()).get(FIELD)
    return value if isinstance(value, str) else None


async def csrf_guard(
    connection: ASGIConnection[Any, Any, Any, Any], handler: BaseRouteHandler
) -> None:
    """Every state-changing console request must carry the session's token."""
    if connection.scope.get("method", "GET") in SAFE_METHODS or handler.opt.get(OWN_CHECK_OPT):
        return
    # A browser says where a request comes from; a cross-site one never gets further.
    if connection.headers.get("sec-fetch-site") == "cross-site":
        raise CsrfRejected("cross-site request refused")
    session = connection.scope.get("state", {}).get(SESSION_STATE)
    if not isinstance(session, ConsoleSession) or not isinstance(connection, Request):
        raise CsrfRejected()
    if not same(session.csrf, await submitted_token(connection)):
        raise CsrfRejected()
