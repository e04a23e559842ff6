"""Providers for the context builder."""

from __future__ import annotations

from litestar.datastructures import State
from litestar.di import NamedDependency
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.policy import PolicyEnforcer
from tenancy.access.principal import Principal
from tenancy.relationships.directory import RelationshipDirectory
from tenancy.resolve.cache import ResolveCache
from tenancy.resolve.services import ResolveService
from tether.context.services import ContextService
from tether.core.resources import Resources
from tether.personas.cache import ProfileCache
from tether.personas.services import PersonaProfileReader
from tether.profiles.services import ConsentedProfile
from tether.recall.services import Recall
from tether.turns.working_memory import WorkingMemory


def provide_context_service(
    state: State,
    db_session: NamedDependency[AsyncSession],
    resources: NamedDependency[Resources],
    relationship_directory: NamedDependency[RelationshipDirectory],
    recall: NamedDependency[Recall],
    principal: NamedDependency[Principal],
) -> ContextService:
    enforcer: PolicyEnforcer = state.policy
    settings = resources.settings
    resolver = ResolveService(
        db_session,
        ResolveCache(resources.redis, settings.identity.cache_ttl_seconds),
        principal.tenant_id,
    )
    profiles = PersonaProfileReader(db_session, ProfileCache(resources.redis), principal.tenant_id)
    return ContextService(
        relationship_directory,
        resolver,
        profiles,
        recall,
        WorkingMemory(resources.redis),
        principal,
        enforcer,
        settings,
        ConsentedProfile(db_session, principal, enforcer),
    )
