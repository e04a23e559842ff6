"""SQL for memories, their versions and the consolidation log. Every statement is
scoped by the RelationshipScope the repository was built with."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Select, func, or_, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.ids import RelationshipScope
from tether.memories.models import ConsolidationRecord, MemoryVersion
from tether.recall.models import Memory, active_now


class _Scoped:
    def __init__(self, session: AsyncSession, scope: RelationshipScope) -> None:
        self._session = session
        self._scope = scope


class MemoryRepository(_Scoped):
    def _in_scope(self) -> tuple[ColumnElement[bool], ...]:
        return (
            Memory.relationship_id == self._scope.relationship_id,
            Memory.tenant_id == self._scope.tenant_id,
            Memory.deleted_at.is_(None),
        )

    def _select(self) -> Select[tuple[Memory]]:
        return select(Memory).where(*self._in_scope())

    async def get(self, memory_id: uuid.UUID, *, for_update: bool = False) -> Memory | None:
        statement = self._select().where(Memory.id == memory_id)
        if for_update:
            statement = statement.with_for_update()
        return (await self._session.execute(statement)).scalar_one_or_none()

    async def by_external_ids(self, external_ids: Sequence[str]) -> dict[str, Memory]:
        """Including deleted memories: an external id is never reused, so a retried
        import does not bring back what was deleted."""
        if not external_ids:
            return {}
        statement = select(Memory).where(
            Memory.relationship_id == self._scope.relationship_id,
            Memory.tenant_id == self._scope.tenant_id,
            Memory.external_id.in_(external_ids),
        )
        rows = (await self._session.execute(statement)).scalars()
        return {row.external_id: row for row in rows if row.external_id is not None}

    async def page(
        self,
        after: uuid.UUID | None,
        limit: int,
        *criteria: ColumnElement[bool],
        newest_first: bool = False,
    ) -> list[Memory]:
        order = Memory.id.desc() if newest_first else Memory.id
        statement = self._select().where(*criteria).order_by(order).limit(limit)
        if after is not None:
            statement = statement.where(Memory.id < after if newest_first else Memory.id > after)
        return list((await self._session.execute(statement)).scalars())

    async def active(self, now: datetime) -> list[Memory]:
        """The memories that are true now and not a creator's private note: what
        consolidation compares the pipeline's candidates with. A private note is the
        creator's, not something the user said, so a conversation never updates,
        supersedes or forgets it."""
        statement = (
            self._select()
            .where(*active_now(now), Memory.private_to_creator.is_(False))
            .order_by(Memory.id)
        )
        return list((await self._session.execute(statement)).scalars())

    def _held(self) -> tuple[ColumnElement[bool], ...]:
        """Open conflicts: held back, and neither accepted nor dismissed since."""
        return (
            Memory.conflicts_with.is_not(None),
            Memory.is_active.is_(False),
            Memory.superseded_by.is_(None),
        )

    async def held_against(self, memory_id: uuid.UUID) -> list[Memory]:
        """The memories held back in an open conflict with this one."""
        statement = self._select().where(*self._held(), Memory.conflicts_with == memory_id)
        return list((await self._session.execute(statement.order_by(Memory.id))).scalars())

    async def conflicts(
        self, after: uuid.UUID | None, limit: int, *criteria: ColumnElement[bool]
    ) -> list[tuple[Memory, Memory | None]]:
        """Open conflicts as (held, the memory it conflicts with, None if that one was
        deleted since), oldest first."""
        held = await self.page(after, limit, *self._held(), *criteria)
        ids = [m.conflicts_with for m in held if m.conflicts_with is not None]
        statement = self._select().where(Memory.id.in_(ids))
        others = {m.id: m for m in (await self._session.execute(statement)).scalars()}
        return [(m, others.get(m.conflicts_with)) for m in held if m.conflicts_with]

    async def insert(self, rows: Sequence[dict[str, Any]]) -> set[uuid.UUID]:
        """Insert; a row whose external id exists is skipped. The ids inserted."""
        if not rows:
            return set()
        values = [
            {
                **row,
                "relationship_id": self._scope.relationship_id,
                "tenant_id": self._scope.tenant_id,
            }
            for row in rows
        ]
        statement = insert(Memory).values(values).on_conflict_do_nothing().returning(Memory.id)
        return set((await self._session.execute(statement)).scalars())

    async def reinforce(
        self, memory_ids: Sequence[uuid.UUID], at: datetime, step: float, cap: float
    ) -> int:
        statement = (
            update(Memory)
            .where(*self._in_scope(), Memory.id.in_(memory_ids))
            .values(
                strength=func.least(Memory.strength + step, cap),
                recall_count=Memory.recall_count + 1,
                last_recalled_at=at,
            )
        )
        result = await self._session.execute(statement)
        return int(result.rowcount or 0)  # type: ignore[attr-defined]


class MemoryVersionRepository(_Scoped):
    async def add(self, **values: Any) -> None:
        self._session.add(
            MemoryVersion(
                relationship_id=self._scope.relationship_id,
                tenant_id=self._scope.tenant_id,
                **values,
            )
        )

    async def of(
        self, memory_id: uuid.UUID, after: uuid.UUID | None, limit: int
    ) -> list[MemoryVersion]:
        statement = (
            select(MemoryVersion)
            .where(
                MemoryVersion.relationship_id == self._scope.relationship_id,
                MemoryVersion.tenant_id == self._scope.tenant_id,
                MemoryVersion.memory_id == memory_id,
            )
            .order_by(MemoryVersion.id)
            .limit(limit)
        )
        if after is not None:
            statement = statement.where(MemoryVersion.id > after)
        return list((await self._session.execute(statement)).scalars())


class ConsolidationLogRepository(_Scoped):
    async def add(self, **values: Any) -> None:
        self._session.add(
            ConsolidationRecord(
                relationship_id=self._scope.relationship_id,
                tenant_id=self._scope.tenant_id,
                **values,
            )
        )

    async def page(
        self,
        after: uuid.UUID | None,
        limit: int,
        session_id: str | None,
        include_private: bool,
        memory_id: uuid.UUID | None = None,
        layers: Sequence[str] | None = None,
    ) -> list[ConsolidationRecord]:
        """``layers``: the memory layers the reader may see (None: every layer). A
        record about a memory the reader may not see is as hidden as the memory."""
        statement = (
            select(ConsolidationRecord)
            .where(
                ConsolidationRecord.relationship_id == self._scope.relationship_id,
                ConsolidationRecord.tenant_id == self._scope.tenant_id,
            )
            .order_by(ConsolidationRecord.id)
            .limit(limit)
        )
        if session_id is not None:
            statement = statement.where(ConsolidationRecord.session_id == session_id)
        if memory_id is not None:  # the decisions that made or touched this memory
            statement = statement.where(
                (ConsolidationRecord.result_memory_id == memory_id)
                | (ConsolidationRecord.target_memory_id == memory_id)
            )
        if after is not None:
            statement = statement.where(ConsolidationRecord.id > after)
        hidden: list[ColumnElement[bool]] = []
        if not include_private:
            # Also records written before the pipeline stopped comparing candidates
            # with private notes.
            hidden.append(Memory.private_to_creator.is_(True))
        if layers is not None:
            hidden.append(Memory.layer.not_in(list(layers)))
        if hidden:
            statement = statement.where(*self._touches_none_of(or_(*hidden)))
        return list((await self._session.execute(statement)).scalars())

    def _touches_none_of(self, hidden: ColumnElement[bool]) -> tuple[ColumnElement[bool], ...]:
        private = select(Memory.id).where(
            Memory.relationship_id == self._scope.relationship_id,
            Memory.tenant_id == self._scope.tenant_id,
            hidden,
        )
        return tuple(
            column.is_(None) | column.not_in(private)
            for column in (
                ConsolidationRecord.target_memory_id,
                ConsolidationRecord.result_memory_id,
            )
        )
