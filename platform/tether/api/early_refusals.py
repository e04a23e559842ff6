"""ASGI middleware: refuses, before the framework does any work, requests this process
already knows it will refuse: a key (or its tenant) whose one-second window is full,
and bad tokens from an address throttled for failing to authenticate.

A flood is answered from memory at a fraction of a request's cost, so it takes little
of the CPU other tenants' requests need (bench/tenant_flood.py). The first refusal of
each window in each process still goes through the app (which asks Redis and learns of
it); everything else the app decides as usual."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Litestar
from litestar.enums import ScopeType
from litestar.types import ASGIApp, HTTPResponseStartEvent, Receive, Scope, Send

from tenancy.access.authenticator import Authenticator
from tenancy.limits.rates import RequestLimiter
from tether.api.problems import PROBLEM_MEDIA_TYPE
from tether.core.errors import TooManyRequests
from tether.core.logging import request_id_var

_AUTHORIZATION = b"authorization"


def _bearer(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name == _AUTHORIZATION:
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" and token else None
    return None


def _refusal(app: Litestar, scope: Scope, token: str) -> TooManyRequests | None:
    authenticator: Authenticator | None = app.state.get("authenticator")
    limiter: RequestLimiter | None = app.state.get("request_limiter")
    if authenticator is None or limiter is None:
        return None  # not started yet
    principal = authenticator.cached(token)
    if principal is not None:
        return limiter.refused_here(principal)
    client = scope.get("client")
    return authenticator.refused_here(token, client[0] if client else None)


async def _answer(send: Send, error: TooManyRequests) -> None:
    body: dict[str, Any] = {
        "type": f"https://tether.dev/problems/{error.code}",
        "title": error.title,
        "status": error.status_code,
        "detail": error.detail,
        "code": error.code,
        "request_id": request_id_var.get(),
        **error.extra,
    }
    encoded = msgspec.json.encode(body)
    headers: list[tuple[bytes, bytes]] = [
        (b"content-type", PROBLEM_MEDIA_TYPE.encode()),
        (b"content-length", str(len(encoded)).encode()),
        *((k.lower().encode(), v.encode()) for k, v in error.headers.items()),
    ]
    start: HTTPResponseStartEvent = {
        "type": "http.response.start",
        "status": error.status_code,
        "headers": headers,
    }
    await send(start)
    await send({"type": "http.response.body", "body": encoded, "more_body": False})


def early_refusals(app: Litestar) -> ASGIApp:
    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == ScopeType.HTTP and (token := _bearer(scope)) is not None:
            refusal = _refusal(app, scope, token)
            if refusal is not None:
                await _answer(send, refusal)
                return
        await app(scope, receive, send)

    return middleware
