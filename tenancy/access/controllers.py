"""API key management (admin keys only)."""

from __future__ import annotations

import uuid

from litestar import Controller, Request, delete, get, post
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, FromQuery, JSONBody
from litestar.status_codes import HTTP_201_CREATED

from tenancy.access.authenticator import Authenticator
from tenancy.access.deps import provide_api_key_service
from tenancy.access.guard import policy
from tenancy.access.schemas import ApiKeyCreate, ApiKeyCreated, ApiKeyPage, ApiKeyRotate
from tenancy.access.services import ApiKeyService
from tenancy.ids import ApiKeyId
from tether.core.pagination import DEFAULT_LIMIT, Limit, StampedCursor


class ApiKeyController(Controller):
    path = "/v1/api-keys"
    tags = ["access"]  # noqa: RUF012
    dependencies = {"api_key_service": Provide(provide_api_key_service, sync_to_thread=False)}  # noqa: RUF012

    @post(operation_id="CreateApiKey", opt=policy("api_key", "write"))
    async def create(
        self, data: JSONBody[ApiKeyCreate], api_key_service: NamedDependency[ApiKeyService]
    ) -> ApiKeyCreated:
        """Issue a key for a role; the token is shown in this answer only."""
        return await api_key_service.issue(data)

    @get(operation_id="ListApiKeys", opt=policy("api_key", "read"))
    async def list_keys(
        self,
        api_key_service: NamedDependency[ApiKeyService],
        cursor: FromQuery[StampedCursor] = None,
        limit: FromQuery[Limit] = DEFAULT_LIMIT,
    ) -> ApiKeyPage:
        """The tenant's keys (without secrets), oldest first, a page at a time."""
        return await api_key_service.page(cursor, limit)

    @post(
        "/{key_id:uuid}/rotate",
        operation_id="RotateApiKey",
        status_code=HTTP_201_CREATED,
        opt=policy("api_key", "write"),
    )
    async def rotate(
        self,
        key_id: FromPath[uuid.UUID],
        api_key_service: NamedDependency[ApiKeyService],
        request: Request,  # type: ignore[type-arg]
        data: JSONBody[ApiKeyRotate | None] = None,
    ) -> ApiKeyCreated:
        """Issue a replacement (same role and subject); the old token keeps working for
        ``overlap_seconds``. The new token is shown in this answer only."""
        created, old_digest = await api_key_service.rotate(ApiKeyId(key_id), data or ApiKeyRotate())
        authenticator: Authenticator = request.app.state.authenticator
        authenticator.forget(old_digest)  # its new end applies here at once
        return created

    @delete("/{key_id:uuid}", operation_id="RevokeApiKey", opt=policy("api_key", "delete"))
    async def revoke(
        self,
        key_id: FromPath[uuid.UUID],
        api_key_service: NamedDependency[ApiKeyService],
        request: Request,  # type: ignore[type-arg]
    ) -> None:
        """Revoke a key; it stops authenticating at once on this server."""
        key_digest = await api_key_service.revoke(ApiKeyId(key_id))
        authenticator: Authenticator = request.app.state.authenticator
        authenticator.forget(key_digest)
