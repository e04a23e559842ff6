"""Counts every authenticated request against its key's and its tenant's rate, and
adds the RateLimit fields to the answer (or answers 429 ``rate_limited``)."""

from __future__ import annotations

from litestar import Litestar
from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from tenancy.access.principal import Principal
from tenancy.limits.cache import TenantLimitsCache
from tenancy.limits.headers import rate_limit_headers
from tenancy.limits.rates import RequestLimiter


def rate_limits(app: ASGIApp) -> ASGIApp:
    """App middleware, inside the authentication (which sets the principal)."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        principal = scope.get("user") if scope["type"] == ScopeType.HTTP else None
        if not isinstance(principal, Principal):
            await app(scope, receive, send)
            return
        state = Litestar.from_scope(scope).state
        cache: TenantLimitsCache = state.tenant_limits
        limiter: RequestLimiter = state.request_limiter
        windows = await limiter.hit(principal, await cache.get(principal.tenant_id))
        if not windows:
            await app(scope, receive, send)
            return
        extra = [(k.lower().encode(), v.encode()) for k, v in rate_limit_headers(windows).items()]

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), *extra]
            await send(message)

        await app(scope, receive, with_headers)

    return middleware
