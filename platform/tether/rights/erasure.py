"""Erasing a user: every relationship of theirs and everything in it, in Postgres
(one transaction, by cascade from the user) and in Redis (caches, working memory, hot
partitions, claims), after the commit. The audit keeps that it happened, not what."""

from __future__ import annotations

import base64
import json
import logging
import uuid
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import RedisError
from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.principal import Principal
from tenancy.audit.log import Actor, AuditLog
from tenancy.errors import UserNotFound
from tenancy.graph.erasure import UserEraser
from tenancy.graph.schemas import ErasureResult
from tenancy.graph.tombstones import bury
from tenancy.ids import RelationshipId, RelationshipScope
from tenancy.models import (
    Creator,
    CreatorPersona,
    GlobalUser,
    OwnershipEvent,
    Relationship,
    UserFacet,
)
from tenancy.relationships.directory import card_key
from tenancy.resolve.cache import resolve_key
from tenancy.resolve.schemas import PersonaRef, ResolveRequest, UserRef
from tether.core import task_queues
from tether.core.ids import TenantId
from tether.core.unit_of_work import on_commit
from tether.memories.models import ConsolidationRecord, MemoryVersion
from tether.profiles.consent_cache import consent_key
from tether.profiles.models import ConsentRecord, GlobalProfileField
from tether.recall.models import Memory
from tether.recall.versions import partition_keys
from tether.turns.claims import RECENT_KEY
from tether.turns.flags_cache import flags_pattern
from tether.turns.models import ChatSession, Turn

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


async def remove_queued_tasks(
    broker: Redis, relationship_ids: list[uuid.UUID], *, count_only: bool = False
) -> int:
    """Take the erased relationships' waiting tasks (turns still to be stored, sessions
    to extract) out of the queue: their payloads hold the user's words. Tasks already
    running, redelivered or scheduled later find the erasure's tombstone and store
    nothing (``tenancy.graph.tombstones``). ``count_only``: how many wait, untouched."""
    needles = [str(r) for r in relationship_ids]
    removed = 0
    for queue in task_queues.ALL:
        for raw in await broker.lrange(queue, 0, -1):
            if not _mentions(raw, needles):
                continue
            if count_only:
                removed += 1
            else:
                removed += int(await broker.lrem(queue, 0, raw))  # type: ignore[arg-type]
    return removed


async def _forget_in_redis(redis: Redis, hot_redis: Redis, erased: _Erased) -> dict[str, int]:
    """Delete the user's keys; how many of each kind there were (before the commit and
    again after it, which catches a cache filled from Postgres in between)."""
    counts = {"redis_caches": 0, "redis_hot_partitions": 0}
    keys: list[str] = list(erased.user_keys)
    hot_keys: list[str] = []
    patterns: list[str] = []
    for rid in erased.relationship_ids:
        base = f"{erased.tenant_id}:{rid}"
        keys += [card_key(erased.tenant_id, rid), f"tether:wm:{base}"]
        scope = RelationshipScope(TenantId(erased.tenant_id), RelationshipId(rid))
        hot_keys += partition_keys(scope)
        patterns += [f"tether:sess:{base}:*", f"tether:dd:{base}:*", f"tether:idem:{base}:*"]
        patterns.append(flags_pattern(rid))
    members = [f"{erased.tenant_id}:{rid}" for rid in erased.relationship_ids]
    try:
        if keys:
            counts["redis_caches"] += int(await redis.delete(*keys))
        if members:  # the reconciliation sweep's list of recently active relationships
            await redis.zrem(RECENT_KEY, *members)
        for pattern in patterns:
            async for key in redis.scan_iter(match=pattern, count=500):
                counts["redis_caches"] += int(await redis.delete(key))
    except RedisError as exc:  # caches expire; the data is already gone from Postgres
        log.error("erased user's Redis entries not all removed (they expire): %s", exc)
    try:  # the hot tier's Redis (decision 0021), on its own: one being down spares the other
        if hot_keys:
            counts["redis_hot_partitions"] += int(await hot_redis.delete(*hot_keys))
    except RedisError as exc:
        log.error("erased user's hot partitions not removed (they expire): %s", exc)
    return counts


async def _forget_in_queue(broker_url: str, erased: _Erased, *, count_only: bool = False) -> int:
    broker = Redis.from_url(broker_url, socket_timeout=2)
    try:
        return await remove_queued_tasks(broker, erased.relationship_ids, count_only=count_only)
    except RedisError as exc:
        log.error("erased user's queued tasks not removed (the tombstone stops them): %s", exc)
        return 0
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
) -> int:
    owned = (model.tenant_id == tenant_id) & (model.relationship_id == relationship_id)
    total = 0
    while True:
        page = select(model.id).where(owned).limit(ERASE_PAGE).scalar_subquery()
        paged = delete(model).where(owned, model.id.in_(page))
        deleted = await session.execute(paged.execution_options(synchronize_session=False))
        count: int = deleted.rowcount  # type: ignore[attr-defined]
        total += count
        if count < ERASE_PAGE:
            return total


# What the cascade from the user row takes, counted first for the receipt: the table's
# name, its model and the column that ties a row to the user or their relationships.
_CASCADED: tuple[tuple[str, Any, str], ...] = (
    ("chat_sessions", ChatSession, "relationship_id"),
    ("ownership_events", OwnershipEvent, "relationship_id"),
    ("relationships", Relationship, "global_user_id"),
    ("user_facets", UserFacet, "global_user_id"),
    ("global_profile_fields", GlobalProfileField, "global_user_id"),
    ("consent_records", ConsentRecord, "global_user_id"),
)


async def _count_cascaded(
    session: AsyncSession, tenant_id: uuid.UUID, user_id: uuid.UUID, relationships: list[uuid.UUID]
) -> dict[str, int]:
    counts: dict[str, int] = {}
    for name, model, column in _CASCADED:
        ids = [user_id] if column == "global_user_id" else relationships
        statement = (
            select(func.count())
            .select_from(model)
            .where(model.tenant_id == tenant_id, getattr(model, column).in_(ids))
        )
        counts[name] = int((await session.execute(statement)).scalar_one()) if ids else 0
    return counts


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

    async def erase(self, user_id: uuid.UUID, reason: str | None = None) -> ErasureResult:
        """Erase the user everywhere; the receipt counts what each store held. ``reason``:
        why (required of a compliance officer acting on the user's behalf), audited."""
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
        stores = {model.__tablename__: 0 for model in PAGED_TABLES}
        for relationship_id in erased.relationship_ids:
            for model in PAGED_TABLES:
                stores[model.__tablename__] += await _delete_in_pages(
                    self._session, model, tenant_id, relationship_id
                )
        stores |= await _count_cascaded(self._session, tenant_id, user_id, erased.relationship_ids)
        stores["global_users"] = 1
        await bury(self._session, tenant_id, erased.relationship_ids)
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
            detail={
                "relationships": [str(r) for r in erased.relationship_ids],
                "stores": stores,
                "reason": reason,
            },
        )
        stores |= await _forget_in_redis(self._redis, self._hot_redis, erased)
        stores["queued_tasks"] = await _forget_in_queue(self._broker_url, erased, count_only=True)

        async def after_commit() -> None:
            await _forget_in_redis(self._redis, self._hot_redis, erased)

        on_commit(self._session, after_commit)

        async def dequeue() -> None:
            await _forget_in_queue(self._broker_url, erased)

        on_commit(self._session, dequeue)
        return ErasureResult(user_id, len(erased.relationship_ids), True, stores)
