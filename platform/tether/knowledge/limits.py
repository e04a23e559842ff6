"""The upload size limit, enforced while the body streams in.

Uploads are far larger than the API's JSON body limit, and the limit is a setting, so
the upload route lifts Litestar's static limit and this middleware applies
``knowledge.max_upload_bytes`` (plus room for the multipart envelope) instead: a
declared ``Content-Length`` over it is refused before reading, a body that grows past
it is cut off as soon as it does. Either way the answer is 413 ``document_too_large``.
"""

from __future__ import annotations

from litestar.types import ASGIApp, Receive, ReceiveMessage, Scope, Send

from tether.core.resources import Resources
from tether.knowledge.errors import DocumentTooLarge

# Multipart boundaries and part headers around the file.
ENVELOPE_BYTES = 64 * 1024


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length" and value.isdigit():
            return int(value)
    return None


def upload_limit(app: ASGIApp) -> ASGIApp:
    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        resources: Resources = scope["app"].state.resources
        allowed = resources.settings.knowledge.max_upload_bytes
        limit = allowed + ENVELOPE_BYTES
        too_large = DocumentTooLarge(f"uploads are limited to {allowed} bytes")
        declared = _declared_length(scope)
        if declared is not None and declared > limit:
            raise too_large
        received = 0

        async def limited() -> ReceiveMessage:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise too_large
            return message

        await app(scope, limited, send)

    return middleware
