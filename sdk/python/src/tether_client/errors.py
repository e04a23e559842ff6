"""Typed errors: every problem+json answer becomes one of these, never a bare HTTP error.

Match on the class (``except NotFound``) or on ``code``, the API's stable string."""

from __future__ import annotations

from typing import Any

import httpx


class TetherError(Exception):
    """Base of every error this SDK raises."""


class APIConnectionError(TetherError):
    """The request did not get an answer: the server is unreachable or the connection broke."""


class APITimeoutError(APIConnectionError):
    """No answer within the timeout."""


class APIError(TetherError):
    """The API answered with an error (RFC 9457 problem+json)."""

    status: int = 0

    def __init__(self, response: httpx.Response, problem: dict[str, Any]) -> None:
        self.response = response
        self.problem = problem
        self.status = response.status_code
        self.code: str = str(problem.get("code") or "http_error")
        self.title: str = str(problem.get("title") or response.reason_phrase)
        self.detail: str = str(problem.get("detail") or "")
        self.request_id: str | None = problem.get("request_id") or response.headers.get(
            "x-request-id"
        )
        super().__init__(f"{self.status} {self.code}: {self.detail or self.title}")


class BadRequest(APIError):
    """400."""


class Unauthenticated(APIError):
    """401: the API key is missing, malformed, expired or revoked."""


class Forbidden(APIError):
    """403: the key's role may not do this."""


class NotFound(APIError):
    """404: no such object, or one out of this key's reach (the API does not say which)."""


class Conflict(APIError):
    """409, or 412 (``PreconditionFailed``): it conflicts with what is stored."""


class PreconditionFailed(Conflict):
    """412: the object changed since you read it. ``current_etag`` / ``current_version``
    say where it is now (read it again, reapply your edit, send that ETag)."""

    def __init__(self, response: httpx.Response, problem: dict[str, Any]) -> None:
        super().__init__(response, problem)
        self.current_etag: str | None = problem.get("current_etag") or response.headers.get("etag")
        version = problem.get("current_version")
        self.current_version: int | None = int(version) if version is not None else None


class PayloadTooLarge(APIError):
    """413: the body or the upload is larger than the deployment accepts."""


class UnsupportedMediaType(APIError):
    """415: an upload of a type the operation does not accept."""


class WrongRegion(APIError):
    """421: the tenant lives in another region; this deployment refuses its writes."""


class ValidationError(APIError):
    """422: ``errors`` names each invalid field (``[{"field": ..., "message": ...}]``)."""

    def __init__(self, response: httpx.Response, problem: dict[str, Any]) -> None:
        super().__init__(response, problem)
        raw = problem.get("errors")
        self.errors: list[dict[str, str]] = list(raw) if isinstance(raw, list) else []


class PreconditionRequired(APIError):
    """428: this write needs ``If-Match``."""


class _RetryAfter(APIError):
    def __init__(self, response: httpx.Response, problem: dict[str, Any]) -> None:
        super().__init__(response, problem)
        self.retry_after: float | None = retry_after_seconds(response)


class RateLimited(_RetryAfter):
    """429 (``rate_limited`` or ``quota_exceeded``): wait ``retry_after`` seconds."""

    def __init__(self, response: httpx.Response, problem: dict[str, Any]) -> None:
        super().__init__(response, problem)
        self.limit: str | None = response.headers.get("ratelimit-policy")
        self.remaining: str | None = response.headers.get("ratelimit")


class ServiceUnavailable(_RetryAfter):
    """503: a store is unavailable; retry after ``retry_after`` seconds."""


class ServerError(APIError):
    """Any other 5xx: a bug in Tether; report it with ``request_id``."""


_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequest,
    401: Unauthenticated,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    412: PreconditionFailed,
    413: PayloadTooLarge,
    415: UnsupportedMediaType,
    421: WrongRegion,
    422: ValidationError,
    428: PreconditionRequired,
    429: RateLimited,
    503: ServiceUnavailable,
}


def retry_after_seconds(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date: not sent by Tether; treat as absent


def error_for(response: httpx.Response) -> APIError:
    """The typed error of an error response (its body read already)."""
    try:
        body = response.json()
    except ValueError:
        body = None
    problem: dict[str, Any] = body if isinstance(body, dict) else {"detail": response.text[:500]}
    status = response.status_code
    kind = _BY_STATUS.get(status) or (ServerError if status >= 500 else APIError)
    return kind(response, problem)
