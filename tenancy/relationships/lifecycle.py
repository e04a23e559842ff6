"""The ownership lifecycle (decision 0047, the seed's 72-hour rule): a relationship whose
creator has left a user turn unanswered for ``ownership.creator_silence_hours`` moves to
the proxy-chat pool, and back when the creator returns. Every move is an ownership event
and an audit event, made by the same code as a manual transfer."""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime, timedelta

from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tenancy.audit.log import SYSTEM, Actor, AuditLog
from tenancy.enums import OperatorKind
from tenancy.models import Creator, OwnershipEvent, Relationship
from tenancy.relationships.directory import CardCache, card_of, publish_on_commit
from tenancy.settings.schemas import OwnershipSettings
from tenancy.settings.services import current_settings
from tether.core.database_errors import DATABASE_ERRORS
from tether.core.ids import TenantId
from tether.core.tenant_sessions import tenant_ids, tenant_transaction

log = logging.getLogger(__name__)

# The reason of an automatic move: only a relationship moved for it moves back by itself
# (one an admin put in the pool stays there until someone transfers it back).
CREATOR_SILENT = "creator_silence"
CREATOR_RETURNED = "creator_returned"
BATCH = 500


async def move_operator(
    session: AsyncSession,
    relationship: Relationship,
    to: tuple[OperatorKind, str],
    reason: str,
    actor: Actor,
    cards: CardCache | None,
) -> OwnershipEvent:
    """Hand ``relationship`` to another operator: an ownership event, the audit event and
    the cached card replaced at commit. Memory stays: it belongs to the relationship."""
    event = OwnershipEvent(
        tenant_id=relationship.tenant_id,
        relationship_id=relationship.id,
        from_kind=relationship.operator_kind,
        from_id=relationship.operator_id,
        to_kind=to[0],
        to_id=to[1],
        reason=reason,
        actor_key_id=actor.key_id,
    )
    session.add(event)
    relationship.operator_kind, relationship.operator_id = to
    relationship.ownership_changed_at = datetime.now(UTC)
    await session.flush()
    if cards is not None:
        creator = await session.get(Creator, relationship.creator_id)
        if creator is not None:
            publish_on_commit(session, cards, card_of(relationship, creator.external_id))
    await AuditLog(session).record(
        relationship.tenant_id,
        actor,
        "ownership.transfer",
        "identity",
        relationship_id=relationship.id,
        global_user_id=relationship.global_user_id,
        detail={
            "from": [event.from_kind, event.from_id],
            "to": [event.to_kind, event.to_id],
            "automatic": actor == SYSTEM,
            "reason": reason if reason in (CREATOR_SILENT, CREATOR_RETURNED) else None,
        },
    )
    return event


async def pool_silent_relationships(
    session: AsyncSession,
    tenant_id: TenantId,
    settings: OwnershipSettings,
    now: datetime,
    cards: CardCache | None,
) -> int:
    """Move up to ``BATCH`` relationships whose creator is silent to the pool; how many."""
    if not settings.auto_pool:
        return 0
    cutoff = now - timedelta(hours=settings.creator_silence_hours)
    statement = (
        select(Relationship)
        .where(
            Relationship.tenant_id == tenant_id,
            Relationship.operator_kind == OperatorKind.CREATOR,
            Relationship.last_user_turn_at < cutoff,
            or_(
                Relationship.creator_replied_at.is_(None),
                Relationship.creator_replied_at < Relationship.last_user_turn_at,
            ),
        )
        .order_by(Relationship.last_user_turn_at)
        .limit(BATCH)
        .with_for_update(skip_locked=True)
    )
    moved = 0
    for relationship in (await session.execute(statement)).scalars():
        to = (OperatorKind.POOL, settings.pool_operator_id)
        await move_operator(session, relationship, to, CREATOR_SILENT, SYSTEM, cards)
        moved += 1
    return moved


async def creator_returned(
    session: AsyncSession,
    tenant_id: TenantId,
    relationship_id: uuid.UUID,
    actor: Actor,
    cards: CardCache | None,
) -> bool:
    """The creator wrote in the relationship: note the reply and, if it was pooled for
    the creator's silence, hand it back. Whether it moved."""
    relationship = await session.get(Relationship, relationship_id, with_for_update=True)
    if relationship is None or relationship.tenant_id != tenant_id:
        return False
    relationship.creator_replied_at = datetime.now(UTC)
    if relationship.operator_kind != OperatorKind.POOL:
        await session.flush()
        return False
    last = (
        await session.execute(
            select(OwnershipEvent.reason)
            .where(
                OwnershipEvent.tenant_id == tenant_id,
                OwnershipEvent.relationship_id == relationship_id,
            )
            .order_by(OwnershipEvent.created_at.desc(), OwnershipEvent.id.desc())
            .limit(1)
        )
    ).scalar_one_or_none()
    if last != CREATOR_SILENT:
        await session.flush()
        return False
    creator = await session.get(Creator, relationship.creator_id)
    if creator is None:
        return False
    to = (OperatorKind.CREATOR, creator.external_id)
    await move_operator(session, relationship, to, CREATOR_RETURNED, actor, cards)
    return True


async def pool_silent(
    sessions: async_sessionmaker[AsyncSession], cards: CardCache | None, now: datetime
) -> int:
    """Every tenant's relationships whose creator is silent, to the pool, with each
    tenant's settings read now (a change applies at the next sweep); how many moved."""
    moved = 0
    for tenant_id in await tenant_ids(sessions):
        try:
            while True:
                async with tenant_transaction(sessions, tenant_id) as session:
                    settings = await current_settings(session, tenant_id)
                    batch = await pool_silent_relationships(
                        session, tenant_id, settings.ownership, now, cards
                    )
                moved += batch
                if batch < BATCH:
                    break
        except DATABASE_ERRORS:
            log.exception("ownership sweep of tenant %s failed; it runs again", tenant_id)
    return moved
