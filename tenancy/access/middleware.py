"""Bearer-key authentication for every route not marked ``exclude_from_auth``."""

from __future__ import annotations

from litestar.connection import ASGIConnection
from litestar.middleware import AbstractAuthenticationMiddleware, AuthenticationResult

from tenancy.access.authenticator import Authenticator
from tether.core.errors import Unauthenticated


class ApiKeyAuthMiddleware(AbstractAuthenticationMiddleware):
    async def authenticate_request(
        self,
        connection: ASGIConnection,  # type: ignore[type-arg]
    ) -> AuthenticationResult:
        header = connection.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token:
            raise Unauthenticated("send the API key as 'Authorization: Bearer <key>'")
        authenticator: Authenticator = connection.app.state.authenticator
        address = connection.client.host if connection.client else None
        principal = await authenticator.authenticate(token.strip(), address)
        return AuthenticationResult(user=principal, auth=None)
