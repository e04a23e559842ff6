"""Every change to a memory goes through here: tokens and embeddings are computed once
at write time, each change leaves a version row, and the relationship's hot partition
is invalidated when the transaction commits."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.audit.log import Actor, AuditLog
from tenancy.ids import RelationshipScope
from tether.core.ids import new_id
from tether.core.unit_of_work import on_commit
from tether.memories.enums import MemoryLayer
from tether.memories.repositories import MemoryRepository, MemoryVersionRepository
from tether.providers.base import EmbeddingProvider, ProviderError
from tether.recall.models import Memory
from tether.recall.text import tokenize

log = logging.getLogger(__name__)

Invalidate = Callable[[RelationshipScope], Awaitable[None]]

# The fields a version snapshot keeps (what a person could see change).
SNAPSHOT_FIELDS = (
    "content",
    "memory_type",
    "layer",
    "subject",
    "predicate",
    "object",
    "polarity",
    "importance",
    "confidence",
    "is_active",
    "expires_at",
    "superseded_by",
    "private_to_creator",
    "provenance",
)


def snapshot(memory: Memory) -> dict[str, Any]:
    values = {name: getattr(memory, name) for name in SNAPSHOT_FIELDS}
    for name in ("expires_at",):
        values[name] = values[name].isoformat() if values[name] else None
    values["superseded_by"] = str(values["superseded_by"]) if values["superseded_by"] else None
    return values


@dataclass(slots=True)
class NewMemory:
    """Everything a new memory needs except what the writer computes."""

    memory_type: str
    layer: str
    content: str
    importance: float
    confidence: float
    occurred_at: datetime
    origin: str
    subject: str = ""
    predicate: str = ""
    object: str = ""
    polarity: str = "affirmed"
    exclusive: bool = False
    external_id: str | None = None
    valid_from: datetime | None = None
    expires_at: datetime | None = None
    source_turn_ids: Sequence[uuid.UUID] = field(default_factory=tuple)
    source_session_id: str | None = None
    private_to_creator: bool = False
    provenance: str = "user_stated"
    is_active: bool = True  # False: held back in a conflict with ``conflicts_with``
    conflicts_with: uuid.UUID | None = None
    id: uuid.UUID = field(default_factory=new_id)


class MemoryWriter:
    def __init__(
        self,
        session: AsyncSession,
        scope: RelationshipScope,
        embedder: EmbeddingProvider | None,
        invalidate: Invalidate,
        actor: str,
        by: Actor | None = None,
    ) -> None:
        self._session = session
        # Who, for the audit log: the key's principal, else the pipeline or sweep by name.
        self._by = by or Actor(None, "system", actor)
        self._audit = AuditLog(session)
        self._scope = scope
        self._embedder = embedder
        self._invalidate = invalidate
        self._actor = actor
        self._memories = MemoryRepository(session, scope)
        self._versions = MemoryVersionRepository(session, scope)
        self._touched = False
        self.embedding_degraded = False

    async def _vectors(self, texts: Sequence[str]) -> list[Any]:
        if not texts:
            return []
        if self._embedder is None:
            raise RuntimeError("this writer cannot change content (no embedder)")
        try:
            matrix = await self._embedder.embed(texts)
        except ProviderError as exc:
            # Stored without vectors: lexical recall still finds them, reindex fills them.
            log.warning("embedding unavailable, memories stored without vectors: %s", exc)
            self.embedding_degraded = True
            return [None] * len(texts)
        return list(matrix)

    def _model_name(self) -> str | None:
        return None if self._embedder is None else self._embedder.name

    def _changed(self) -> None:
        if not self._touched:
            self._touched = True
            on_commit(self._session, lambda: self._invalidate(self._scope))

    async def create(self, items: Sequence[NewMemory], reason: str) -> set[uuid.UUID]:
        """Insert new memories (skipping external ids already present); the ids inserted."""
        vectors = await self._vectors([item.content for item in items])
        now = datetime.now(UTC)
        rows = []
        for item, vector in zip(items, vectors, strict=True):
            rows.append(
                {
                    "id": item.id,
                    "external_id": item.external_id,
                    "memory_type": item.memory_type,
                    "layer": item.layer,
                    "subject": item.subject,
                    "predicate": item.predicate,
                    "object": item.object,
                    "polarity": item.polarity,
                    "exclusive": item.exclusive,
                    "content": item.content,
                    "tokens": tokenize(item.content),
                    "embedding": vector,
                    "embedding_model": None if vector is None else self._model_name(),
                    "embedding_dim": None if vector is None else len(vector),
                    "importance": item.importance,
                    "confidence": item.confidence,
                    "occurred_at": item.occurred_at,
                    "valid_from": item.valid_from,
                    "expires_at": item.expires_at,
                    "source_turn_ids": list(item.source_turn_ids),
                    "source_session_id": item.source_session_id,
                    "private_to_creator": item.private_to_creator,
                    "origin": item.origin,
                    "provenance": item.provenance,
                    "is_active": item.is_active,
                    "conflicts_with": item.conflicts_with,
                    "created_at": now,
                    "updated_at": now,
                }
            )
        inserted = await self._memories.insert(rows)
        for row in rows:
            if row["id"] in inserted:
                state = {k: row[k] for k in SNAPSHOT_FIELDS if k in row}
                state["superseded_by"] = None
                state["expires_at"] = row["expires_at"].isoformat() if row["expires_at"] else None
                await self._versions.add(
                    id=new_id(),
                    memory_id=row["id"],
                    version=1,
                    change="created",
                    reason=reason,
                    actor=self._actor,
                    snapshot=state,
                )
        if inserted:
            self._changed()
            await self._record("memory.created", sorted(inserted), version=1)
        return inserted

    async def _record(self, action: str, ids: Sequence[uuid.UUID], **detail: Any) -> None:
        """Audited in this transaction (ids and the change, never content or reasons,
        which may quote the user): a failed append fails the write."""
        await self._audit.record(
            self._scope.tenant_id,
            self._by,
            action,
            "memory",
            relationship_id=self._scope.relationship_id,
            detail={"memory_ids": [str(i) for i in ids], "by": self._actor, **detail},
        )

    async def change(self, memory: Memory, change: str, reason: str, **values: Any) -> Memory:
        """Apply ``values`` as the next version of ``memory``."""
        if "content" in values and values["content"] != memory.content:
            [vector] = await self._vectors([values["content"]])
            values["tokens"] = tokenize(values["content"])
            values["embedding"] = vector
            values["embedding_model"] = None if vector is None else self._model_name()
            values["embedding_dim"] = None if vector is None else len(vector)
        for name, value in values.items():
            setattr(memory, name, value)
        memory.version += 1
        memory.updated_at = datetime.now(UTC)
        await self._session.flush()
        await self._versions.add(
            id=new_id(),
            memory_id=memory.id,
            version=memory.version,
            change=change,
            reason=reason,
            actor=self._actor,
            snapshot=snapshot(memory),
        )
        self._changed()
        await self._record(f"memory.{change}", [memory.id], version=memory.version)
        return memory


def layer_for(confirmations: int, episodic_at: int, semantic_at: int) -> MemoryLayer:
    """Working → episodic → semantic as a memory keeps being confirmed."""
    if confirmations >= semantic_at:
        return MemoryLayer.SEMANTIC
    if confirmations >= episodic_at:
        return MemoryLayer.EPISODIC
    return MemoryLayer.WORKING
