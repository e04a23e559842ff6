"""The operations port (decision 0061): with ``api.ops_port`` set, /health, /ready and
/metrics answer only on that port, and the API only on the public one. The chart puts
the ops port behind a Service of its own that no Ingress routes to, so neither probes
nor metrics are reachable from the internet, whatever the ingress rules say."""

from __future__ import annotations

import json

from litestar.enums import ScopeType
from litestar.types import (
    ASGIApp,
    HTTPResponseBodyEvent,
    HTTPResponseStartEvent,
    Receive,
    Scope,
    Send,
)

from tether.api.problems import PROBLEM_MEDIA_TYPE

OPS_PATHS = frozenset({"/health", "/ready", "/metrics"})


def _port(scope: Scope) -> int | None:
    server = scope.get("server")
    return None if not server else server[1]


async def _not_found(send: Send) -> None:
    body = json.dumps(
        {"type": "about:blank", "title": "Not found", "status": 404, "code": "not_found"}
    ).encode()
    start: HTTPResponseStartEvent = {
        "type": "http.response.start",
        "status": 404,
        "headers": [
            (b"content-type", PROBLEM_MEDIA_TYPE.encode()),
            (b"content-length", str(len(body)).encode()),
        ],
    }
    await send(start)
    end: HTTPResponseBodyEvent = {"type": "http.response.body", "body": body, "more_body": False}
    await send(end)


def split_ops_port(app: ASGIApp, ops_port: int) -> ASGIApp:
    """``app`` answering operations paths on ``ops_port`` only, and nothing else there."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == ScopeType.HTTP:
            on_ops = _port(scope) == ops_port
            if on_ops != (scope["path"] in OPS_PATHS):
                await _not_found(send)
                return
        await app(scope, receive, send)

    return middleware
