"""How a JSON request body is read: every way it can be unreadable is a 4xx problem."""

from __future__ import annotations

from typing import Any

from litestar import Request
from litestar.exceptions import SerializationException

from tether.core.errors import TetherError


class InvalidJson(TetherError):
    status_code = 400
    code = "invalid_json"
    title = "The body is not JSON this API can read"


class UnsupportedMediaType(TetherError):
    status_code = 415
    code = "unsupported_media_type"
    title = "The body's Content-Type is not JSON"


def _is_json(content_type: str | None) -> bool:
    """JSON, ``*/*+json``, no type at all, or the form type ``curl -d`` sends by default
    (it is read as JSON all the same: a wrong label, not a different format)."""
    if not content_type:
        return True
    media_type = content_type.split(";", 1)[0].strip().lower()
    return media_type in (
        "application/json",
        "application/x-www-form-urlencoded",
    ) or media_type.endswith("+json")


class TetherRequest(Request[Any, Any, Any]):
    """Litestar's request, but a body that is not JSON is a 400 or 415 problem: not
    UTF-8, malformed, a lone surrogate escape, nested past the decoder's depth (which
    would otherwise surface as a RecursionError and a 500), or labelled as another
    media type."""

    async def json(self) -> Any:
        content_type = self.headers.get("content-type")
        if not _is_json(content_type):
            raise UnsupportedMediaType(f"send the body as application/json, not {content_type}")
        try:
            return await super().json()
        except SerializationException as exc:
            raise InvalidJson(str(exc.detail)) from exc
        except RecursionError as exc:
            raise InvalidJson("the JSON body is nested too deeply") from exc
