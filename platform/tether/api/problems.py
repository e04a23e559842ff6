"""The one place where exceptions become HTTP responses (RFC 9457 problem+json)."""

from __future__ import annotations

import logging
import re
from typing import Any

from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.types import ExceptionHandlersMap
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from tether.core.database_errors import DatabaseUnavailable, database_unavailable
from tether.core.errors import TetherError, TooManyRequests
from tether.core.logging import request_id_var
from tether.core.text import PATTERN_MEANINGS

log = logging.getLogger(__name__)

PROBLEM_MEDIA_TYPE = "application/problem+json"

_HTTP_CODES = {
    400: "bad_request",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    429: "too_many_requests",
}


def problem(
    status: int, code: str, title: str, detail: str, extra: dict[str, Any] | None = None
) -> Response[dict[str, Any]]:
    """Build a problem+json response; ``code`` is the stable machine-readable part."""
    body: dict[str, Any] = {
        "type": f"https://tether.dev/problems/{code}",
        "title": title,
        "status": status,
        "detail": detail,
        "code": code,
        "request_id": request_id_var.get(),
    }
    if extra:
        body.update(extra)
    return Response(content=body, status_code=status, media_type=PROBLEM_MEDIA_TYPE)


# msgspec names the offending field in its message: "... - at `$.user.external_id`",
# "Object missing required field `persona`", "Object contains unknown field `x`".
_AT_PATH = re.compile(r"at `\$\.?([^`]*)`")
_NAMED_FIELD = re.compile(r"field `([^`]+)`")
_INDEX = re.compile(r"\.(\d+)(?=\.|$)")


def _field_name(message: str, key: str | None) -> str:
    """``turns[0].extra`` from Litestar's key (``turns.0``, or the path in the message)
    and the field msgspec names in the message."""
    path = _AT_PATH.search(message)
    base = path.group(1) if path else _INDEX.sub(r"[\1]", key or "")
    if base == "data":  # the body itself
        base = ""
    named = _NAMED_FIELD.search(message)
    field = named.group(1) if named else ""
    if field and not base.endswith(field):
        base = f"{base}.{field}" if base else field
    return base or "body"


def _readable(message: str) -> str:
    """A pattern of ours in msgspec's message says what it means instead."""
    for pattern, meaning in PATTERN_MEANINGS.items():
        for shown in (repr(pattern), pattern):
            message = message.replace(f"Expected `str` matching regex {shown}", meaning)
    return message


def _field_errors(extra: Any) -> list[dict[str, str]]:
    if not isinstance(extra, list):
        return []
    errors = []
    for item in extra:
        if isinstance(item, dict):
            message = _readable(str(item.get("message", "invalid")))
            key = item.get("key")
            errors.append(
                {"field": _field_name(message, str(key) if key else None), "message": message}
            )
    return errors


def handle_tether_error(_: Request[Any, Any, Any], exc: TetherError) -> Response[dict[str, Any]]:
    response = problem(exc.status_code, exc.code, exc.title, exc.detail, exc.extra)
    if exc.retry_after is not None:
        response.headers["Retry-After"] = str(exc.retry_after)
    if isinstance(exc, TooManyRequests):
        response.headers.update(exc.headers)
    return response


def handle_validation(
    _: Request[Any, Any, Any], exc: ValidationException
) -> Response[dict[str, Any]]:
    errors = _field_errors(exc.extra)
    fields = ", ".join(e["field"] for e in errors) or "the request"
    return problem(
        422, "invalid_input", "Invalid input", f"invalid value for {fields}", {"errors": errors}
    )


def handle_http(_: Request[Any, Any, Any], exc: HTTPException) -> Response[dict[str, Any]]:
    status = exc.status_code
    code = _HTTP_CODES.get(status, "http_error" if status < 500 else "internal_error")
    response = problem(status, code, code.replace("_", " ").capitalize(), exc.detail)
    if exc.headers:
        response.headers.update(exc.headers)
    return response


def handle_database_error(
    request: Request[Any, Any, Any], exc: Exception
) -> Response[dict[str, Any]]:
    """A statement's connection lost, or no pooled connection in time: the client may
    retry shortly (a refused connect raises ``DatabaseUnavailable`` itself). Any other
    database error is a bug."""
    if not database_unavailable(exc):
        return handle_unexpected(request, exc)
    # The class names only: a DBAPIError's message quotes the statement's parameters.
    cause = exc.orig.__cause__ if isinstance(exc, DBAPIError) and exc.orig else exc
    log.warning("database unavailable: %s (%s)", type(exc).__name__, type(cause).__name__)
    unavailable = DatabaseUnavailable("the memory store cannot be reached right now; retry")
    return handle_tether_error(request, unavailable)


def handle_unexpected(_: Request[Any, Any, Any], exc: Exception) -> Response[dict[str, Any]]:
    # A 5xx is a bug: log it with its traceback once, answer without internals.
    log.error("unhandled error", exc_info=exc)
    return problem(500, "internal_error", "Internal error", "an unexpected error occurred")


EXCEPTION_HANDLERS: ExceptionHandlersMap = {
    TetherError: handle_tether_error,
    ValidationException: handle_validation,
    HTTPException: handle_http,
    DBAPIError: handle_database_error,
    PoolTimeout: handle_database_error,
    Exception: handle_unexpected,
}
