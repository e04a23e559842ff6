"""Providers for the memory API."""

from __future__ import annotations

from litestar.datastructures import State
from litestar.di import NamedDependency
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.policy import PolicyEnforcer
from tenancy.access.principal import Principal
from tenancy.relationships.directory import RelationshipDirectory
from tether.core.settings import Settings
from tether.memories.conflicts import ConflictService
from tether.memories.services import MemoryService
from tether.recall.store import PartitionStore
from tether.recall.tenant_embedders import TenantEmbedders


def provide_memory_service(
    state: State,
    db_session: NamedDependency[AsyncSession],
    relationship_directory: NamedDependency[RelationshipDirectory],
    principal: NamedDependency[Principal],
    settings: NamedDependency[Settings],
) -> MemoryService:
    return _memory_service(state, db_session, relationship_directory, principal, settings, False)


def _memory_service(
    state: State,
    db_session: AsyncSession,
    relationship_directory: RelationshipDirectory,
    principal: Principal,
    settings: Settings,
    support_view: bool,
) -> MemoryService:
    enforcer: PolicyEnforcer = state.policy.for_tenant(principal.tenant_id)
    embedders: TenantEmbedders = state.embedders
    store: PartitionStore = state.partitions
    return MemoryService(
        db_session,
        relationship_directory,
        principal,
        enforcer,
        embedders,
        store.invalidate,
        settings,
        state.quotas,
        state.privacy_filters,
        state.access_log,
        support_view=support_view,
    )


def provide_conflict_service(
    state: State,
    db_session: NamedDependency[AsyncSession],
    relationship_directory: NamedDependency[RelationshipDirectory],
    principal: NamedDependency[Principal],
) -> ConflictService:
    store: PartitionStore = state.partitions
    return ConflictService(
        db_session,
        relationship_directory,
        principal,
        state.policy.for_tenant(principal.tenant_id),
        store.invalidate,
        state.privacy_filters,
    )


def provide_console_memory_service(
    state: State,
    db_session: NamedDependency[AsyncSession],
    relationship_directory: NamedDependency[RelationshipDirectory],
    principal: NamedDependency[Principal],
    settings: NamedDependency[Settings],
) -> MemoryService:
    """As the API's, with its reads recorded as ``support_view``."""
    return _memory_service(state, db_session, relationship_directory, principal, settings, True)
