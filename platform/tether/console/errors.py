"""Errors as console pages: the same exceptions the API renders as problem+json become
an HTML page with the same status (an object out of reach is the 404 page, a role
without the right the 403 page); a missing session goes to the sign-in page."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import quote

from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.response import Redirect
from litestar.types import ExceptionHandlersMap
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from tether.api.problems import _HTTP_CODES
from tether.console.middleware import SignInRequired
from tether.console.pages import render
from tether.core.database_errors import DatabaseUnavailable, database_unavailable
from tether.core.errors import TetherError

log = logging.getLogger(__name__)
AnyRequest = Request[Any, Any, Any]


def _page(request: AnyRequest, status: int, code: str, detail: str) -> Response[Any]:
    return render(request, "error.html", status=status, code=code, detail=detail)


def handle_sign_in(request: AnyRequest, _: SignInRequired) -> Response[Any]:
    target = "/console/sign-in?next=" + quote(request.url.path, safe="/")
    if request.headers.get("hx-request") == "true":
        # htmx would swap a redirect's page into a fragment: ask it to navigate instead.
        return Response(b"", status_code=401, headers={"HX-Redirect": target})
    return Redirect(path=target, status_code=303)


def handle_tether(request: AnyRequest, exc: TetherError) -> Response[Any]:
    return _page(request, exc.status_code, exc.code, exc.detail)


def handle_http(request: AnyRequest, exc: HTTPException) -> Response[Any]:
    status = exc.status_code
    return _page(request, status, _HTTP_CODES.get(status, "http_error"), exc.detail)


def handle_validation(request: AnyRequest, exc: ValidationException) -> Response[Any]:
    return _page(request, 400, "invalid_input", exc.detail)


def handle_database(request: AnyRequest, exc: Exception) -> Response[Any]:
    if not database_unavailable(exc):
        return handle_unexpected(request, exc)
    return handle_tether(request, DatabaseUnavailable("the memory store cannot be reached"))


def handle_unexpected(request: AnyRequest, exc: Exception) -> Response[Any]:
    log.error("console: unhandled error", exc_info=exc)
    return _page(request, 500, "internal_error", "an unexpected error occurred")


EXCEPTION_HANDLERS: ExceptionHandlersMap = {
    SignInRequired: handle_sign_in,
    TetherError: handle_tether,
    ValidationException: handle_validation,
    HTTPException: handle_http,
    DBAPIError: handle_database,
    PoolTimeout: handle_database,
    Exception: handle_unexpected,
}
