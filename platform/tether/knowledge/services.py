"""Knowledge bases: create, list, read, rename, make default, bind to a persona, delete.

Admins manage every base of their tenant. A creator key manages only the bases bound to
its own personas, and reads those plus the tenant's unbound bases (which its personas
fall back to); gateways read. A base out of a key's reach is not found. The policy guard
has already checked the role.
"""

from __future__ import annotations

import uuid

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.principal import Principal
from tenancy.access.reach import Reach
from tenancy.audit.log import Actor, AuditLog
from tenancy.enums import Role
from tenancy.graph.services import GraphService
from tether.core.errors import Forbidden
from tether.core.pagination import decode_cursor, next_cursor
from tether.knowledge import schemas as s
from tether.knowledge.errors import (
    InvalidKnowledgeBase,
    KnowledgeBaseConflict,
    KnowledgeBaseNotFound,
)
from tether.knowledge.file_stores import FileStore
from tether.knowledge.models import KnowledgeBase
from tether.knowledge.reach import reachable_bases
from tether.knowledge.repositories import DocumentRepository, KnowledgeBaseRepository


def read_base(base: KnowledgeBase) -> s.KnowledgeBaseRead:
    return s.KnowledgeBaseRead(
        id=base.id,
        name=base.name,
        description=base.description,
        creator_persona_id=base.creator_persona_id,
        is_default=base.is_default,
        created_at=base.created_at,
        updated_at=base.updated_at,
    )


class KnowledgeBaseService:
    def __init__(
        self, session: AsyncSession, principal: Principal, files: FileStore | None = None
    ) -> None:
        """``files``: the stored files a deleted base takes with it (unset: Postgres's,
        which go by cascade)."""
        self._session = session
        self._files = files
        self._principal = principal
        self._reach = Reach(principal)
        self._bases = KnowledgeBaseRepository(
            session, principal.tenant_id, reachable_bases(self._reach)
        )
        self._documents = DocumentRepository(session, principal.tenant_id)
        self._graph = GraphService(session, principal)

    @property
    def _is_creator(self) -> bool:
        return self._principal.role == Role.CREATOR

    async def require(self, base_id: uuid.UUID, *, write: bool = False) -> KnowledgeBase:
        """The base, if this key may read it (or manage it, with ``write``)."""
        base = await self._bases.get(base_id)
        if base is None:
            raise KnowledgeBaseNotFound(f"no knowledge base {base_id}")
        if write and not self._reach.tenant_wide and base.creator_persona_id is None:
            # Reached, so bound to one of the key's personas or shared by the tenant.
            raise Forbidden("only a tenant-wide key may manage a base the tenant shares")
        if write and not (self._reach.tenant_wide or self._is_creator):
            raise Forbidden("an operator key may not manage knowledge bases")
        return base

    async def _require_persona(self, persona_id: uuid.UUID) -> None:
        await self._graph.require_own_persona(persona_id)

    async def create(self, data: s.KnowledgeBaseCreate) -> s.KnowledgeBaseRead:
        if data.creator_persona_id is not None:
            await self._require_persona(data.creator_persona_id)
            if data.is_default:
                raise InvalidKnowledgeBase(
                    "a base bound to a persona cannot be the tenant default",
                    errors=[{"field": "is_default", "message": "must be false for a bound base"}],
                )
        elif self._is_creator:
            raise Forbidden("a creator key may create only bases bound to its own personas")
        is_default = data.is_default
        if is_default is None:
            is_default = data.creator_persona_id is None and await self._bases.default() is None
        elif is_default:
            await self._bases.clear_default()
        base = await self._add(
            name=data.name,
            description=data.description,
            creator_persona_id=data.creator_persona_id,
            is_default=is_default,
        )
        await self.audited("knowledge_base.create", base.id)
        return read_base(base)

    async def audited(self, action: str, base_id: uuid.UUID, **detail: object) -> None:
        """An append to the audit log, in this transaction (ids only)."""
        await AuditLog(self._session).record(
            self._principal.tenant_id,
            Actor.of(self._principal),
            action,
            "knowledge",
            detail={"knowledge_base_id": str(base_id), **detail},
        )

    async def _add(self, **values: object) -> KnowledgeBase:
        try:
            async with self._session.begin_nested():
                base = await self._bases.add(**values)
        except IntegrityError as exc:
            raise KnowledgeBaseConflict(
                "the persona already has a knowledge base, or the default changed meanwhile"
            ) from exc
        await self._session.refresh(base)
        return base

    async def list(
        self, creator_persona_id: uuid.UUID | None, cursor: str | None, limit: int
    ) -> s.KnowledgeBasePage:
        criteria = []
        if creator_persona_id is not None:
            criteria.append(KnowledgeBase.creator_persona_id == creator_persona_id)
        rows = await self._bases.page(decode_cursor(cursor), limit, *criteria)
        return s.KnowledgeBasePage([read_base(r) for r in rows], next_cursor(rows, limit))

    async def get(self, base_id: uuid.UUID) -> s.KnowledgeBaseRead:
        return read_base(await self.require(base_id))

    async def update(self, base_id: uuid.UUID, data: s.KnowledgeBaseUpdate) -> s.KnowledgeBaseRead:
        base = await self.require(base_id, write=True)
        if data.name is not None:
            base.name = data.name
        if data.description is not None:
            base.description = data.description
        if data.is_default is not None and data.is_default != base.is_default:
            if data.is_default and base.creator_persona_id is not None:
                raise InvalidKnowledgeBase(
                    "a base bound to a persona cannot be the tenant default",
                    errors=[{"field": "is_default", "message": "unbind the base first"}],
                )
            if data.is_default:
                await self._bases.clear_default()
            base.is_default = data.is_default
        saved = await self._save(base)  # first: a conflict must surface inside its savepoint
        await self.audited("knowledge_base.update", base.id, is_default=base.is_default)
        return saved

    async def bind(self, base_id: uuid.UUID, persona_id: uuid.UUID) -> s.KnowledgeBaseRead:
        base = await self.require(base_id, write=True)
        await self._require_persona(persona_id)
        if base.is_default:
            raise KnowledgeBaseConflict("the tenant default base cannot be bound to a persona")
        base.creator_persona_id = persona_id
        saved = await self._save(base)
        await self.audited("knowledge_base.bind", base.id, persona_id=str(persona_id))
        return saved

    async def unbind(self, base_id: uuid.UUID) -> s.KnowledgeBaseRead:
        base = await self.require(base_id, write=True)
        if self._is_creator:
            # Unbound, the base would leave the creator's hands: only admins do that.
            raise Forbidden("a creator key may not unbind a base; delete it instead")
        base.creator_persona_id = None
        saved = await self._save(base)
        await self.audited("knowledge_base.unbind", base.id)
        return saved

    async def _save(self, base: KnowledgeBase) -> s.KnowledgeBaseRead:
        try:
            async with self._session.begin_nested():
                await self._session.flush()
        except IntegrityError as exc:
            raise KnowledgeBaseConflict(
                "the persona already has a knowledge base, or the default changed meanwhile"
            ) from exc
        await self._bases.touch(base.id)
        await self._session.refresh(base)
        return read_base(base)

    async def delete(self, base_id: uuid.UUID) -> None:
        """The base, its documents, chunks and stored files (Postgres's go by cascade, in
        this transaction; an object store's once it commits)."""
        base = await self.require(base_id, write=True)
        await self._documents.lock_base(base.id)
        await self.audited("knowledge_base.delete", base.id)
        if self._files is not None:
            await self._files.remove_base(base.id)
        await self._bases.remove(base)
