"""Forgetting in two steps: a preview of exactly which memories match, with a
short-lived token, then the confirmation that forgets those and nothing else."""

from __future__ import annotations

import json
import secrets
import uuid
from datetime import UTC, datetime, timedelta

from redis.asyncio import Redis
from redis.exceptions import RedisError
from sqlalchemy import delete, update
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.policy import PolicyEnforcer
from tenancy.access.principal import Principal
from tenancy.audit.log import Actor, AuditLog
from tenancy.ids import RelationshipScope
from tenancy.relationships.directory import RelationshipDirectory
from tether.core.errors import NotFound, ServiceUnavailable
from tether.core.unit_of_work import on_commit
from tether.memories.models import ConsolidationRecord, MemoryVersion
from tether.memories.repositories import MemoryRepository
from tether.memories.writer import Invalidate, MemoryWriter
from tether.recall.models import Memory
from tether.recall.services import may_see_private
from tether.recall.text import tokenize
from tether.rights import schemas as s

TOKEN_TTL = timedelta(minutes=5)
MAX_MATCHES = 500


class ForgetTokenInvalid(NotFound):
    code = "forget_token_invalid"
    title = "Unknown or expired forget token; ask for a new preview"


class ForgetUnavailable(ServiceUnavailable):
    code = "forget_unavailable"
    title = "Forget previews need Redis, which is unavailable; retry"


def _key(token: str) -> str:
    return f"tether:forget:{token}"


class ForgetService:
    def __init__(
        self,
        session: AsyncSession,
        directory: RelationshipDirectory,
        redis: Redis,
        principal: Principal,
        enforcer: PolicyEnforcer,
        invalidate: Invalidate,
    ) -> None:
        self._enforcer = enforcer
        self._session = session
        self._directory = directory
        self._redis = redis
        self._principal = principal
        self._invalidate = invalidate

    async def preview(
        self, relationship_id: uuid.UUID, request: s.ForgetRequest
    ) -> s.ForgetPreview:
        card = await self._directory.open(relationship_id)
        criteria = [Memory.is_active.is_(True)]
        if request.memory_ids is not None:
            criteria.append(Memory.id.in_(request.memory_ids))
        if request.types is not None:
            criteria.append(Memory.memory_type.in_([t.value for t in request.types]))
        if request.query is not None:
            terms = tokenize(request.query)
            criteria.append(Memory.tokens.overlap(terms) if terms else Memory.id.is_(None))
        if not may_see_private(self._enforcer, self._principal):
            criteria.append(Memory.private_to_creator.is_(False))
        rows = await MemoryRepository(self._session, card.scope).page(None, MAX_MATCHES, *criteria)
        token = secrets.token_urlsafe(24)
        expires = datetime.now(UTC) + TOKEN_TTL
        payload = {
            "tenant_id": str(card.tenant_id),
            "relationship_id": str(card.id),
            "key_id": str(self._principal.key_id),
            "ids": [str(r.id) for r in rows],
            "hard": request.hard,
        }
        try:
            await self._redis.set(
                _key(token), json.dumps(payload), ex=int(TOKEN_TTL.total_seconds())
            )
        except RedisError as exc:
            raise ForgetUnavailable() from exc
        memories = [s.ForgetCandidate(r.id, r.memory_type, r.content, r.occurred_at) for r in rows]
        return s.ForgetPreview(token, expires, request.hard, memories)

    async def confirm(self, relationship_id: uuid.UUID, token: str) -> s.ForgetResult:
        card = await self._directory.open(relationship_id)
        try:
            raw = await self._redis.getdel(_key(token))
        except RedisError as exc:
            raise ForgetUnavailable() from exc
        if raw is None:
            raise ForgetTokenInvalid()
        payload = json.loads(raw)
        if (
            payload["tenant_id"] != str(card.tenant_id)
            or payload["relationship_id"] != str(card.id)
            or payload["key_id"] != str(self._principal.key_id)
        ):
            raise ForgetTokenInvalid()  # a token only works for who asked, where they asked
        ids = [uuid.UUID(i) for i in payload["ids"]]
        hard = bool(payload["hard"])
        forgotten = await self._forget(card.scope, ids, hard)
        await AuditLog(self._session).record(
            card.tenant_id,
            Actor.of(self._principal),
            "forget",
            "relationship_memory",
            relationship_id=card.id,
            global_user_id=card.global_user_id,
            detail={"memory_ids": [str(i) for i in ids], "hard": hard, "count": forgotten},
        )
        return s.ForgetResult(forgotten, hard)

    async def _forget(self, scope: RelationshipScope, ids: list[uuid.UUID], hard: bool) -> int:
        if not ids:
            return 0
        memories = MemoryRepository(self._session, scope)
        writer = MemoryWriter(
            self._session,
            scope,
            None,
            self._invalidate,
            f"key:{self._principal.key_id}",
            Actor.of(self._principal),
        )
        count = 0
        now = datetime.now(UTC)
        for memory_id in ids:
            memory = await memories.get(memory_id, for_update=True)
            if memory is None:
                continue
            await writer.change(
                memory, "forgotten", "forgotten on request", is_active=False, deleted_at=now
            )
            count += 1
        if hard:
            await self._purge(scope, ids)
        on_commit(self._session, lambda: self._invalidate(scope))
        return count

    async def _purge(self, scope: RelationshipScope, ids: list[uuid.UUID]) -> None:
        """Remove the content itself; what remains says only that a memory was forgotten."""
        await self._session.flush()  # the "forgotten" versions too, before they are purged
        await self._session.execute(
            update(Memory)
            .where(
                Memory.relationship_id == scope.relationship_id,
                Memory.tenant_id == scope.tenant_id,
                Memory.id.in_(ids),
            )
            .values(
                content="",
                tokens=[],
                embedding=None,
                subject="",
                predicate="",
                object="",
                source_turn_ids=[],
            )
        )
        await self._session.execute(
            delete(MemoryVersion).where(
                MemoryVersion.relationship_id == scope.relationship_id,
                MemoryVersion.tenant_id == scope.tenant_id,
                MemoryVersion.memory_id.in_(ids),
            )
        )
        await self._session.execute(
            update(ConsolidationRecord)
            .where(
                ConsolidationRecord.relationship_id == scope.relationship_id,
                ConsolidationRecord.tenant_id == scope.tenant_id,
                ConsolidationRecord.result_memory_id.in_(ids)
                | ConsolidationRecord.target_memory_id.in_(ids),
            )
            .values(candidate={"purged": True}, reason="purged")
        )
