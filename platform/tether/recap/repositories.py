"""What a recap reads: the relationship's latest sessions, recent user turns, its
commitments (expired ones too: a plan that just passed is the best thing to ask about)
and recent feelings. Scoped by the RelationshipScope given at construction."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import ColumnElement, Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.ids import RelationshipScope
from tether.memories.enums import MemoryType
from tether.recall.models import Memory
from tether.turns.models import ChatSession, Turn


class RecapRepository:
    def __init__(self, session: AsyncSession, scope: RelationshipScope) -> None:
        self._session = session
        self._scope = scope

    def _memories(self, include_private: bool) -> Select[tuple[Memory]]:
        criteria: list[ColumnElement[bool]] = [
            Memory.relationship_id == self._scope.relationship_id,
            Memory.tenant_id == self._scope.tenant_id,
            Memory.deleted_at.is_(None),
        ]
        if not include_private:
            criteria.append(Memory.private_to_creator.is_(False))
        return select(Memory).where(*criteria)

    def _turns(self) -> Select[tuple[Turn]]:
        return select(Turn).where(
            Turn.relationship_id == self._scope.relationship_id,
            Turn.tenant_id == self._scope.tenant_id,
        )

    async def latest_sessions(self, before: datetime, limit: int) -> list[ChatSession]:
        statement = (
            select(ChatSession)
            .where(
                ChatSession.relationship_id == self._scope.relationship_id,
                ChatSession.tenant_id == self._scope.tenant_id,
                ChatSession.opened_at <= before,
                ChatSession.turn_count > 0,
            )
            .order_by(ChatSession.last_turn_at.desc())
            .limit(limit)
        )
        return list((await self._session.execute(statement)).scalars())

    async def user_turns_since(self, since: datetime, until: datetime, limit: int) -> list[Turn]:
        """The newest ``limit`` user turns in the window, oldest first."""
        statement = (
            self._turns()
            .where(Turn.role == "user", Turn.at >= since, Turn.at <= until)
            .order_by(Turn.at.desc(), Turn.id.desc())
            .limit(limit)
        )
        return list(reversed(list((await self._session.execute(statement)).scalars())))

    async def session_turns(self, session_id: str, limit: int) -> list[Turn]:
        statement = (
            self._turns()
            .where(Turn.session_id == session_id)
            .order_by(Turn.at, Turn.id)
            .limit(limit)
        )
        return list((await self._session.execute(statement)).scalars())

    async def turns(self, ids: Sequence[object]) -> list[Turn]:
        if not ids:
            return []
        statement = self._turns().where(Turn.id.in_(ids)).order_by(Turn.at, Turn.id)
        return list((await self._session.execute(statement)).scalars())

    async def commitments(
        self, not_before: datetime, include_private: bool, limit: int
    ) -> list[Memory]:
        """Commitments not superseded and not expired before ``not_before``: active ones,
        and those only the expiry sweep deactivated (their plan's day passed; a forget or
        a deactivation before that day leaves ``updated_at`` before ``expires_at``)."""
        statement = (
            self._memories(include_private)
            .where(
                Memory.memory_type == MemoryType.COMMITMENT.value,
                Memory.is_active.is_(True)
                | (Memory.expires_at.is_not(None) & (Memory.updated_at >= Memory.expires_at)),
                Memory.superseded_by.is_(None),
                Memory.expires_at.is_(None) | (Memory.expires_at > not_before),
            )
            .order_by(Memory.created_at.desc())
            .limit(limit)
        )
        return list((await self._session.execute(statement)).scalars())

    async def feelings(
        self, since: datetime, until: datetime, include_private: bool, limit: int
    ) -> list[Memory]:
        """Feelings in the window, superseded ones too (they are the trajectory)."""
        statement = (
            self._memories(include_private)
            .where(
                Memory.memory_type == MemoryType.EMOTION.value,
                Memory.occurred_at >= since,
                Memory.occurred_at <= until,
            )
            .order_by(Memory.occurred_at.desc())
            .limit(limit)
        )
        return list(reversed(list((await self._session.execute(statement)).scalars())))

    async def session_memories(self, session_id: str, include_private: bool) -> list[Memory]:
        statement = self._memories(include_private).where(
            Memory.source_session_id == session_id,
            Memory.is_active.is_(True),
            Memory.superseded_by.is_(None),
        )
        return list((await self._session.execute(statement)).scalars())

    async def last_contact(self, until: datetime) -> datetime | None:
        statement = select(func.max(Turn.at)).where(
            Turn.relationship_id == self._scope.relationship_id,
            Turn.tenant_id == self._scope.tenant_id,
            Turn.at <= until,
        )
        return (await self._session.execute(statement)).scalar_one_or_none()
