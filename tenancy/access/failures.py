"""Failed authentications per client address: past ``per_minute`` in a minute, an
address's failing requests are answered 429 and its unsigned (legacy) tokens are no
longer looked up.

Counted in Redis, so every API process sees the same count; each process also remembers
an address it found over the limit until its minute ends, so a blocked address costs
no Redis call either. A request with a valid key is never refused here: an attacker
behind the same address as a real client does not lock that client out.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from redis.asyncio import Redis

from tenancy.limits.redis_calls import run_script
from tether.core.errors import TooManyRequests

WINDOW_SECONDS = 60
_MAX_BLOCKED = 100_000
# INCR and its expiry in one step; answers the count and the seconds left in the window.
_COUNT = """
local count = redis.call('INCR', KEYS[1])
if count == 1 or redis.call('TTL', KEYS[1]) < 0 then
  redis.call('EXPIRE', KEYS[1], ARGV[1])
end
return {count, redis.call('TTL', KEYS[1])}
"""


class AuthenticationThrottled(TooManyRequests):
    code = "too_many_failed_authentications"
    title = "Too many failed authentications from this address"


class FailedAuthentications:
    def __init__(
        self, redis: Redis, per_minute: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._redis = redis
        self._per_minute = per_minute
        self._clock = clock
        self._script = redis.register_script(_COUNT)
        self._blocked: dict[str, float] = {}  # address -> monotonic time its block ends

    def blocked_for(self, address: str | None) -> int:
        """Seconds this process still refuses ``address`` (0: not blocked)."""
        if address is None:
            return 0
        until = self._blocked.get(address)
        if until is None:
            return 0
        left = until - self._clock()
        if left <= 0:
            del self._blocked[address]
            return 0
        return max(1, round(left))

    async def record(self, address: str | None) -> int:
        """Count one failure; returns the seconds ``address`` is now blocked (0: not)."""
        if address is None:
            return 0
        if seconds := self.blocked_for(address):
            return seconds
        answer = await run_script(
            self._redis,
            self._script,
            "failed_auth_per_minute",
            [f"tether:authfail:{address}"],
            [WINDOW_SECONDS],
        )
        if answer is None or answer[0] <= self._per_minute:
            return 0
        seconds = max(1, answer[1])
        self._block(address, seconds)
        return seconds

    def _block(self, address: str, seconds: int) -> None:
        if len(self._blocked) >= _MAX_BLOCKED:
            now = self._clock()
            self._blocked = {a: t for a, t in self._blocked.items() if t > now}
        self._blocked[address] = self._clock() + seconds

    def throttled(self, seconds: int) -> AuthenticationThrottled:
        return AuthenticationThrottled(
            f"more than {self._per_minute} failed authentications from this address in a "
            f"minute; retry in {seconds} s",
            retry_after=seconds,
        )
