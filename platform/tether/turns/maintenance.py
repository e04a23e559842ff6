"""Session maintenance for the periodic sweep. Finding the due sessions looks across
tenants, through the system functions of migration 0017 (ids and times only); closing
them happens in a transaction bound to their tenant, like any other write."""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, text, tuple_, update
from sqlalchemy.ext.asyncio import AsyncSession

from tether.turns.models import ChatSession

_IDLE = text(
    "SELECT tenant_id, relationship_id, session_id FROM tether_idle_sessions(:before, :limit)"
)
_UNEXTRACTED = text(
    "SELECT tenant_id, relationship_id, session_id "
    "FROM tether_unextracted_sessions(:before, :limit)"
)


@dataclass(frozen=True, slots=True)
class SessionRef:
    tenant_id: uuid.UUID
    relationship_id: uuid.UUID
    session_id: str


def by_tenant(refs: list[SessionRef]) -> dict[uuid.UUID, list[SessionRef]]:
    grouped: dict[uuid.UUID, list[SessionRef]] = defaultdict(list)
    for ref in refs:
        grouped[ref.tenant_id].append(ref)
    return dict(grouped)


async def idle_sessions(
    session: AsyncSession, idle_before: datetime, limit: int
) -> list[SessionRef]:
    """Up to ``limit`` open sessions of any tenant whose last turn is older than
    ``idle_before``, oldest first."""
    rows = await session.execute(_IDLE, {"before": idle_before, "limit": limit})
    return [SessionRef(*row) for row in rows]


async def close_idle_sessions(
    session: AsyncSession, refs: list[SessionRef], idle_before: datetime, now: datetime
) -> list[SessionRef]:
    """End those of ``refs`` (sessions of the session's tenant) still idle; a session
    another transaction holds (a turn arriving) is left for the next sweep."""
    pairs = [(ref.relationship_id, ref.session_id) for ref in refs]
    idle = (
        select(ChatSession.relationship_id, ChatSession.session_id)
        .where(
            tuple_(ChatSession.relationship_id, ChatSession.session_id).in_(pairs),
            ChatSession.ended_at.is_(None),
            ChatSession.last_turn_at < idle_before,
        )
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
    """Ended sessions of any tenant whose extraction has not happened (a lost task, a
    queue outage), oldest first."""
    rows = await session.execute(_UNEXTRACTED, {"before": ended_before, "limit": limit})
    return [SessionRef(*row) for row in rows]
