"""Tenant-wide session maintenance for the periodic sweep. These statements touch
session bookkeeping only (ids and times), never content, so they are the one place
allowed to look across relationships."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from tether.turns.models import ChatSession


@dataclass(frozen=True, slots=True)
class SessionRef:
    tenant_id: uuid.UUID
    relationship_id: uuid.UUID
    session_id: str


async def close_idle_sessions(
    session: AsyncSession, idle_before: datetime, now: datetime, limit: int
) -> list[SessionRef]:
    """End up to ``limit`` sessions whose last turn is older than ``idle_before``."""
    idle = (
        select(ChatSession.relationship_id, ChatSession.session_id)
        .where(ChatSession.ended_at.is_(None), ChatSession.last_turn_at < idle_before)
        .limit(limit)
        .with_for_update(skip_locked=True)
        .cte("idle")
    )
    statement = (
        update(ChatSession)
        .where(
            ChatSession.relationship_id == idle.c.relationship_id,
            ChatSession.session_id == idle.c.session_id,
        )
        .values(ended_at=now, end_reason="idle")
        .returning(ChatSession.tenant_id, ChatSession.relationship_id, ChatSession.session_id)
    )
    return [SessionRef(*row) for row in await session.execute(statement)]


async def sessions_awaiting_extraction(
    session: AsyncSession, ended_before: datetime, limit: int
) -> list[SessionRef]:
    """Ended sessions whose extraction has not happened (a lost task, a queue outage)."""
    statement = (
        select(ChatSession.tenant_id, ChatSession.relationship_id, ChatSession.session_id)
        .where(
            ChatSession.ended_at.is_not(None),
            ChatSession.extracted_at.is_(None),
            ChatSession.ended_at < ended_before,
        )
        .order_by(ChatSession.ended_at)
        .limit(limit)
    )
    return [SessionRef(*row) for row in await session.execute(statement)]
