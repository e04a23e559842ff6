"""Providers for the access domain."""

from __future__ import annotations

from typing import Any

from litestar import Request
from litestar.di import NamedDependency
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.principal import Principal
from tenancy.access.services import ApiKeyService
from tenancy.audit.log import Actor
from tether.core.errors import Unauthenticated
from tether.core.settings import Settings


def provide_principal(request: Request[Any, Any, Any]) -> Principal:
    principal = request.scope.get("user")
    if not isinstance(principal, Principal):
        raise Unauthenticated()
    return principal


def provide_api_key_service(
    db_session: NamedDependency[AsyncSession],
    principal: NamedDependency[Principal],
    settings: NamedDependency[Settings],
) -> ApiKeyService:
    return ApiKeyService(db_session, principal.tenant_id, Actor.of(principal), settings.access)
