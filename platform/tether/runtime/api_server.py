"""``tether api``: one uvicorn process serving the API on ``TETHER_HOST:TETHER_PORT``
and, with ``TETHER_API__OPS_PORT`` set, /health, /ready and /metrics on that port (one
process, two listening sockets; decision 0061). The chart's API container runs this."""

from __future__ import annotations

import socket

import uvicorn

from tether.core.settings import Settings
from tether.runtime.preflight import StartupError


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.set_inheritable(True)
    return sock


def serve_api(settings: Settings) -> None:
    config = uvicorn.Config(
        "tether.asgi:create",
        factory=True,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level.lower(),
    )
    if settings.api.ops_port == settings.port:
        raise StartupError(
            f"TETHER_API__OPS_PORT and TETHER_PORT are both {settings.port}",
            "give the operations port its own number (the chart uses 9000)",
        )
    sockets = [_listen(settings.host, settings.port)]
    if settings.api.ops_port is not None:
        sockets.append(_listen(settings.host, settings.api.ops_port))
    uvicorn.Server(config).run(sockets=sockets)
