"""Invalidations that failed, recorded in the durable Redis for a periodic retry.

A write whose invalidation could not reach the hot Redis leaves the old version token in
place, so other processes may serve the partition as it was before the write until the
token expires (``hot.VERSION_TTL_SECONDS``). An API process retries in its own loop, but
a worker or the CLI has no loop between tasks, and an API process stopping drops what it
held. So every failure is also recorded here: a sorted set in the Redis that persists
turns (``tether:uninvalidated``, member ``{tenant}:{relationship}``, score the time of
its latest failure), which the beat task ``memories.retry_invalidations`` drains once
the hot Redis answers. With one Redis for both, the record fails as the invalidation did and
the token's lifetime alone bounds the staleness. When an API process's own retry lands
first, the record is still retried: one more version change, so one more cold read of
that partition, which is cheaper than a second round trip on every successful retry.

A retry reads the records, replaces their versions, and only then removes each record
whose score is still the one it read: a failure recorded meanwhile (a later score) stays
for the next retry, and a worker killed before the removal leaves every record in place.
So a record may be retried twice (one more cold read), never lost.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import cast

from redis.asyncio import Redis
from redis.exceptions import RedisError

from tenancy.ids import RelationshipId, RelationshipScope
from tether.core.ids import TenantId
from tether.core.redis_client import as_bytes

log = logging.getLogger(__name__)

UNINVALIDATED_KEY = "tether:uninvalidated"
RETRY_INVALIDATIONS_TASK = "memories.retry_invalidations"
# Members taken per round trip by a retry.
BATCH = 500


def _member(scope: RelationshipScope) -> str:
    return f"{scope.tenant_id}:{scope.relationship_id}"


def _scope(member: bytes) -> RelationshipScope | None:
    tenant, _, relationship = member.decode(errors="replace").partition(":")
    try:
        return RelationshipScope(
            TenantId(uuid.UUID(tenant)), RelationshipId(uuid.UUID(relationship))
        )
    except ValueError:
        return None  # not written by this module: dropped


# Sets ARGV[1]'s score to ARGV[2] unless it has a later one (as ZADD GT would, which
# needs Redis 6.2).
_RECORD = """
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
end
return 1
"""
# Removes each member of the ARGV pairs (member, score) whose score is not later than
# the one given: what a retry handled, not what failed again since it read it.
_REMOVE_HANDLED = """
local removed = 0
for i = 1, #ARGV, 2 do
  local score = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if score and tonumber(score) <= tonumber(ARGV[i + 1]) then
    removed = removed + redis.call('ZREM', KEYS[1], ARGV[i])
  end
end
return removed
"""


async def record_failed(durable: Redis, scope: RelationshipScope, now: float) -> bool:
    """Record that ``scope``'s invalidation failed at ``now`` (POSIX seconds; a record
    of a later failure is kept). False if the durable Redis did not answer either."""
    try:
        await durable.register_script(_RECORD)(
            keys=[UNINVALIDATED_KEY], args=[_member(scope), repr(now)]
        )
    except RedisError as exc:
        log.error("failed invalidation of %s not recorded: %s", scope.relationship_id, exc)
        return False
    return True


def _pairs(reply: object) -> list[tuple[bytes, float]]:
    """A WITHSCORES reply as (member, score) pairs (the typed client allows several
    shapes)."""
    pairs = cast(list[tuple[bytes | str, float]], reply)
    return [(as_bytes(member), float(score)) for member, score in pairs]


@dataclass(frozen=True, slots=True)
class RetryReport:
    invalidated: int = 0
    expired: int = 0  # recorded longer ago than a token lives: nothing left to do
    waiting: int = 0  # left in place: the hot Redis is still away


async def _remove_handled(durable: Redis, handled: list[tuple[bytes, float]]) -> None:
    if handled:
        args = [value for member, since in handled for value in (member, repr(since))]
        await durable.register_script(_REMOVE_HANDLED)(keys=[UNINVALIDATED_KEY], args=args)


async def retry_recorded(
    durable: Redis,
    replace_version: Callable[[RelationshipScope], Awaitable[None]],
    now: float,
    token_lifetime: float,
) -> RetryReport:
    """Replace the version of every partition recorded until ``now`` (``replace_version``
    raises ``RedisError`` while the hot Redis is away), oldest first, and remove the
    records it handled; stops at the first failure, leaving the rest in place. Failures
    recorded after ``now`` are the next retry's."""
    invalidated = expired = 0
    while taken := _pairs(
        await durable.zrangebyscore(UNINVALIDATED_KEY, "-inf", now, 0, BATCH, withscores=True)
    ):
        handled: list[tuple[bytes, float]] = []
        for position, (member, since) in enumerate(taken):
            scope = _scope(member)
            if scope is None or now - since >= token_lifetime:
                expired += 1
                handled.append((member, since))
                continue
            try:
                await replace_version(scope)
            except RedisError as exc:
                await _remove_handled(durable, handled)
                waiting = len(taken) - position
                log.warning("%d failed invalidations wait for the hot Redis: %s", waiting, exc)
                return RetryReport(invalidated, expired, waiting)
            invalidated += 1
            handled.append((member, since))
        await _remove_handled(durable, handled)
        if len(taken) < BATCH:
            break
    if invalidated:
        log.info("%d failed invalidations done on retry", invalidated)
    return RetryReport(invalidated, expired)
