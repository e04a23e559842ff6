"""The backstop behind the queue: accepted turns that never reached Postgres are stored
from working memory.

Celery over Redis can lose a message when a worker is killed between taking it off the
queue and recording it as unacknowledged (kombu's BRPOP window). Every accepted turn is
also in its relationship's working memory, with the id the API gave it, so a periodic
sweep inserts whatever of it Postgres does not have; the id makes that idempotent.
"""

from __future__ import annotations

import time
import uuid
from datetime import datetime

from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tenancy.ids import RelationshipId, RelationshipScope
from tether.core.ids import TenantId
from tether.core.tenant_sessions import tenant_transaction
from tether.turns.claims import RECENT_KEY
from tether.turns.pending import PendingTurn
from tether.turns.repositories import TurnRepository
from tether.turns.services import store_turns
from tether.turns.working_memory import WorkingMemory

BATCH = 200

# Remove a relationship from the recent set only if no turn arrived since it was read.
_FORGET_IF_UNCHANGED = """
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) <= tonumber(ARGV[2]) then
  return redis.call('ZREM', KEYS[1], ARGV[1])
end
return 0
"""


def _scope(member: str) -> RelationshipScope:
    tenant_id, relationship_id = member.split(":")
    return RelationshipScope(
        TenantId(uuid.UUID(tenant_id)), RelationshipId(uuid.UUID(relationship_id))
    )


async def _repair(
    sessions: async_sessionmaker[AsyncSession], redis: Redis, scope: RelationshipScope, cap: int
) -> int:
    entries = await WorkingMemory(redis).recent(scope, cap)
    if not entries:
        return 0
    async with tenant_transaction(sessions, scope.tenant_id) as session:
        stored = {
            t.id for t in await TurnRepository(session, scope).by_ids([e.id for e in entries])
        }
        missing = [
            PendingTurn(e.id, e.session_id, e.role, e.text, datetime.fromisoformat(e.at), (), None)
            for e in entries
            if e.id not in stored
        ]
        inserted = await store_turns(session, scope, missing)
    return len(inserted)


async def reconcile(
    sessions: async_sessionmaker[AsyncSession], redis: Redis, older_than_seconds: float, cap: int
) -> int:
    """Store the turns of relationships quiet for ``older_than_seconds`` that are in
    working memory but not in Postgres; how many were missing."""
    cutoff = int(time.time() - older_than_seconds)
    forget = redis.register_script(_FORGET_IF_UNCHANGED)
    repaired = 0
    while True:
        members = await redis.zrangebyscore(
            RECENT_KEY, 0, cutoff, start=0, num=BATCH, withscores=True
        )
        if not members:
            return repaired
        for item in members:
            raw, score = item[0], item[1]  # (member, score) pairs with withscores
            member = raw.decode() if isinstance(raw, bytes) else str(raw)
            repaired += await _repair(sessions, redis, _scope(member), cap)
            await forget(keys=[RECENT_KEY], args=[member, int(score)])
        if len(members) < BATCH:
            return repaired
