"""Session agent flags (decision 0051): does a session's talk become memories, may its
context use knowledge bases. Each flag is decided by the first that says: the request
(a turn's capture, a context call), the session, the persona, the tenant."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

import msgspec
from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.ids import RelationshipScope
from tenancy.models import CreatorPersona, Relationship
from tenancy.settings.repositories import sessions_section
from tenancy.settings.schemas import SessionsTenantSettings
from tether.turns.models import ChatSession

Source = Literal["request", "session", "persona", "tenant"]


@dataclass(frozen=True, slots=True)
class Layers:
    """What each level says (None: it does not)."""

    session_memory: bool | None
    session_knowledge: bool | None
    persona_memory: bool | None
    persona_knowledge: bool | None
    tenant_memory: bool
    tenant_knowledge: bool
    keep_turns_without_memory: bool


@dataclass(frozen=True, slots=True)
class Flags:
    memory_enabled: bool
    knowledge_enabled: bool
    memory_source: Source
    knowledge_source: Source
    keep_turns_without_memory: bool


def _first(
    request: bool | None, session: bool | None, persona: bool | None, tenant: bool
) -> tuple[bool, Source]:
    for value, source in ((request, "request"), (session, "session"), (persona, "persona")):
        if value is not None:
            return value, source  # type: ignore[return-value]
    return tenant, "tenant"


def decide(layers: Layers, memory: bool | None = None, knowledge: bool | None = None) -> Flags:
    m, m_source = _first(memory, layers.session_memory, layers.persona_memory, layers.tenant_memory)
    k, k_source = _first(
        knowledge, layers.session_knowledge, layers.persona_knowledge, layers.tenant_knowledge
    )
    return Flags(m, k, m_source, k_source, layers.keep_turns_without_memory)


class FlagRepository:
    """The flags' levels for one relationship, in one statement."""

    def __init__(self, session: AsyncSession, scope: RelationshipScope) -> None:
        self._session = session
        self._scope = scope

    async def layers(self, session_id: str | None) -> Layers:
        statement = (
            select(
                ChatSession.memory_enabled,
                ChatSession.knowledge_enabled,
                CreatorPersona.memory_enabled,
                CreatorPersona.knowledge_enabled,
                sessions_section(self._scope.tenant_id),
            )
            .select_from(Relationship)
            .join(
                CreatorPersona,
                (CreatorPersona.id == Relationship.creator_persona_id)
                & (CreatorPersona.tenant_id == Relationship.tenant_id),
            )
            .outerjoin(
                ChatSession,
                (ChatSession.relationship_id == Relationship.id)
                & (ChatSession.tenant_id == Relationship.tenant_id)
                & (ChatSession.session_id == (session_id or "")),
            )
            .where(
                Relationship.tenant_id == self._scope.tenant_id,
                Relationship.id == self._scope.relationship_id,
            )
        )
        session_m, session_k, persona_m, persona_k, section = (
            await self._session.execute(statement)
        ).one()
        tenant = tenant_level(section)
        return Layers(
            session_m,
            session_k,
            persona_m,
            persona_k,
            tenant.memory_enabled,
            tenant.knowledge_enabled,
            tenant.keep_turns_without_memory,
        )

    async def set_session(
        self, session_id: str, memory: bool | None, knowledge: bool | None
    ) -> None:
        """Store a session's flags (None: inherit), creating its row if it has none."""
        now = datetime.now(UTC)
        values = {"memory_enabled": memory, "knowledge_enabled": knowledge}
        statement = (
            insert(ChatSession)
            .values(
                relationship_id=self._scope.relationship_id,
                tenant_id=self._scope.tenant_id,
                session_id=session_id,
                opened_at=now,
                last_turn_at=now,
                turn_count=0,
                **values,
            )
            .on_conflict_do_update(
                index_elements=[ChatSession.relationship_id, ChatSession.session_id],
                set_=values,
            )
        )
        await self._session.execute(statement)


def tenant_level(section: object) -> SessionsTenantSettings:
    """The tenant's ``sessions`` settings section as stored (None: the defaults)."""
    if section is None:
        return SessionsTenantSettings()
    return msgspec.convert(section, SessionsTenantSettings)
