"""Providers for the recap."""

from __future__ import annotations

from litestar.datastructures import State
from litestar.di import NamedDependency
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.principal import Principal
from tenancy.relationships.directory import RelationshipDirectory
from tether.recap.services import RecapService


def provide_recap_service(
    state: State,
    db_session: NamedDependency[AsyncSession],
    relationship_directory: NamedDependency[RelationshipDirectory],
    principal: NamedDependency[Principal],
) -> RecapService:
    enforcer = state.policy.for_tenant(principal.tenant_id)
    return RecapService(db_session, relationship_directory, principal, enforcer)
