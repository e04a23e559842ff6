"""Providers for recall and search."""

from __future__ import annotations

from litestar.datastructures import State
from litestar.di import NamedDependency
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.policy import PolicyEnforcer
from tenancy.access.principal import Principal
from tenancy.relationships.directory import RelationshipDirectory
from tether.core.resources import Resources
from tether.recall.cold import ColdReader
from tether.recall.local import LocalCopies
from tether.recall.reinforcement import ReinforcementBuffer
from tether.recall.search import SearchService
from tether.recall.services import Recall
from tether.recall.store import PartitionStore
from tether.recall.tenant_embedders import TenantEmbedders
from tether.recall.versions import PartitionVersions
from tether.recall.weights import rank_weights


def partition_store(resources: Resources, embedding_model: str) -> PartitionStore:
    """An API process's partition store (one per event loop)."""
    settings = resources.settings
    recall, weights = settings.recall, rank_weights(settings)
    return PartitionStore(
        PartitionVersions(resources.hot_redis, resources.redis, retry=True),
        resources.hot_redis,
        resources.bulk_redis,
        ColdReader(weights, embedding_model),
        weights,
        ttl_seconds=recall.hot_ttl_seconds,
        local=LocalCopies(recall.local_partitions, recall.local_megabytes * 1024 * 1024),
        sessions=resources.sessions,
    )


def provide_recall(
    state: State, db_session: NamedDependency[AsyncSession], resources: NamedDependency[Resources]
) -> Recall:
    store: PartitionStore = state.partitions
    embedders: TenantEmbedders = state.embedders
    settings = resources.settings
    reinforcement: ReinforcementBuffer = state.reinforcement
    return Recall(db_session, store, embedders, reinforcement, rank_weights(settings), settings)


def provide_search_service(
    state: State,
    relationship_directory: NamedDependency[RelationshipDirectory],
    recall: NamedDependency[Recall],
    principal: NamedDependency[Principal],
) -> SearchService:
    enforcer: PolicyEnforcer = state.policy.for_tenant(principal.tenant_id)
    return SearchService(relationship_directory, recall, principal, enforcer, state.access_log)
