"""Our exception hierarchy. One handler (``tether.api.problems``) renders them all as
RFC 9457 problem+json; the ``code`` is the stable, machine-readable part."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar


class TetherError(Exception):
    """Base of every error we raise on purpose."""

    status_code: ClassVar[int] = 500
    code: ClassVar[str] = "internal_error"
    title: ClassVar[str] = "Internal error"
    # Seconds a client should wait before retrying (the Retry-After header), if any.
    retry_after: ClassVar[int | None] = None

    def __init__(self, detail: str | None = None, **extra: Any) -> None:
        super().__init__(detail or self.title)
        self.detail = detail or self.title
        self.extra = extra


class BadRequest(TetherError):
    status_code = 400
    code = "bad_request"
    title = "Bad request"


class InvalidInput(TetherError):
    """A field failed validation; ``extra["errors"]`` names the fields."""

    status_code = 422
    code = "invalid_input"
    title = "Invalid input"


class Unauthenticated(TetherError):
    status_code = 401
    code = "unauthenticated"
    title = "Missing, malformed or revoked API key"


class Forbidden(TetherError):
    status_code = 403
    code = "forbidden"
    title = "This key's role may not do that"


class NotFound(TetherError):
    status_code = 404
    code = "not_found"
    title = "Not found"


class Conflict(TetherError):
    status_code = 409
    code = "conflict"
    title = "Conflict"


class PreconditionFailed(TetherError):
    status_code = 412
    code = "precondition_failed"
    title = "The resource changed since you read it"


class PreconditionRequired(TetherError):
    status_code = 428
    code = "precondition_required"
    title = "This write needs an If-Match header"


class TooManyRequests(TetherError):
    """Over a rate limit or quota. ``retry_after``: seconds until a retry can succeed
    (also in the body); ``headers``: more response headers (the RateLimit fields)."""

    status_code = 429
    code = "too_many_requests"
    title = "Too many requests"

    def __init__(
        self,
        detail: str,
        retry_after: int,
        headers: Mapping[str, str] | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(detail, retry_after=retry_after, **extra)
        self.headers = {"Retry-After": str(retry_after), **(headers or {})}


class WrongRegion(TetherError):
    """The tenant's data lives in another region; this deployment must not write it."""

    status_code = 421
    code = "wrong_region"
    title = "This tenant belongs to another region's deployment"


class ServiceUnavailable(TetherError):
    status_code = 503
    code = "service_unavailable"
    title = "A dependency is unavailable"
