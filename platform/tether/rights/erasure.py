"""Erasing a user: every relationship of theirs and everything in it, in Postgres
(one transaction, by cascade from the user) and in Redis (caches, working memory, hot
partitions, claims), after the commit. The audit keeps that it happened, not what."""

from __future__ import annotations

import base64
import json
import logging
import uuid
from dataclasses import dataclass

from redis.asyncio import Redis
from redis.exceptions import RedisError
from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.principal import Principal
from tenancy.audit.log import Actor, AuditLog
from tenancy.errors import UserNotFound
from tenancy.graph.erasure import UserEraser
from tenancy.graph.schemas import ErasureResult
from tenancy.ids import RelationshipId, RelationshipScope
from tenancy.models import Creator, CreatorPersona, GlobalUser, Relationship, UserFacet
from tenancy.relationships.directory import card_key
from tenancy.resolve.cache import resolve_key
from tenancy.resolve.schemas import PersonaRef, ResolveRequest, UserRef
from tether.core import task_queues
from tether.core.ids import TenantId
from tether.core.unit_of_work import on_commit
from tether.memories.models import ConsolidationRecord, MemoryVersion
from tether.profiles.consent_cache import consent_key
from tether.recall.models import Memory
from tether.recall.versions import partition_keys
from tether.turns.models import Turn

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Erased:
    tenant_id: uuid.UUID
    relationship_ids: list[uuid.UUID]
    user_keys: list[str]  # the user's consent and resolve entries


def _mentions(raw: bytes | str, needles: list[str]) -> bool:
    """Does a queued Celery message (kombu's Redis format) carry one of ``needles``?"""
    try:
        message = json.loads(raw)
        body = base64.b64decode(message.get("body", ""))
    except (ValueError, TypeError):
        return False
    haystack = body.decode("utf-8", "replace") + json.dumps(message.get("headers", {}))
    return any(needle in haystack for needle in needles)


async def remove_queued_tasks(broker: Redis, relationship_ids: list[uuid.UUID]) -> int:
    """Take the erased relationships' waiting tasks (turns still to be stored, sessions
    to extract) out of the queue: their payloads hold the user's words. Tasks already
    running fail on the missing relationship and store nothing."""
    needles = [str(r) for r in relationship_ids]
    removed = 0
    for queue in task_queues.ALL:
        for raw in await broker.lrange(queue, 0, -1):
            if _mentions(raw, needles):
                removed += int(await broker.lrem(queue, 0, raw))  # type: ignore[arg-type]
    return removed


async def _forget_in_redis(redis: Redis, hot_redis: Redis, erased: _Erased) -> None:
    keys: list[str] = list(erased.user_keys)
    hot_keys: list[str] = []
    patterns: list[str] = []
    for rid in erased.relationship_ids:
        base = f"{erased.tenant_id}:{rid}"
        keys += [card_key(erased.tenant_id, rid), f"tether:wm:{base}"]
        scope = RelationshipScope(TenantId(erased.tenant_id), RelationshipId(rid))
        hot_keys += partition_keys(scope)
        patterns += [f"tether:sess:{base}:*", f"tether:dd:{base}:*", f"tether:idem:{base}:*"]
    try:
        if keys:
            await redis.delete(*keys)
        for pattern in patterns:
            async for key in redis.scan_iter(match=pattern, count=500):
                await redis.delete(key)
    except RedisError as exc:  # caches expire; the data is already gone from Postgres
        log.error("erased user's Redis entries not all removed (they expire): %s", exc)
    try:  # the hot tier's Redis (decision 0021), on its own: one being down spares the other
        if hot_keys:
            await hot_redis.delete(*hot_keys)
    except RedisError as exc:
        log.error("erased user's hot partitions not removed (they expire): %s", exc)


async def _forget_in_queue(broker_url: str, erased: _Erased) -> None:
    broker = Redis.from_url(broker_url, socket_timeout=2)
    try:
        await remove_queued_tasks(broker, erased.relationship_ids)
    except RedisError as exc:
        log.error("erased user's queued tasks not removed (they will fail): %s", exc)
    finally:
        await broker.aclose()


