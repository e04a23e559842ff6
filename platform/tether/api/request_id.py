"""ASGI middleware: one id per request, in every log line and in the response header,
and the time the server spent on it (``Server-Timing``)."""

from __future__ import annotations

import re
import time
import uuid

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from tether.core.logging import request_id_var

HEADER = b"x-request-id"
# Accept a caller's id only when it is short and harmless to log.
_SAFE_ID = re.compile(rb"^[A-Za-z0-9._:-]{1,64}$")


def request_id_middleware(app: ASGIApp) -> ASGIApp:
    """Wrap ``app`` so each HTTP request runs with ``request_id_var`` set."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await app(scope, receive, send)
            return
        incoming = dict(scope["headers"]).get(HEADER)
        rid = incoming if incoming and _SAFE_ID.match(incoming) else uuid.uuid4().hex.encode()
        token = request_id_var.set(rid.decode())
        started = time.perf_counter()

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                # Server-Timing lets clients and benchmarks see our own cost per request.
                spent = f"app;dur={(time.perf_counter() - started) * 1000:.3f}".encode()
                headers = list(message.get("headers", []))
                headers += [(HEADER, rid), (b"server-timing", spent)]
                message["headers"] = headers
            await send(message)

        try:
            await app(scope, receive, send_with_id)
        finally:
            request_id_var.reset(token)

    return middleware
