"""Providers for turn ingestion and sessions."""

from __future__ import annotations

from litestar.datastructures import State
from litestar.di import NamedDependency
from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.relationships.directory import RelationshipDirectory
from tether.core.resources import Resources
from tether.core.settings import Settings
from tether.privacy.tenant_filters import TenantFilters
from tether.turns.claims import TurnClaims
from tether.turns.services import IngestService
from tether.turns.sessions import SessionService


def provide_ingest_service(
    state: State,
    db_session: NamedDependency[AsyncSession],
    relationship_directory: NamedDependency[RelationshipDirectory],
    resources: NamedDependency[Resources],
    settings: NamedDependency[Settings],
) -> IngestService:
    filters: TenantFilters = state.privacy_filters
    claims: TurnClaims = state.turn_claims
    return IngestService(
        db_session,
        relationship_directory,
        claims,
        resources.tasks,
        filters,
        settings,
        state.quotas,
    )


def provide_session_service(
    db_session: NamedDependency[AsyncSession],
    relationship_directory: NamedDependency[RelationshipDirectory],
    redis: NamedDependency[Redis],
    resources: NamedDependency[Resources],
) -> SessionService:
    return SessionService(db_session, relationship_directory, redis, resources.tasks)
