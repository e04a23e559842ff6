"""ASGI middleware: marks when a request's response is sent, so that background work it
spawned ``after_response`` (tether.core.background) starts only then."""

from __future__ import annotations

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from tether.core.background import responding


def after_response_middleware(app: ASGIApp) -> ASGIApp:
    """Wrap ``app`` so each HTTP request runs inside :func:`responding`."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await app(scope, receive, send)
            return
        with responding() as sent:

            async def sending(message: Message) -> None:
                await send(message)
                if message["type"] == "http.response.body" and not message.get("more_body"):
                    sent.set()

            await app(scope, receive, sending)

    return middleware
