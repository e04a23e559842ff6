"""Per-tenant quotas counted in Redis: turns per UTC day, and what a tenant stores
(memories, knowledge bytes).

A write reserves its amount first (atomically: it fits under the quota or is refused
with 429 ``quota_exceeded``), and gives back what it did not use (duplicates, failures).
A day's turn count starts at 0. A stored amount is counted in Postgres (``recount``) when
Redis has no count or the count is older than ``recount_seconds``, so deletions, and
memories the workers extract, show at the next recount. When Redis is away, nothing is
counted and the write is served (decision 0035).
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta

from redis.asyncio import Redis
from redis.exceptions import RedisError

from tenancy.limits.cache import TenantLimitsCache
from tenancy.limits.errors import QuotaExceeded
from tenancy.limits.headers import Window, rate_limit_headers
from tenancy.limits.redis_calls import run_script
from tenancy.limits.values import NO_LIMIT, LimitName
from tether.core.ids import TenantId
from tether.core.instruments import LIMITS_REFUSED

Recount = Callable[[], Awaitable[int]]
DAY_SECONDS = 24 * 3600
# KEYS: the counter; ARGV: amount, quota, expiry (s), whether a missing count is 0
# (else the caller must recount: answer -1). Answers: taken (1/0/-1), count, seconds left.
_RESERVE = """
local used = redis.call('GET', KEYS[1])
if not used then
  if ARGV[4] == '0' then return {-1, 0, 0} end
  used = 0
end
used = tonumber(used)
local amount, quota = tonumber(ARGV[1]), tonumber(ARGV[2])
if used + amount > quota then return {0, used, redis.call('TTL', KEYS[1])} end
used = redis.call('INCRBY', KEYS[1], amount)
if redis.call('TTL', KEYS[1]) < 0 then redis.call('EXPIRE', KEYS[1], ARGV[3]) end
return {1, used, redis.call('TTL', KEYS[1])}
"""
_RELEASE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return {0} end
return {redis.call('DECRBY', KEYS[1], ARGV[1])}
"""


class Hold:
    """An amount reserved under a quota; ``settle`` gives back what was not used."""

    def __init__(self, amount: int) -> None:
        self.amount = amount
        self.used = amount

    def settle(self, used: int) -> None:
        self.used = min(used, self.amount)


def _seconds_to_midnight(now: datetime) -> int:
    midnight = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    return max(1, math.ceil((midnight - now).total_seconds()))


class Quotas:
    def __init__(self, redis: Redis, limits: TenantLimitsCache, recount_seconds: int) -> None:
        self._redis = redis
        self._limits = limits
        self._recount_seconds = recount_seconds
        self._reserve = redis.register_script(_RESERVE)
        self._release = redis.register_script(_RELEASE)

    @asynccontextmanager
    async def hold(
        self, tenant_id: TenantId, name: LimitName, amount: int, recount: Recount | None = None
    ) -> AsyncIterator[Hold]:
        """Reserve ``amount`` for the block; all of it is given back if the block raises.
        ``recount`` (for stored amounts) counts what the tenant stores now."""
        quota = (await self._limits.get(tenant_id))[name]
        held = Hold(amount)
        if quota == NO_LIMIT or amount <= 0:
            yield held
            return
        key = self._key(tenant_id, name)
        taken = await self._take(key, name, amount, quota, recount)
        try:
            yield held
        except BaseException:
            held.used = 0
            raise
        finally:
            if taken and held.used < amount:
                await run_script(
                    self._redis, self._release, name.value, [key], [amount - held.used]
                )

    def _key(self, tenant_id: TenantId, name: LimitName) -> str:
        key = f"tether:quota:{{{tenant_id}}}:{name.value}"
        if name is LimitName.TURNS_PER_DAY:
            key += datetime.now(UTC).strftime(":%Y%m%d")
        return key

    async def _take(
        self, key: str, name: LimitName, amount: int, quota: int, recount: Recount | None
    ) -> bool:
        """Whether the amount was counted (False: Redis away, served uncounted)."""
        daily = name is LimitName.TURNS_PER_DAY
        expiry = 2 * DAY_SECONDS if daily else self._recount_seconds
        args = [amount, quota, expiry, 1 if daily or recount is None else 0]
        answer = await run_script(self._redis, self._reserve, name.value, [key], args)
        if answer is not None and answer[0] == -1 and recount is not None:
            await self._seed(key, await recount())
            answer = await run_script(self._redis, self._reserve, name.value, [key], args)
        if answer is None or answer[0] == -1:
            return False
        taken, used, left = answer
        if not taken:
            raise self._refusal(name, quota, used, left, daily)
        return True

    async def _seed(self, key: str, stored: int) -> None:
        try:  # NX: a count another process stored meanwhile (with its writes) wins
            await self._redis.set(key, stored, ex=self._recount_seconds, nx=True)
        except RedisError:
            return  # the reservation that follows finds Redis away too, and serves

    def _refusal(
        self, name: LimitName, quota: int, used: int, left: int, daily: bool
    ) -> QuotaExceeded:
        LIMITS_REFUSED.add(1, {"limit": name.value})
        retry = _seconds_to_midnight(datetime.now(UTC)) if daily else max(1, left)
        policy = name.value.removesuffix("_per_day")
        window = Window(policy, quota, DAY_SECONDS if daily else None, quota - used, retry)
        when = "at 00:00 UTC" if daily else "when stored data is deleted"
        return QuotaExceeded(
            f"{name.value} is {quota} and {used} are used; it frees up {when}",
            retry_after=retry,
            headers=rate_limit_headers([window]),
            limit=name.value,
            quota=quota,
            used=used,
        )
