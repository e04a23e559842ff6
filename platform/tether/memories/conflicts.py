"""Open conflicts (decision 0053): a newer memory the pipeline held back because the memory
it would have replaced has stronger evidence. Listing them, and resolving them in favour
of one memory through the API."""

from __future__ import annotations

import builtins
import uuid

from sqlalchemy import ColumnElement
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.policy import PolicyEnforcer
from tenancy.access.principal import Principal
from tenancy.relationships.directory import RelationshipDirectory
from tether.core.pagination import decode_cursor, next_cursor
from tether.memories import schemas as s
from tether.memories.errors import MemoryNotFound, MemoryNotResolvable
from tether.memories.privacy import mask_reason
from tether.memories.repositories import MemoryRepository
from tether.memories.services import read
from tether.memories.writer import Invalidate, MemoryWriter
from tether.privacy.tenant_filters import TenantFilters
from tether.recall.models import Memory
from tether.recall.services import may_see_private


def _held_open(memory: Memory) -> bool:
    return (
        memory.conflicts_with is not None
        and not memory.is_active
        and memory.superseded_by is None
        and memory.deleted_at is None
    )


def _current(memory: Memory | None) -> bool:
    return memory is not None and memory.is_active and memory.superseded_by is None


class ConflictService:
    def __init__(
        self,
        session: AsyncSession,
        directory: RelationshipDirectory,
        principal: Principal,
        enforcer: PolicyEnforcer,
        invalidate: Invalidate,
        privacy: TenantFilters,
    ) -> None:
        self._privacy = privacy
        self._session = session
        self._directory = directory
        self._principal = principal
        self._enforcer = enforcer
        self._invalidate = invalidate

    def _private_ok(self) -> bool:
        return may_see_private(self._enforcer, self._principal)

    def _visible(self) -> list[ColumnElement[bool]]:
        return [] if self._private_ok() else [Memory.private_to_creator.is_(False)]

    async def list(
        self, relationship_id: uuid.UUID, cursor: str | None, limit: int
    ) -> s.ConflictPage:
        """Open conflicts, oldest first."""
        scope = (await self._directory.open(relationship_id)).scope
        rows = await MemoryRepository(self._session, scope).conflicts(
            decode_cursor(cursor), limit, *self._visible()
        )
        items = [
            s.ConflictRead(
                id=held.id,
                held=read(held),
                existing=None if existing is None else read(existing),
                reason=(
                    "the memory it conflicted with was deleted"
                    if existing is None
                    else f"a {held.provenance} memory does not replace a {existing.provenance} one"
                ),
            )
            for held, existing in rows
            if existing is None or self._private_ok() or not existing.private_to_creator
        ]
        return s.ConflictPage(items, next_cursor([held for held, _ in rows], limit))

    async def resolve(
        self, relationship_id: uuid.UUID, memory_id: uuid.UUID, reason: str
    ) -> s.ConflictResolution:
        """The memory wins every open conflict it is part of: a held memory becomes active
        and replaces the one it conflicted with; an active one dismisses the memories held
        against it. Resolving again changes nothing."""
        scope = (await self._directory.open(relationship_id)).scope
        memories = MemoryRepository(self._session, scope)
        memory = await memories.get(memory_id, for_update=True)
        if memory is None or (memory.private_to_creator and not self._private_ok()):
            raise MemoryNotFound(f"no memory {memory_id}")
        writer = MemoryWriter(
            self._session, scope, None, self._invalidate, f"key:{self._principal.key_id}"
        )
        reason = await mask_reason(
            await self._privacy.for_tenant(self._session, scope.tenant_id), reason
        )
        why = reason or f"conflict resolved through the API in favour of {memory.id}"
        prevailed: builtins.list[Memory] = []
        other_id = memory.conflicts_with
        if _held_open(memory) and other_id is not None:
            other = await memories.get(other_id, for_update=True)
            memory = await writer.change(memory, "accepted", why, is_active=True)
            if other is not None and _current(other):
                other = await writer.change(
                    other, "superseded", why, is_active=False, superseded_by=memory.id
                )
                prevailed.append(other)
            if other is not None:
                prevailed += await self._dismiss(memories, writer, other.id, memory.id, why)
        elif _current(memory):
            prevailed += await self._dismiss(memories, writer, memory.id, memory.id, why)
        else:
            raise MemoryNotResolvable(f"memory {memory_id} is neither held nor current")
        await self._session.flush()
        return s.ConflictResolution(read(memory), [read(m) for m in prevailed])

    @staticmethod
    async def _dismiss(
        memories: MemoryRepository,
        writer: MemoryWriter,
        against: uuid.UUID,
        winner: uuid.UUID,
        why: str,
    ) -> builtins.list[Memory]:
        dismissed: builtins.list[Memory] = []
        for held in await memories.held_against(against):
            if held.id != winner:
                dismissed.append(await writer.change(held, "dismissed", why, superseded_by=winner))
        return dismissed