# A relationship's rows in its largest tables are deleted this many per statement
# before the cascade takes the rest: one cascade over a heavy user's millions of rows
# would outlast the statement timeout (decision 0019) on every try, and the user could
# never be erased. All in the erasure's one transaction. Large pages: each page's
# subquery scans past the rows earlier pages deleted (4M rows took 48 s in 10,000-row
# pages against 6 s as one statement, in a review's measurement).
ERASE_PAGE = 100_000
_Paged = type[Turn] | type[Memory] | type[MemoryVersion] | type[ConsolidationRecord]
PAGED_TABLES: tuple[_Paged, ...] = (MemoryVersion, ConsolidationRecord, Memory, Turn)


async def _delete_in_pages(
    session: AsyncSession,
    model: _Paged,
    tenant_id: uuid.UUID,
    relationship_id: uuid.UUID,
) -> None:
    owned = (model.tenant_id == tenant_id) & (model.relationship_id == relationship_id)
    while True:
        page = select(model.id).where(owned).limit(ERASE_PAGE).scalar_subquery()
        paged = delete(model).where(owned, model.id.in_(page))
        deleted = await session.execute(paged.execution_options(synchronize_session=False))
        if deleted.rowcount < ERASE_PAGE:  # type: ignore[attr-defined]
            return


class ErasureService(UserEraser):
    def __init__(
        self,
        session: AsyncSession,
        redis: Redis,
        hot_redis: Redis,
        principal: Principal,
        broker_url: str,
    ) -> None:
        self._session = session
        self._redis = redis
        self._hot_redis = hot_redis
        self._broker_url = broker_url
        self._principal = principal

    async def erase(self, user_id: uuid.UUID) -> ErasureResult:
        tenant_id = TenantId(self._principal.tenant_id)
        user = (
            await self._session.execute(
                select(GlobalUser)
                .where(GlobalUser.tenant_id == tenant_id, GlobalUser.id == user_id)
                .with_for_update()
            )
        ).scalar_one_or_none()
        if user is None:
            raise UserNotFound(f"no user {user_id}")
        rows = (
            await self._session.execute(
                select(
                    Relationship.id, UserFacet.name, CreatorPersona.external_id, Creator.external_id
                )
                .join(UserFacet, UserFacet.id == Relationship.user_facet_id)
                .join(CreatorPersona, CreatorPersona.id == Relationship.creator_persona_id)
                .join(Creator, Creator.id == Relationship.creator_id)
                .where(Relationship.tenant_id == tenant_id, Relationship.global_user_id == user_id)
            )
        ).all()
        keys = [consent_key(tenant_id, user_id)]
        keys += [
            resolve_key(
                tenant_id,
                ResolveRequest(UserRef(user.external_id), PersonaRef(persona, creator), facet),
            )
            for _, facet, persona, creator in rows
        ]
        erased = _Erased(tenant_id, [rid for rid, *_ in rows], keys)
        for relationship_id in erased.relationship_ids:
            for model in PAGED_TABLES:
                await _delete_in_pages(self._session, model, tenant_id, relationship_id)
        # Everything of the user hangs off the user row by ON DELETE CASCADE: facets,
        # relationships, turns, sessions, memories and their versions, the consolidation
        # log, ownership events, profile fields, consent records.
        await self._session.execute(
            delete(GlobalUser).where(GlobalUser.tenant_id == tenant_id, GlobalUser.id == user_id)
        )
        await AuditLog(self._session).record(
            tenant_id,
            Actor.of(self._principal),
            "erasure",
            "identity",
            global_user_id=user_id,
            detail={"relationships": [str(r) for r in erased.relationship_ids]},
        )
        on_commit(self._session, lambda: _forget_in_redis(self._redis, self._hot_redis, erased))
        on_commit(self._session, lambda: _forget_in_queue(self._broker_url, erased))
        return ErasureResult(user_id, len(erased.relationship_ids), True)
