"""Forgetting one session: its turns, its row, its log entries, and the memories that
only its turns support. A memory another session confirmed loses this session's turns
from its sources and stays; a memory a forgotten one had superseded is active again."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.ids import RelationshipScope
from tether.memories.models import ConsolidationRecord, MemoryVersion
from tether.recall.models import Memory
from tether.turns.models import ChatSession, Turn


async def _session_turns(
    session: AsyncSession, scope: RelationshipScope, session_id: str
) -> set[uuid.UUID]:
    statement = select(Turn.id).where(
        Turn.relationship_id == scope.relationship_id,
        Turn.tenant_id == scope.tenant_id,
        Turn.session_id == session_id,
    )
    return set((await session.execute(statement)).scalars())


async def _touched(
    session: AsyncSession, scope: RelationshipScope, session_id: str, turn_ids: set[uuid.UUID]
) -> list[Memory]:
    statement = select(Memory).where(
        Memory.relationship_id == scope.relationship_id,
        Memory.tenant_id == scope.tenant_id,
        (Memory.source_session_id == session_id) | Memory.source_turn_ids.overlap(list(turn_ids)),
    )
    return list((await session.execute(statement)).scalars())


def _only_from(memory: Memory, session_id: str, turn_ids: set[uuid.UUID]) -> bool:
    if memory.origin == "manual":
        return False  # typed by a person, not derived from the talk
    sources = set(memory.source_turn_ids)
    return sources <= turn_ids and (bool(sources) or memory.source_session_id == session_id)


async def forget_session(
    session: AsyncSession, scope: RelationshipScope, session_id: str, now: datetime
) -> tuple[int, int]:
    """Remove what ``session_id`` produced; (turns, memories) removed."""
    turn_ids = await _session_turns(session, scope, session_id)
    memories = await _touched(session, scope, session_id, turn_ids)
    doomed = [m.id for m in memories if _only_from(m, session_id, turn_ids)]
    for memory in memories:
        if memory.id not in doomed:
            memory.source_turn_ids = [t for t in memory.source_turn_ids if t not in turn_ids]
            memory.updated_at = now
    in_scope = (
        Memory.relationship_id == scope.relationship_id,
        Memory.tenant_id == scope.tenant_id,
    )
    if doomed:
        await session.execute(
            update(Memory)
            .where(*in_scope, Memory.superseded_by.in_(doomed), Memory.deleted_at.is_(None))
            .values(superseded_by=None, is_active=True, updated_at=now)
        )
        await session.execute(
            delete(MemoryVersion).where(
                MemoryVersion.relationship_id == scope.relationship_id,
                MemoryVersion.tenant_id == scope.tenant_id,
                MemoryVersion.memory_id.in_(doomed),
            )
        )
        await session.execute(delete(Memory).where(*in_scope, Memory.id.in_(doomed)))
    await session.execute(
        delete(ConsolidationRecord).where(
            ConsolidationRecord.relationship_id == scope.relationship_id,
            ConsolidationRecord.tenant_id == scope.tenant_id,
            ConsolidationRecord.session_id == session_id,
        )
    )
    await session.execute(
        delete(Turn).where(
            Turn.relationship_id == scope.relationship_id,
            Turn.tenant_id == scope.tenant_id,
            Turn.session_id == session_id,
        )
    )
    await session.execute(
        delete(ChatSession).where(
            ChatSession.relationship_id == scope.relationship_id,
            ChatSession.tenant_id == scope.tenant_id,
            ChatSession.session_id == session_id,
        )
    )
    return len(turn_ids), len(doomed)
