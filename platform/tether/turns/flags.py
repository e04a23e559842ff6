"""Session agent flags (decision 0051): does a session's talk become memories, may its
context use knowledge bases. Each flag is decided by the first that says: the request
(a turn's capture, a context call), the session, the persona, the tenant."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from sqlalchemy import select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.ids import RelationshipScope
from tenancy.models import CreatorPersona, Relationship, Tenant
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
                Tenant.session_memory_enabled,
                Tenant.session_knowledge_enabled,
                Tenant.keep_turns_without_memory,
            )
            .select_from(Relationship)
            .join(Tenant, Tenant.id == Relationship.tenant_id)
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
        row = (await self._session.execute(statement)).one()
        return Layers(*row)

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


class TenantDefaultsRepository:
    """The tenant's session defaults (its own row only)."""

    def __init__(self, session: AsyncSession, tenant_id: uuid.UUID) -> None:
        self._session = session
        self._tenant_id = tenant_id

    async def get(self) -> tuple[bool, bool, bool]:
        statement = select(
            Tenant.session_memory_enabled,
            Tenant.session_knowledge_enabled,
            Tenant.keep_turns_without_memory,
        ).where(Tenant.id == self._tenant_id)
        memory, knowledge, keep = (await self._session.execute(statement)).one()
        return memory, knowledge, keep

    async def put(self, memory: bool, knowledge: bool, keep: bool) -> None:
        await self._session.execute(
            update(Tenant)
            .where(Tenant.id == self._tenant_id)
            .values(
                session_memory_enabled=memory,
                session_knowledge_enabled=knowledge,
                keep_turns_without_memory=keep,
            )
        )
