"""Tether's Python client: ``Tether`` (sync) and ``AsyncTether`` (async)."""

__version__ = "0.1.0"

from tether_client import models  # noqa: E402
from tether_client._spec import NOT_GIVEN, NotGiven  # noqa: E402
from tether_client.capture import CaptureStats  # noqa: E402
from tether_client.client import AsyncTether, Tether  # noqa: E402
from tether_client.errors import (  # noqa: E402
    APIConnectionError,
    APIError,
    APITimeoutError,
    BadRequest,
    Conflict,
    Forbidden,
    NotFound,
    PayloadTooLarge,
    PreconditionFailed,
    PreconditionRequired,
    RateLimited,
    ServerError,
    ServiceUnavailable,
    TetherError,
    Unauthenticated,
    UnsupportedMediaType,
    ValidationError,
    WrongRegion,
)
from tether_client.gateway import ChatContext  # noqa: E402

__all__ = [
    "NOT_GIVEN",
    "APIConnectionError",
    "APIError",
    "APITimeoutError",
    "AsyncTether",
    "BadRequest",
    "CaptureStats",
    "ChatContext",
    "Conflict",
    "Forbidden",
    "NotFound",
    "NotGiven",
    "PayloadTooLarge",
    "PreconditionFailed",
    "PreconditionRequired",
    "RateLimited",
    "ServerError",
    "ServiceUnavailable",
    "Tether",
    "TetherError",
    "Unauthenticated",
    "UnsupportedMediaType",
    "ValidationError",
    "WrongRegion",
    "models",
]
