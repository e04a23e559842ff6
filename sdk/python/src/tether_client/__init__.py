"""Tether's Python client: ``Tether`` (sync) and ``AsyncTether`` (async)."""

__version__ = "0.1.0"

from tether_client import models
from tether_client._spec import NOT_GIVEN, NotGiven
from tether_client.capture import CaptureStats
from tether_client.client import AsyncTether, Tether
from tether_client.errors import (
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
from tether_client.gateway import ChatContext

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
