"""API key management (admin keys only)."""

from __future__ import annotations

import uuid

from litestar import Controller, Request, delete, get, post
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, JSONBody

from tenancy.access.authenticator import Authenticator
from tenancy.access.deps import provide_api_key_service
from tenancy.access.guard import policy
from tenancy.access.schemas import ApiKeyCreate, ApiKeyCreated, ApiKeyRead
from tenancy.access.services import ApiKeyService
from tenancy.ids import ApiKeyId


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
    async def list_keys(self, api_key_service: NamedDependency[ApiKeyService]) -> list[ApiKeyRead]:
        """The tenant's keys (without secrets)."""
        return await api_key_service.list()

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
