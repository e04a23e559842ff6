"""Providers for the recap."""

from __future__ import annotations

from collections.abc import AsyncGenerator

from litestar.datastructures import State
from litestar.di import NamedDependency
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.principal import Principal
from tenancy.relationships.directory import RelationshipDirectory
from tether.core.settings import Settings
from tether.providers.configured import chat_provider
from tether.recap.services import RecapService


async def provide_recap_service(
    state: State,
    db_session: NamedDependency[AsyncSession],
    relationship_directory: NamedDependency[RelationshipDirectory],
    principal: NamedDependency[Principal],
    settings: NamedDependency[Settings],
) -> AsyncGenerator[RecapService, None]:
    """The recap service, with the configured LLM (TETHER_LLM__*) when there is one."""
    enforcer = state.policy.for_tenant(principal.tenant_id)
    chat = chat_provider(settings)
    try:
        yield RecapService(db_session, relationship_directory, principal, enforcer, chat)
    finally:
        if chat is not None:
            await chat.aclose()


def provide_rules_recap_service(
    state: State,
    db_session: NamedDependency[AsyncSession],
    relationship_directory: NamedDependency[RelationshipDirectory],
    principal: NamedDependency[Principal],
) -> RecapService:
    """The recap without the LLM (the stored summary, else the rules): for pages that
    render it on every visit, where an LLM call per page view would cost too much."""
    enforcer = state.policy.for_tenant(principal.tenant_id)
    return RecapService(db_session, relationship_directory, principal, enforcer, None)
