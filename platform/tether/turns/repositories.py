"""SQL for raw turns and chat sessions. Every statement is scoped by the
RelationshipScope the repository was built with."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, func, literal, select, tuple_, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.ids import RelationshipScope
from tether.turns.models import ChatSession, Turn
from tether.turns.pending import PendingTurn


@dataclass(frozen=True, slots=True)
class SessionActivity:
    session_id: str
    turns: int
    first_at: datetime
    last_at: datetime


def activity_of(turns: Sequence[PendingTurn]) -> list[SessionActivity]:
    by_session: dict[str, list[PendingTurn]] = {}
    for turn in turns:
        by_session.setdefault(turn.session_id, []).append(turn)
    return [
        SessionActivity(sid, len(ts), min(t.at for t in ts), max(t.at for t in ts))
        for sid, ts in by_session.items()
    ]


class TurnRepository:
    def __init__(self, session: AsyncSession, scope: RelationshipScope) -> None:
        self._session = session
        self._scope = scope

    async def insert(self, turns: Sequence[PendingTurn]) -> list[PendingTurn]:
        """Insert what is not there yet (by id or idempotency key); the turns inserted."""
        if not turns:
            return []
        rows = [
            {
                "relationship_id": self._scope.relationship_id,
                "tenant_id": self._scope.tenant_id,
                "id": t.id,
                "session_id": t.session_id,
                "role": t.role,
                "text": t.text,
                "at": t.at,
                "masked": list(t.masked),
                "idempotency_key": t.idempotency_key,
                "memory_enabled": t.memory_enabled,
            }
            for t in turns
        ]
        statement = insert(Turn).values(rows).on_conflict_do_nothing().returning(Turn.id)
        inserted = set((await self._session.execute(statement)).scalars())
        return [t for t in turns if t.id in inserted]

    async def ids_for_idempotency_keys(self, keys: Sequence[str]) -> dict[str, uuid.UUID]:
        if not keys:
            return {}
        statement = select(Turn.idempotency_key, Turn.id).where(
            Turn.relationship_id == self._scope.relationship_id,
            Turn.tenant_id == self._scope.tenant_id,
            Turn.idempotency_key.in_(keys),
        )
        return {key: turn_id for key, turn_id in (await self._session.execute(statement)) if key}

    async def page(self, session_id: str | None, after: uuid.UUID | None, limit: int) -> list[Turn]:
        statement = (
            select(Turn)
            .where(
                Turn.relationship_id == self._scope.relationship_id,
                Turn.tenant_id == self._scope.tenant_id,
            )
            .order_by(Turn.id)
            .limit(limit)
        )
        if session_id is not None:
            statement = statement.where(Turn.session_id == session_id)
        if after is not None:
            statement = statement.where(Turn.id > after)
        return list((await self._session.execute(statement)).scalars())

    async def of_session(self, session_id: str) -> list[Turn]:
        """Every turn of one session in time order (extraction reads these)."""
        statement = (
            select(Turn)
            .where(
                Turn.relationship_id == self._scope.relationship_id,
                Turn.tenant_id == self._scope.tenant_id,
                Turn.session_id == session_id,
            )
            .order_by(Turn.at, Turn.id)
        )
        return list((await self._session.execute(statement)).scalars())

    async def by_ids(self, turn_ids: Sequence[uuid.UUID]) -> list[Turn]:
        if not turn_ids:
            return []
        statement = (
            select(Turn)
            .where(
                Turn.relationship_id == self._scope.relationship_id,
                Turn.tenant_id == self._scope.tenant_id,
                Turn.id.in_(turn_ids),
            )
            .order_by(Turn.at, Turn.id)
        )
        return list((await self._session.execute(statement)).scalars())

    async def count_in_session(self, session_id: str) -> int:
        statement = select(func.count()).where(
            Turn.relationship_id == self._scope.relationship_id,
            Turn.tenant_id == self._scope.tenant_id,
            Turn.session_id == session_id,
        )
        return int((await self._session.execute(statement)).scalar_one())


class ChatSessionRepository:
    def __init__(self, session: AsyncSession, scope: RelationshipScope) -> None:
        self._session = session
        self._scope = scope

    def _where(self, session_id: str) -> tuple[ColumnElement[bool], ...]:
        return (
            ChatSession.relationship_id == self._scope.relationship_id,
            ChatSession.tenant_id == self._scope.tenant_id,
            ChatSession.session_id == session_id,
        )

    async def record(self, activity: Sequence[SessionActivity]) -> None:
        """Count newly stored turns into their sessions; a turn reopens an ended one."""
        for item in sorted(activity, key=lambda a: a.session_id):  # stable lock order
            statement = insert(ChatSession).values(
                relationship_id=self._scope.relationship_id,
                tenant_id=self._scope.tenant_id,
                session_id=item.session_id,
                opened_at=item.first_at,
                last_turn_at=item.last_at,
                turn_count=item.turns,
            )
            excluded = statement.excluded
            statement = statement.on_conflict_do_update(
                index_elements=[ChatSession.relationship_id, ChatSession.session_id],
                set_={
                    "turn_count": ChatSession.turn_count + excluded.turn_count,
                    "last_turn_at": func.greatest(ChatSession.last_turn_at, excluded.last_turn_at),
                    "opened_at": func.least(ChatSession.opened_at, excluded.opened_at),
                    "ended_at": None,
                    "end_reason": None,
                    "extracted_at": None,
                },
            )
            await self._session.execute(statement)

    async def get(self, session_id: str) -> ChatSession | None:
        statement = select(ChatSession).where(*self._where(session_id))
        return (await self._session.execute(statement)).scalar_one_or_none()

    async def newest(self, after: tuple[datetime, str] | None, limit: int) -> list[ChatSession]:
        """The relationship's sessions, most recently opened first, after the keyset
        ``after`` (opened_at, session_id): a session's opening time never changes, so a
        page boundary stays put while turns arrive."""
        statement = select(ChatSession).where(
            ChatSession.relationship_id == self._scope.relationship_id,
            ChatSession.tenant_id == self._scope.tenant_id,
        )
        if after is not None:
            at, session_id = after
            statement = statement.where(
                tuple_(ChatSession.opened_at, ChatSession.session_id)
                < tuple_(literal(at), literal(session_id))
            )
        statement = statement.order_by(
            ChatSession.opened_at.desc(), ChatSession.session_id.desc()
        ).limit(limit)
        return list((await self._session.execute(statement)).scalars())

    async def end(self, session_id: str, reason: str, at: datetime) -> bool:
        """Close a session (creating its row if its turns are still queued); False if it
        was already closed."""
        statement = (
            insert(ChatSession)
            .values(
                relationship_id=self._scope.relationship_id,
                tenant_id=self._scope.tenant_id,
                session_id=session_id,
                opened_at=at,
                last_turn_at=at,
                turn_count=0,
                ended_at=at,
                end_reason=reason,
            )
            .on_conflict_do_update(
                index_elements=[ChatSession.relationship_id, ChatSession.session_id],
                set_={"ended_at": at, "end_reason": reason},
                where=ChatSession.ended_at.is_(None),
            )
            .returning(ChatSession.session_id)
        )
        return (await self._session.execute(statement)).scalar_one_or_none() is not None

    async def claim_for_extraction(self, session_id: str) -> ChatSession | None:
        """Lock an ended, not yet extracted session for this transaction (or None)."""
        statement = (
            select(ChatSession)
            .where(
                *self._where(session_id),
                ChatSession.ended_at.is_not(None),
                ChatSession.extracted_at.is_(None),
            )
            .with_for_update(skip_locked=True)
        )
        return (await self._session.execute(statement)).scalar_one_or_none()

    async def mark_extracted(self, session_id: str, at: datetime) -> None:
        statement = update(ChatSession).where(*self._where(session_id)).values(extracted_at=at)
        await self._session.execute(statement)
