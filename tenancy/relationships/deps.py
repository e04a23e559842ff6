"""Providers for relationships."""

from __future__ import annotations

from litestar.di import NamedDependency
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.principal import Principal
from tenancy.relationships.services import RelationshipService


def provide_relationship_service(
    db_session: NamedDependency[AsyncSession], principal: NamedDependency[Principal]
) -> RelationshipService:
    return RelationshipService(db_session, principal)
