"""Providers for the context builder."""

from __future__ import annotations

from datetime import UTC, datetime

from litestar.datastructures import State
from litestar.di import NamedDependency
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.policy import PolicyEnforcer
from tenancy.access.principal import Principal
from tenancy.ids import RelationshipScope
from tenancy.relationships.directory import RelationshipCard, RelationshipDirectory
from tenancy.resolve.cache import ResolveCache
from tenancy.resolve.services import ResolveService
from tenancy.settings.cache import TenantSettingsCache
from tenancy.settings.schemas import TenantSettingsDocument
from tether.context.schemas import ContextRequest
from tether.context.services import ContextService
from tether.core.ids import TenantId
from tether.core.resources import Resources
from tether.knowledge.deps import knowledge_engine
from tether.knowledge.engine import KnowledgeResult
from tether.knowledge.retrieval import knowledge_for_context
from tether.personas.cache import ProfileCache
from tether.personas.services import PersonaProfileReader
from tether.profiles.consent_cache import consent_cache
from tether.profiles.services import ConsentedProfile
from tether.recall.services import Recall
from tether.recap.schemas import Recap
from tether.recap.services import RecapService
from tether.turns.flags import FlagRepository, Layers
from tether.turns.flags_cache import FlagCache
from tether.turns.working_memory import WorkingMemory


def provide_context_service(
    state: State,
    db_session: NamedDependency[AsyncSession],
    resources: NamedDependency[Resources],
    relationship_directory: NamedDependency[RelationshipDirectory],
    recall: NamedDependency[Recall],
    principal: NamedDependency[Principal],
) -> ContextService:
    enforcer: PolicyEnforcer = state.policy.for_tenant(principal.tenant_id)
    settings = resources.settings
    engine = knowledge_engine(state)

    async def knowledge(
        card: RelationshipCard, request: ContextRequest, deadline_ms: int
    ) -> KnowledgeResult:
        return await knowledge_for_context(
            db_session,
            principal.tenant_id,
            card.creator_persona_id,
            request.knowledge_base_id,
            request.query,
            settings.knowledge.top_k,
            deadline_ms,
            engine,
        )

    cache: TenantSettingsCache = state.tenant_settings

    async def tenant_settings() -> TenantSettingsDocument:
        return await cache.get(TenantId(principal.tenant_id))

    recaps = RecapService(db_session, relationship_directory, principal, enforcer)

    async def recap(scope: RelationshipScope, session_id: str | None) -> Recap:
        return await recaps.for_scope(scope, datetime.now(UTC), session_id)

    flag_cache = FlagCache(resources.redis)

    async def flags(scope: RelationshipScope, session_id: str | None) -> Layers:
        cached = await flag_cache.get(scope.relationship_id, session_id)
        if cached is not None:
            return cached
        layers = await FlagRepository(db_session, scope).layers(session_id)
        await flag_cache.put(scope.relationship_id, session_id, layers)
        return layers

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
        ConsentedProfile(db_session, principal, enforcer, consent_cache(resources)),
        knowledge,
        recap,
        flags,
        state.access_log,
        tenant_settings,
    )
