"""Requests per second, per key and per tenant, counted in Redis for every API process:
one script call per request, in fixed one-second windows."""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from redis.asyncio import Redis

from tenancy.access.principal import Principal
from tenancy.limits.errors import RateLimited
from tenancy.limits.headers import Window, rate_limit_headers
from tenancy.limits.redis_calls import run_script
from tenancy.limits.values import NO_LIMIT, LimitName, TenantLimits
from tether.core.instruments import LIMITS_REFUSED

WINDOW_MS = 1000
# KEYS: the key's window, the tenant's; ARGV: their limits (0: none), the window in ms.
# A request is counted in both windows only if neither is full, so requests one key has
# had refused do not use up what the tenant's other keys may send. A window starts with
# its first request (SET ... PX); a script sees one instant, so none ends half-way.
# Answers: which window refused (0: none), then each window's count and ms left.
_RATE = """
local limits = {tonumber(ARGV[1]), tonumber(ARGV[2])}
local window = tonumber(ARGV[3])
local counts, left = {0, 0}, {window, window}
for i = 1, 2 do
  local ttl = redis.call('PTTL', KEYS[i])
  if ttl > 0 then
    counts[i] = tonumber(redis.call('GET', KEYS[i]))
    left[i] = ttl
  end
end
for i = 1, 2 do
  if limits[i] > 0 and counts[i] >= limits[i] then
    return {i, counts[1], left[1], counts[2], left[2]}
  end
end
for i = 1, 2 do
  if limits[i] > 0 then
    if counts[i] == 0 then
      redis.call('SET', KEYS[i], 1, 'PX', window)
      counts[i] = 1
    else
      counts[i] = redis.call('INCR', KEYS[i])
    end
  end
end
return {0, counts[1], left[1], counts[2], left[2]}
"""
_NAMES = (LimitName.KEY_REQUESTS_PER_SECOND, LimitName.TENANT_REQUESTS_PER_SECOND)
_MAX_FULL = 100_000


@dataclass(frozen=True, slots=True)
class _Full:
    """A window Redis found full: it stays full until it ends (counts only grow)."""

    until: float
    window: Window


def _keys(principal: Principal) -> tuple[str, str]:
    tenant = f"tether:rate:{{{principal.tenant_id}}}"
    return f"{tenant}:key:{principal.key_id}", f"{tenant}:all"


class RequestLimiter:
    def __init__(self, redis: Redis, clock: Callable[[], float] = time.monotonic) -> None:
        self._redis = redis
        self._script = redis.register_script(_RATE)
        self._clock = clock
        # Windows this process saw refused, until they end: a flood over its limit is
        # refused from here, without asking Redis again (see tether.api.early_refusals).
        self._full: dict[str, _Full] = {}

    def refused_here(self, principal: Principal) -> RateLimited | None:
        """The 429 for ``principal`` if this process knows one of its windows is full."""
        now = self._clock()
        for which, key in enumerate(_keys(principal), start=1):
            full = self._full.get(key)
            if full is None:
                continue
            if full.until <= now:
                del self._full[key]
                continue
            left = math.ceil((full.until - now) * 1000)
            window = dataclasses.replace(full.window, reset_seconds=math.ceil(left / 1000))
            return self._refusal(which, [window], left)
        return None

    async def hit(self, principal: Principal, limits: TenantLimits) -> list[Window]:
        """Count one request of ``principal``: the windows it was counted in, or 429
        ``rate_limited`` when one is full. Nothing is counted (and the request served)
        when Redis is away."""
        key_limit, tenant_limit = (limits[name] for name in _NAMES)
        if key_limit == NO_LIMIT and tenant_limit == NO_LIMIT:
            return []
        if (refusal := self.refused_here(principal)) is not None:
            raise refusal
        keys = _keys(principal)
        answer = await run_script(
            self._redis,
            self._script,
            "requests_per_second",
            keys,
            [key_limit, tenant_limit, WINDOW_MS],
        )
        if answer is None:
            return []
        refused, key_count, key_left, tenant_count, tenant_left = answer
        windows = [
            Window(policy, limit, 1, limit - count, math.ceil(left / 1000))
            for policy, limit, count, left in (
                ("key", key_limit, key_count, key_left),
                ("tenant", tenant_limit, tenant_count, tenant_left),
            )
            if limit != NO_LIMIT
        ]
        if refused:
            left = key_left if refused == 1 else tenant_left
            full = next(w for w in windows if w.policy == ("key", "tenant")[refused - 1])
            self._remember(keys[refused - 1], full, left)
            raise self._refusal(refused, windows, left)
        return windows

    def _remember(self, key: str, window: Window, left_ms: int) -> None:
        if len(self._full) >= _MAX_FULL:
            now = self._clock()
            self._full = {k: f for k, f in self._full.items() if f.until > now}
        self._full[key] = _Full(self._clock() + left_ms / 1000, window)

    @staticmethod
    def _refusal(which: int, windows: list[Window], left_ms: int) -> RateLimited:
        name = _NAMES[which - 1]
        LIMITS_REFUSED.add(1, {"limit": name.value})
        full = next(w for w in windows if w.policy == ("key", "tenant")[which - 1])
        retry = max(1, math.ceil(left_ms / 1000))
        return RateLimited(
            f"{name.value} is {full.quota}; retry in {retry} s",
            retry_after=retry,
            headers=rate_limit_headers(windows),
            limit=name.value,
            quota=full.quota,
        )
