"""Invalidations that failed, recorded in the durable Redis for a periodic retry.

A write whose invalidation could not reach the hot Redis leaves the old version token in
place, so other processes may serve the partition as it was before the write until the
token expires (``hot.VERSION_TTL_SECONDS``). An API process retries in its own loop, but
a worker or the CLI has no loop between tasks, and an API process stopping drops what it
held. So every failure is also recorded here: a sorted set in the Redis that persists
turns (``tether:uninvalidated``, member ``{tenant}:{relationship}``, score the time of
the first failure), which the beat task ``memories.retry_invalidations`` drains once the
hot Redis answers. With one Redis for both, the record fails as the invalidation did and
the token's lifetime alone bounds the staleness. When an API process's own retry lands
first, the record is still retried: one more version change, so one more cold read of
that partition, which is cheaper than a second round trip on every successful retry.

A member is taken out of the set before its version is replaced, and put back if the
hot Redis is still away, so a failure recorded meanwhile is never removed unhandled; a
worker killed in between loses what it took (the token's lifetime bounds those).
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


async def record_failed(durable: Redis, scope: RelationshipScope, now: float) -> bool:
    """Record that ``scope``'s invalidation failed at ``now`` (POSIX seconds; an earlier
    record of it is kept as it is). False if the durable Redis did not answer either."""
    try:
        await durable.zadd(UNINVALIDATED_KEY, {_member(scope): now}, nx=True)
    except RedisError as exc:
        log.error("failed invalidation of %s not recorded: %s", scope.relationship_id, exc)
        return False
    return True


def _pairs(reply: object) -> list[tuple[bytes, float]]:
    """ZPOPMIN's reply as (member, score) pairs (the typed client allows several shapes)."""
    pairs = cast(list[tuple[bytes | str, float]], reply)
    return [(as_bytes(member), float(score)) for member, score in pairs]


@dataclass(frozen=True, slots=True)
class RetryReport:
    invalidated: int = 0
    expired: int = 0  # recorded longer ago than a token lives: nothing left to do
    waiting: int = 0  # put back: the hot Redis is still away


async def retry_recorded(
    durable: Redis,
    replace_version: Callable[[RelationshipScope], Awaitable[None]],
    now: float,
    token_lifetime: float,
) -> RetryReport:
    """Replace the version of every recorded partition (``replace_version`` raises
    ``RedisError`` while the hot Redis is away), oldest first; stops at the first
    failure and puts back what it took and did not do."""
    invalidated = expired = 0
    while taken := _pairs(await durable.zpopmin(UNINVALIDATED_KEY, BATCH)):
        for position, (member, since) in enumerate(taken):
            scope = _scope(member)
            if scope is None or now - since >= token_lifetime:
                expired += 1
                continue
            try:
                await replace_version(scope)
            except RedisError as exc:
                left: dict[bytes, float] = dict(taken[position:])
                await durable.zadd(UNINVALIDATED_KEY, left, nx=True)
                log.warning("%d failed invalidations wait for the hot Redis: %s", len(left), exc)
                return RetryReport(invalidated, expired, len(left))
            invalidated += 1
        if len(taken) < BATCH:
            break
    if invalidated:
        log.info("%d failed invalidations done on retry", invalidated)
    return RetryReport(invalidated, expired)
