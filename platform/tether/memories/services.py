"""Manual control of a relationship's memories: list, read, create (one or a batch,
idempotent by external id), edit (a new version), deactivate, delete, history, sources,
and the consolidation log."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial

from sqlalchemy import ColumnElement
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.policy import PolicyEnforcer
from tenancy.access.principal import Principal
from tenancy.audit.access import AccessLog
from tenancy.audit.log import Actor
from tenancy.ids import RelationshipScope
from tenancy.limits.quotas import Quotas
from tenancy.limits.values import LimitName
from tenancy.relationships.directory import RelationshipCard, RelationshipDirectory
from tether.core.ids import TenantId
from tether.core.pagination import decode_cursor, next_cursor
from tether.core.settings import Settings
from tether.memories import schemas as s
from tether.memories.enums import MemoryLayer, MemoryType
from tether.memories.errors import ExternalIdTaken, InvalidMemories, MemoryNotFound
from tether.memories.models import ConsolidationRecord, MemoryVersion
from tether.memories.privacy import mask_creates, mask_reason, mask_update
from tether.memories.repositories import (
    ConsolidationLogRepository,
    MemoryRepository,
    MemoryVersionRepository,
)
from tether.memories.usage import stored_memories
from tether.memories.writer import Invalidate, MemoryWriter, NewMemory
from tether.privacy.filter import PrivacyFilter
from tether.privacy.tenant_filters import TenantFilters
from tether.recall.models import Memory, active_now
from tether.recall.services import may_see_private
from tether.recall.tenant_embedders import TenantEmbedders
from tether.turns.repositories import TurnRepository

MEMORIES = LimitName.MEMORIES
_FUTURE_SKEW = timedelta(minutes=5)


def read(m: Memory) -> s.MemoryRead:
    return s.MemoryRead(
        id=m.id,
        external_id=m.external_id,
        memory_type=m.memory_type,
        layer=m.layer,
        subject=m.subject,
        predicate=m.predicate,
        object=m.object,
        polarity=m.polarity,
        content=m.content,
        importance=m.importance,
        confidence=m.confidence,
        strength=m.strength,
        occurred_at=m.occurred_at,
        valid_from=m.valid_from,
        expires_at=m.expires_at,
        is_active=m.is_active,
        superseded_by=m.superseded_by,
        source_turn_ids=list(m.source_turn_ids),
        session_id=m.source_session_id,
        private_to_creator=m.private_to_creator,
        origin=m.origin,
        provenance=m.provenance,
        version=m.version,
        last_recalled_at=m.last_recalled_at,
        created_at=m.created_at,
        updated_at=m.updated_at,
    )


def _version(v: MemoryVersion) -> s.MemoryVersionRead:
    return s.MemoryVersionRead(v.version, v.change, v.reason, v.actor, v.snapshot, v.created_at)


def _consolidation(r: ConsolidationRecord) -> s.ConsolidationRead:
    return s.ConsolidationRead(
        r.id,
        r.session_id,
        r.outcome,
        r.candidate,
        r.target_memory_id,
        r.result_memory_id,
        r.reason,
        r.created_at,
    )


@dataclass(frozen=True, slots=True)
class _Reach:
    """A relationship this key may reach, and the memory layers it may touch there
    (None: every layer)."""

    card: RelationshipCard
    layers: list[str] | None

    @property
    def scope(self) -> RelationshipScope:
        return self.card.scope


class MemoryService:
    def __init__(
        self,
        session: AsyncSession,
        directory: RelationshipDirectory,
        principal: Principal,
        enforcer: PolicyEnforcer,
        embedders: TenantEmbedders,
        invalidate: Invalidate,
        settings: Settings,
        quotas: Quotas,
        privacy: TenantFilters | None = None,
        access: AccessLog | None = None,
        *,
        support_view: bool = False,
    ) -> None:
        self._access = access
        # The console's pages record their reads as ``support_view`` (decision 0042).
        self._support_view = support_view
        self._session = session
        self._directory = directory
        self._principal = principal
        self._enforcer = enforcer
        self._embedders = embedders
        self._invalidate = invalidate
        self._settings = settings
        self._quotas = quotas
        self._privacy = privacy or TenantFilters(settings.identity.tenant_settings_ttl_seconds)

    async def _read(self, relationship_id: uuid.UUID) -> _Reach:
        """The relationship, once this key may reach it, with the layers it may touch;
        every read and write goes through here, so the layers a pool operator inherits
        bound all of them (decision 0047)."""
        card = await self._directory.open(relationship_id)
        return _Reach(card, await self._directory.inherited_layers(card))

    def _noted(self, reach: _Reach, purpose: str, ids: Iterable[uuid.UUID]) -> None:
        if self._access is not None:
            purpose = "support_view" if self._support_view else purpose
            card = reach.card
            self._access.note(self._principal, purpose, card.id, card.global_user_id, ids)

    async def _filter(self, scope: RelationshipScope) -> PrivacyFilter:
        return await self._privacy.for_tenant(self._session, scope.tenant_id)

    async def _writer(self, scope: RelationshipScope) -> MemoryWriter:
        actor = f"key:{self._principal.key_id}"
        by = Actor.of(self._principal)
        # The tenant's embedding model (decision 0077), from the cached settings.
        embedder = await self._embedders.for_tenant(TenantId(scope.tenant_id))
        return MemoryWriter(self._session, scope, embedder, self._invalidate, actor, by)

    def _visible(self, reach: _Reach) -> list[ColumnElement[bool]]:
        found: list[ColumnElement[bool]] = (
            [] if reach.layers is None else [Memory.layer.in_(reach.layers)]
        )
        if may_see_private(self._enforcer, self._principal):
            return found
        return [*found, Memory.private_to_creator.is_(False)]

    async def _require(
        self, reach: _Reach, memory_id: uuid.UUID, *, for_update: bool = False
    ) -> Memory:
        repository = MemoryRepository(self._session, reach.scope)
        memory = await repository.get(memory_id, for_update=for_update)
        if (
            memory is None
            or (memory.private_to_creator and not may_see_private(self._enforcer, self._principal))
            or (reach.layers is not None and memory.layer not in reach.layers)
        ):
            raise MemoryNotFound(f"no memory {memory_id}")
        return memory

    async def list(
        self,
        relationship_id: uuid.UUID,
        cursor: str | None,
        limit: int,
        memory_type: MemoryType | None,
        active: bool | None,
        since: datetime | None,
        *,
        layer: MemoryLayer | None = None,
        newest_first: bool = False,
    ) -> s.MemoryPage:
        reach = await self._read(relationship_id)
        criteria = self._visible(reach)
        if memory_type is not None:
            criteria.append(Memory.memory_type == memory_type.value)
        if layer is not None:
            criteria.append(Memory.layer == layer.value)
        if active is True:
            criteria.extend(active_now(datetime.now(UTC)))
        elif active is False:
            now = datetime.now(UTC)
            criteria.append(
                ~(
                    Memory.is_active.is_(True)
                    & Memory.superseded_by.is_(None)
                    & (Memory.expires_at.is_(None) | (Memory.expires_at > now))
                )
            )
        if since is not None:
            criteria.append(Memory.occurred_at >= since)
        rows = await MemoryRepository(self._session, reach.scope).page(
            decode_cursor(cursor), limit, *criteria, newest_first=newest_first
        )
        self._noted(reach, "memory_list", [r.id for r in rows])
        return s.MemoryPage([read(r) for r in rows], next_cursor(rows, limit))

    async def get(self, relationship_id: uuid.UUID, memory_id: uuid.UUID) -> s.MemoryRead:
        reach = await self._read(relationship_id)
        memory = await self._require(reach, memory_id)
        self._noted(reach, "memory_read", [memory.id])
        return read(memory)

    def _check(self, items: Sequence[s.MemoryCreate]) -> None:
        limits = self._settings.memory
        errors: list[dict[str, str]] = []
        if not 1 <= len(items) <= limits.max_batch_create:
            errors.append(
                {"field": "memories", "message": f"must hold 1..{limits.max_batch_create} memories"}
            )
        now = datetime.now(UTC)
        seen: set[str] = set()
        may_private = may_see_private(self._enforcer, self._principal, "write")
        for i, item in enumerate(items):
            text = item.content
            if not text.strip() or len(text) > limits.max_content_chars or "\x00" in text:
                errors.append(
                    {
                        "field": f"memories[{i}].content",
                        "message": f"must be 1..{limits.max_content_chars} characters without NUL",
                    }
                )
            else:
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError:
                    errors.append(
                        {"field": f"memories[{i}].content", "message": "must be valid Unicode"}
                    )
            for name in ("occurred_at", "expires_at"):
                value = getattr(item, name)
                if value is not None and value.tzinfo is None:
                    errors.append(
                        {
                            "field": f"memories[{i}].{name}",
                            "message": "must carry a timezone offset",
                        }
                    )
            if (
                item.occurred_at is not None
                and item.occurred_at.tzinfo is not None
                and item.occurred_at > now + _FUTURE_SKEW
            ):
                errors.append(
                    {"field": f"memories[{i}].occurred_at", "message": "is in the future"}
                )
            if item.external_id is not None:
                if item.external_id in seen:
                    errors.append(
                        {
                            "field": f"memories[{i}].external_id",
                            "message": "repeats an earlier item of the batch",
                        }
                    )
                seen.add(item.external_id)
            if item.private_to_creator and not may_private:
                errors.append(
                    {
                        "field": f"memories[{i}].private_to_creator",
                        "message": "this key may not write private notes",
                    }
                )
        if errors:
            raise InvalidMemories(
                f"{len(errors)} problem(s); first: {errors[0]['field']}", errors=errors
            )

    async def create_many(
        self, relationship_id: uuid.UUID, items: Sequence[s.MemoryCreate]
    ) -> s.MemoryBatchResult:
        """Manual memories (confidence 1). An external id already stored answers
        ``exists`` with the stored memory, so a retried import creates nothing twice."""
        self._check(items)
        scope = (await self._read(relationship_id)).scope
        items = await mask_creates(await self._filter(scope), items)
        now = datetime.now(UTC)
        new = [
            NewMemory(
                memory_type=item.memory_type.value,
                layer=item.layer.value,
                content=item.content,
                importance=item.importance,
                confidence=1.0,
                occurred_at=item.occurred_at or now,
                origin="manual",
                provenance=item.provenance,
                subject=item.subject,
                predicate=item.predicate,
                object=item.object,
                polarity=item.polarity.value,
                external_id=item.external_id,
                expires_at=item.expires_at,
                private_to_creator=item.private_to_creator,
                source_session_id=item.session_id,
            )
            for item in items
        ]
        writer = await self._writer(scope)
        recount = partial(stored_memories, self._session, scope.tenant_id)
        async with self._quotas.hold(scope.tenant_id, MEMORIES, len(new), recount) as held:
            inserted = await writer.create(new, reason="created through the API")
            held.settle(len(inserted))
        existing = await MemoryRepository(self._session, scope).by_external_ids(
            [n.external_id for n in new if n.id not in inserted and n.external_id]
        )
        results = []
        see_private = may_see_private(self._enforcer, self._principal)
        for i, n in enumerate(new):
            if n.id in inserted:
                results.append(s.BatchItemResult(i, "created", n.id))
                continue
            found = existing[n.external_id or ""]
            if found.deleted_at is not None or (found.private_to_creator and not see_private):
                # Never hand out what this caller may not read, not even its id.
                raise ExternalIdTaken(
                    f"memories[{i}].external_id is already used in this relationship",
                    errors=[{"field": f"memories[{i}].external_id", "message": "already used"}],
                )
            results.append(s.BatchItemResult(i, "exists", found.id))
        return s.MemoryBatchResult(results, ["embedding"] if writer.embedding_degraded else [])

    async def create(
        self, relationship_id: uuid.UUID, item: s.MemoryCreate
    ) -> tuple[s.MemoryRead, bool]:
        result = await self.create_many(relationship_id, [item])
        [outcome] = result.results
        memory = await self._require(await self._read(relationship_id), outcome.id)
        return read(memory), outcome.status == "created"

    async def update(
        self, relationship_id: uuid.UUID, memory_id: uuid.UUID, data: s.MemoryUpdate
    ) -> s.MemoryRead:
        reach = await self._read(relationship_id)
        scope = reach.scope
        memory = await self._require(reach, memory_id, for_update=True)
        data = await mask_update(await self._filter(scope), data)
        values: dict[str, object] = {}
        if data.content is not None:
            if (
                not data.content.strip()
                or len(data.content) > self._settings.memory.max_content_chars
                or "\x00" in data.content
            ):
                raise InvalidMemories(
                    "content is empty or too long",
                    errors=[
                        {"field": "content", "message": "must be 1..2000 characters without NUL"}
                    ],
                )
            values["content"] = data.content
        for name in (
            "memory_type",
            "importance",
            "expires_at",
            "subject",
            "predicate",
            "object",
            "polarity",
        ):
            value = getattr(data, name)
            if value is not None:
                values[name] = value.value if hasattr(value, "value") else value
        if not values:
            raise InvalidMemories(
                "nothing to change",
                errors=[{"field": "body", "message": "name at least one field to change"}],
            )
        values["provenance"] = data.provenance  # a manual edit: the pipeline keeps it
        memory = await (await self._writer(scope)).change(
            memory, "edited", data.reason or "edited through the API", **values
        )
        return read(memory)

    async def deactivate(
        self, relationship_id: uuid.UUID, memory_id: uuid.UUID, reason: str
    ) -> s.MemoryRead:
        reach = await self._read(relationship_id)
        scope = reach.scope
        memory = await self._require(reach, memory_id, for_update=True)
        reason = await mask_reason(await self._filter(scope), reason)
        if memory.is_active:
            memory = await (await self._writer(scope)).change(
                memory, "deactivated", reason or "deactivated through the API", is_active=False
            )
        return read(memory)

    async def delete(self, relationship_id: uuid.UUID, memory_id: uuid.UUID) -> None:
        reach = await self._read(relationship_id)
        scope = reach.scope
        memory = await self._require(reach, memory_id, for_update=True)
        await (await self._writer(scope)).change(
            memory,
            "deleted",
            "deleted through the API",
            is_active=False,
            deleted_at=datetime.now(UTC),
        )

    async def history(
        self, relationship_id: uuid.UUID, memory_id: uuid.UUID, cursor: str | None, limit: int
    ) -> s.MemoryVersionPage:
        reach = await self._read(relationship_id)
        await self._require(reach, memory_id)
        self._noted(reach, "memory_history", [memory_id])
        rows = await MemoryVersionRepository(self._session, reach.scope).of(
            memory_id, decode_cursor(cursor), limit
        )
        return s.MemoryVersionPage([_version(v) for v in rows], next_cursor(rows, limit))

    async def sources(self, relationship_id: uuid.UUID, memory_id: uuid.UUID) -> s.MemorySources:
        reach = await self._read(relationship_id)
        memory = await self._require(reach, memory_id)
        self._noted(reach, "memory_sources", [memory.id])
        turns = await TurnRepository(self._session, reach.scope).by_ids(
            list(memory.source_turn_ids)
        )
        return s.MemorySources(
            memory.id,
            memory.origin,
            [s.SourceTurn(t.id, t.session_id, t.role, t.text, t.at) for t in turns],
        )

    async def consolidations(
        self,
        relationship_id: uuid.UUID,
        session_id: str | None,
        cursor: str | None,
        limit: int,
        *,
        memory_id: uuid.UUID | None = None,
    ) -> s.ConsolidationPage:
        reach = await self._read(relationship_id)
        rows = await ConsolidationLogRepository(self._session, reach.scope).page(
            decode_cursor(cursor),
            limit,
            session_id,
            include_private=may_see_private(self._enforcer, self._principal),
            memory_id=memory_id,
            layers=reach.layers,
        )
        return s.ConsolidationPage([_consolidation(r) for r in rows], next_cursor(rows, limit))
