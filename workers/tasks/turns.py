"""Making accepted turns durable."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import case, func, or_, update

from tenancy.enums import OperatorKind
from tenancy.ids import RelationshipId, RelationshipScope
from tenancy.models import Relationship
from tether.core.ids import TenantId
from tether.core.instruments import record_persist_lag
from tether.core.resources import Resources
from tether.core.telemetry import annotate
from tether.core.tenant_sessions import tenant_transaction
from tether.turns.pending import PendingTurn
from tether.turns.reconcile import reconcile
from tether.turns.services import PERSIST_TASK, store_turns
from workers.app import OUTAGE_RETRIES, RECONCILE_TASK, app, settings_of
from workers.runtime import run


def scope_of(tenant_id: str, relationship_id: str) -> RelationshipScope:
    return RelationshipScope(
        TenantId(uuid.UUID(tenant_id)), RelationshipId(uuid.UUID(relationship_id))
    )


def _activity(inserted: list[PendingTurn]) -> dict[str, Any]:
    """What stored turns change on their relationship: when it was last active, when the
    user last wrote, and when the creator last replied (an assistant turn while the
    creator operates it: the 72-hour rule, decision 0047). NULLs are ignored by greatest."""
    latest = max(t.at for t in inserted)
    users = [t.at for t in inserted if t.role == "user"]
    replies = [t.at for t in inserted if t.role == "assistant"]
    values: dict[str, Any] = {"last_active_at": func.greatest(Relationship.last_active_at, latest)}
    changed = [Relationship.last_active_at.is_(None), Relationship.last_active_at < latest]
    if users:
        values["last_user_turn_at"] = func.greatest(Relationship.last_user_turn_at, max(users))
        changed += [
            Relationship.last_user_turn_at.is_(None),
            Relationship.last_user_turn_at < max(users),
        ]
    if replies:
        by_creator = Relationship.operator_kind == OperatorKind.CREATOR
        values["creator_replied_at"] = case(
            (by_creator, func.greatest(Relationship.creator_replied_at, max(replies))),
            else_=Relationship.creator_replied_at,
        )
        changed.append(by_creator)
    return {"values": values, "changed": or_(*changed)}


async def _persist(resources: Resources, scope: RelationshipScope, turns: list[PendingTurn]) -> int:
    async with tenant_transaction(resources.sessions, scope.tenant_id) as session:
        inserted = await store_turns(session, scope, turns)
        if inserted:
            activity = _activity(inserted)
            await session.execute(
                update(Relationship)
                .where(
                    Relationship.tenant_id == scope.tenant_id,
                    Relationship.id == scope.relationship_id,
                    activity["changed"],
                )
                .values(**activity["values"])
            )
    return len(inserted)


@app.task(name=PERSIST_TASK, **OUTAGE_RETRIES)
def persist(tenant_id: str, relationship_id: str, wire: list[list[Any]]) -> int:
    """Insert the turns that are not stored yet. Redelivery (late acks) and the API's
    synchronous fallback may both write a turn: the turn id makes that a no-op."""
    scope = scope_of(tenant_id, relationship_id)
    annotate(tenant_id=tenant_id, relationship_id=relationship_id)
    turns = [PendingTurn.from_wire(item) for item in wire]
    stored = run(settings_of(app), lambda resources: _persist(resources, scope, turns))
    record_persist_lag([t.id for t in turns])
    return stored


async def _reconcile(resources: Resources) -> int:
    ingest = resources.settings.ingest
    return await reconcile(
        resources.sessions,
        resources.redis,
        ingest.reconcile_after_seconds,
        ingest.working_memory_turns,
    )


@app.task(name=RECONCILE_TASK)
def reconcile_turns() -> int:
    """Periodic (beat): store accepted turns whose persist task was lost."""
    return run(settings_of(app), _reconcile)
