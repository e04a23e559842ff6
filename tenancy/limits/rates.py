"""Requests per second, per key and per tenant, counted in Redis for every API process:
one script call per request.

Each limit is a token bucket (GCRA: one timestamp per bucket) refilled at the limit's
rate and holding at most ``burst`` requests, ``burst_seconds`` of the rate. A tenant at
its limit therefore gets its requests spread over the second, not all at once when a
window opens: a fixed one-second window let a flood through as a burst of a whole
second's quota at the start of every window, which is what other tenants felt
(decision 0035)."""

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

# KEYS: the key's bucket, the tenant's. ARGV: each one's rate per second (0: none) and
# burst. A bucket stores the time (ms, Redis's clock) it will be empty at ("TAT"). A
# request fits if, counted, the bucket holds at most ``burst``. It is counted in both
# buckets only if it fits in both, so what one key had refused does not use up what the
# tenant's other keys may send. Answers: which bucket refused (0: none), the ms until a
# request would fit, then for each bucket what remains and the ms until it is empty.
_RATE = """
local clock = redis.call('TIME')
local now = clock[1] * 1000 + clock[2] / 1000
local answer = {0, 0, 0, 0, 0, 0}
local due = {}
for i = 1, 2 do
  local rate = tonumber(ARGV[2 * i - 1])
  if rate > 0 then
    local interval = 1000 / rate
    local room = interval * tonumber(ARGV[2 * i])
    local tat = math.max(tonumber(redis.call('GET', KEYS[i]) or now), now)
    local after = tat + interval
    if after - now > room then
      answer[1], answer[2] = i, math.ceil(after - room - now)
      answer[2 * i + 1], answer[2 * i + 2] = 0, math.ceil(tat - now)
      return answer
    end
    due[i] = after
    answer[2 * i + 1] = math.floor((room - (after - now)) / interval)
    answer[2 * i + 2] = math.ceil(after - now)
  end
end
for i = 1, 2 do
  if due[i] then
    redis.call('SET', KEYS[i], string.format('%.3f', due[i]), 'PX', math.ceil(due[i] - now) + 1)
  end
end
return answer
"""
_NAMES = (LimitName.KEY_REQUESTS_PER_SECOND, LimitName.TENANT_REQUESTS_PER_SECOND)
_POLICIES = ("key", "tenant")
_MAX_REMEMBERED = 100_000


def burst_of(rate: int, burst_seconds: float) -> int:
    """How many requests a bucket of ``rate`` per second takes at once."""
    return max(1, math.ceil(rate * burst_seconds))


@dataclass(frozen=True, slots=True)
class _Refused:
    """A bucket Redis found full, and when it takes a request again."""

    until: float
    window: Window


def _keys(principal: Principal) -> tuple[str, str]:
    tenant = f"tether:rate:{{{principal.tenant_id}}}"
    return f"{tenant}:key:{principal.key_id}", f"{tenant}:all"


class RequestLimiter:
    def __init__(
        self, redis: Redis, burst_seconds: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._redis = redis
        self._script = redis.register_script(_RATE)
        self._burst_seconds = burst_seconds
        self._clock = clock
        # Buckets this process saw full, until they take a request again: a flood over
        # its limit is refused from here without asking Redis (tether.api.early_refusals).
        self._refused: dict[str, _Refused] = {}

    def refused_here(self, principal: Principal) -> RateLimited | None:
        """The 429 for ``principal`` if this process knows one of its buckets is full."""
        now = self._clock()
        for which, key in enumerate(_keys(principal), start=1):
            refused = self._refused.get(key)
            if refused is None:
                continue
            if refused.until <= now:
                del self._refused[key]
                continue
            return self._refusal(which, [refused.window], math.ceil((refused.until - now) * 1000))
        return None

    async def hit(self, principal: Principal, limits: TenantLimits) -> list[Window]:
        """Count one request of ``principal``: its buckets as the RateLimit fields show
        them, or 429 ``rate_limited`` when one is full. Nothing is counted (and the
        request served) when Redis is away."""
        rates = [limits[name] for name in _NAMES]
        if all(rate == NO_LIMIT for rate in rates):
            return []
        if (refusal := self.refused_here(principal)) is not None:
            raise refusal
        keys = _keys(principal)
        args: list[int | str] = []
        for rate in rates:
            args += [rate, burst_of(rate, self._burst_seconds)]
        answer = await run_script(self._redis, self._script, "requests_per_second", keys, args)
        if answer is None:
            return []
        refused, wait_ms, *state = answer
        windows = [
            Window(policy, rate, 1, state[2 * i], math.ceil(state[2 * i + 1] / 1000))
            for i, (policy, rate) in enumerate(zip(_POLICIES, rates, strict=True))
            if rate != NO_LIMIT
        ]
        if refused:
            full = next(w for w in windows if w.policy == _POLICIES[refused - 1])
            self._remember(keys[refused - 1], full, wait_ms)
            raise self._refusal(refused, windows, wait_ms)
        self._remember_emptied(keys, rates, state)
        return windows

    def _remember_emptied(self, keys: tuple[str, str], rates: list[int], state: list[int]) -> None:
        """A bucket this request emptied takes no other before its next refill: refuse
        from here until then, rather than learn it from Redis with one more request."""
        for i, rate in enumerate(rates):
            if rate == NO_LIMIT or state[2 * i] > 0:
                continue
            interval = 1000 / rate
            burst = burst_of(rate, self._burst_seconds)
            # Redis rounded the time up: one ms less, never longer than Redis would refuse.
            wait_ms = math.floor(state[2 * i + 1] - 1 - (burst - 1) * interval)
            if wait_ms > 0:
                window = Window(_POLICIES[i], rate, 1, 0, math.ceil(state[2 * i + 1] / 1000))
                self._remember(keys[i], window, wait_ms)

    def _remember(self, key: str, window: Window, wait_ms: int) -> None:
        now = self._clock()
        if len(self._refused) >= _MAX_REMEMBERED:
            self._refused = {k: r for k, r in self._refused.items() if r.until > now}
        self._refused[key] = _Refused(now + wait_ms / 1000, window)

    @staticmethod
    def _refusal(which: int, windows: list[Window], wait_ms: int) -> RateLimited:
        name = _NAMES[which - 1]
        LIMITS_REFUSED.add(1, {"limit": name.value})
        full = next(w for w in windows if w.policy == _POLICIES[which - 1])
        retry = max(1, math.ceil(wait_ms / 1000))
        shown = dataclasses.replace(full, remaining=0, reset_seconds=max(retry, full.reset_seconds))
        return RateLimited(
            f"{name.value} is {full.quota}; retry in {retry} s",
            retry_after=retry,
            headers=rate_limit_headers([shown]),
            limit=name.value,
            quota=full.quota,
            retry_after_ms=max(1, wait_ms),
        )
