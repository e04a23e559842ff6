"""A real local HTTP server speaking the OpenAI protocol, for the provider tests.

It answers ``POST /v1/embeddings``, ``POST /v1/chat/completions`` and ``GET /v1/models``
like a well-behaved server, unless a test queues scripted replies first (errors, garbage,
slow answers).
Good embeddings are deterministic per text, deliberately not unit length and returned
in reverse order (with ``index``), so a client must normalise and reorder them.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Reply:
    """One scripted answer. ``body=None`` means the good answer for the request."""

    status: int = 200
    body: Any = None  # bytes are sent as they are; anything else as JSON
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: Any


def raw_vector(text: str, dimension: int) -> np.ndarray:
    """The server's (non-normalised) embedding of ``text``."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    return np.random.default_rng(seed).normal(size=dimension) * 3.0 + 0.5


def unit_vector(text: str, dimension: int) -> np.ndarray:
    """What a correct client should return for ``text``."""
    vector = raw_vector(text, dimension)
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def unused_port() -> int:
    """A local port nothing listens on (for connection-refused cases)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class FakeOpenAIServer:
    """The server, run in a background thread on 127.0.0.1 and an ephemeral port."""

    def __init__(self, dimension: int = 8) -> None:
        self._default_dimension = dimension
        self.dimension = dimension
        self.chat_content = '{"ok": true}'
        self.requests: list[Received] = []
        self._script: deque[Reply] = deque()
        self._released = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._released.set()  # wake slow handlers
        self._httpd.shutdown()
        self._httpd.server_close()

    def reset(self) -> None:
        """Forget scripted replies, recorded requests and per-test settings."""
        self._script.clear()
        self.requests.clear()
        self.dimension = self._default_dimension
        self.chat_content = '{"ok": true}'

    def enqueue(self, *replies: Reply) -> None:
        """Answer the next requests with these, in order; then good answers again."""
        self._script.extend(replies)

    def next_reply(self) -> Reply:
        try:
            return self._script.popleft()
        except IndexError:
            return Reply()

    def wait(self, seconds: float) -> None:
        self._released.wait(seconds)

    def good_body(self, path: str, request: Any) -> Any:
        if path.endswith("/embeddings"):
            return self._embeddings(request)
        return {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "model": request.get("model"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": self.chat_content},
                    "finish_reason": "stop",
                }
            ],
        }

    def _embeddings(self, request: Any) -> Any:
        texts = request["input"]
        data = [
            {"object": "embedding", "index": i, "embedding": raw_vector(t, self.dimension).tolist()}
            for i, t in enumerate(texts)
        ]
        return {"object": "list", "model": request["model"], "data": data[::-1]}


def _handler_for(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            # What `tether doctor` asks a chat provider (the models it serves).
            server.requests.append(Received(self.path, dict(self.headers.items()), None))
            if self.path != "/v1/models":
                self._send(Reply(status=404, body={"error": "not found"}))
                return
            reply = server.next_reply()
            if reply.delay:
                server.wait(reply.delay)
            models = {"object": "list", "data": [{"id": "m", "object": "model"}]}
            self._send(reply, models if reply.body is None else reply.body)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            body = json.loads(raw) if raw else None
            server.requests.append(Received(self.path, dict(self.headers.items()), body))
            if self.path not in ("/v1/embeddings", "/v1/chat/completions"):
                self._send(Reply(status=404, body={"error": "not found"}))
                return
            reply = server.next_reply()
            if reply.delay:
                server.wait(reply.delay)
            payload = server.good_body(self.path, body) if reply.body is None else reply.body
            self._send(reply, payload)

        def _send(self, reply: Reply, payload: Any = None) -> None:
            payload = reply.body if payload is None else payload
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except OSError:
                pass  # the client gave up (a timeout test): nothing to answer

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    return Handler
