"""A real local HTTP server whose answers a test scripts: to play a Tether that answers
503/429, or a network that loses an answer (a proxy in front of the live API that closes
the connection after forwarding a request)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


Answer = tuple[int, dict[str, str], bytes] | None  # None: close without answering
Script = Callable[[Seen], Answer]


@contextmanager
def scripted_server(script: Script) -> Iterator[tuple[str, list[Seen]]]:
    seen: list[Seen] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            request = Seen(self.command, self.path, dict(self.headers), self.rfile.read(length))
            seen.append(request)
            answer = script(request)
            if answer is None:
                self.close_connection = True
                return
            status, headers, body = answer
            self.send_response(status)
            for name, value in (headers | {"Content-Length": str(len(body))}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def forward(upstream: str, request: Seen) -> tuple[int, dict[str, str], bytes]:
    """Send ``request`` on to ``upstream`` and return its answer."""
    headers = {
        k: v for k, v in request.headers.items() if k.lower() not in ("host", "content-length")
    }
    response = httpx.request(
        request.method, upstream + request.path, headers=headers, content=request.body, timeout=10
    )
    kept = {
        k: v for k, v in response.headers.items() if k.lower() in ("content-type", "retry-after")
    }
    return response.status_code, kept, response.content
