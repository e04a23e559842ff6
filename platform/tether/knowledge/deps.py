"""Providers for the knowledge-base API, and the process's engine."""

from __future__ import annotations

from litestar.datastructures import State
from litestar.di import NamedDependency
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.principal import Principal
from tether.core.resources import Resources
from tether.knowledge.builtin import BuiltinRagEngine
from tether.knowledge.documents import DocumentService
from tether.knowledge.file_stores import Files
from tether.knowledge.queries import KnowledgeQueryService
from tether.knowledge.services import KnowledgeBaseService
from tether.recall.tenant_embedders import TenantEmbedders
from tether.recall.weights import rank_weights

_ENGINE = "knowledge_engine"


def knowledge_engine(state: State) -> BuiltinRagEngine:
    """This app's engine, made on first use; its index cache lives as long as the app's
    resources. The context builder passes it to ``knowledge_for_context``."""
    resources: Resources = state.resources
    made: tuple[Resources, BuiltinRagEngine] | None = state.get(_ENGINE)
    if made is None or made[0] is not resources:
        embedders: TenantEmbedders = state.embedders
        settings = resources.settings
        engine = BuiltinRagEngine(
            resources.sessions,
            embedders,
            rank_weights(settings),
            settings,
        )
        made = state[_ENGINE] = (resources, engine)
    return made[1]


def provide_knowledge_base_service(
    db_session: NamedDependency[AsyncSession],
    principal: NamedDependency[Principal],
    resources: NamedDependency[Resources],
) -> KnowledgeBaseService:
    files = Files(db_session, resources.sessions, principal.tenant_id, resources.settings.files)
    return KnowledgeBaseService(db_session, principal, files)


def provide_document_service(
    state: State,
    db_session: NamedDependency[AsyncSession],
    principal: NamedDependency[Principal],
    resources: NamedDependency[Resources],
    knowledge_base_service: NamedDependency[KnowledgeBaseService],
) -> DocumentService:
    settings = resources.settings
    return DocumentService(
        db_session,
        principal,
        knowledge_base_service,
        resources.tasks,
        settings.knowledge,
        resources.sessions,
        state.quotas,
        settings.files,
    )


def provide_knowledge_query_service(
    state: State,
    principal: NamedDependency[Principal],
    resources: NamedDependency[Resources],
    knowledge_base_service: NamedDependency[KnowledgeBaseService],
) -> KnowledgeQueryService:
    return KnowledgeQueryService(
        principal, knowledge_base_service, knowledge_engine(state), resources.settings.knowledge
    )
