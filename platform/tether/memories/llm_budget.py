"""Whether a tenant's session may use the optional LLM extraction step: the tenant's
``extraction`` settings (read through the per-process settings cache) say whether it is
on and how many calls a UTC day it may make; the calls are counted in Redis. Past the
budget, or off, extraction runs on the rules alone, and says so in the log and in
``tether.extraction.llm_skipped``."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from redis.asyncio import Redis
from redis.exceptions import RedisError

from tenancy.settings.cache import TenantSettingsCache
from tether.core.ids import TenantId
from tether.core.instruments import LLM_EXTRACTION_SKIPPED

log = logging.getLogger(__name__)

# A day's counter outlives its day a little, for whoever reads it the next morning.
COUNTER_TTL_SECONDS = 2 * 86_400


def counter_key(tenant_id: TenantId, now: datetime) -> str:
    return f"tether:llm-calls:{tenant_id}:{now.astimezone(UTC):%Y%m%d}"


class LlmGate:
    def __init__(self, redis: Redis, settings: TenantSettingsCache) -> None:
        self._redis = redis
        self._settings = settings

    async def allow(self, tenant_id: TenantId, now: datetime | None = None) -> bool:
        """True when this tenant may make one more LLM call today (the call is counted)."""
        extraction = (await self._settings.get(tenant_id)).extraction
        if not extraction.llm_enabled:
            self._skip(tenant_id, "tenant_off")
            return False
        budget = extraction.llm_daily_calls
        if budget is None:
            return True
        key = counter_key(tenant_id, now or datetime.now(UTC))
        try:
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.incr(key)
                pipe.expire(key, COUNTER_TTL_SECONDS)
                used, _ = await pipe.execute()
        except RedisError as exc:  # a budget we cannot count is not spent blindly
            log.warning("LLM call budget of tenant %s not counted (%s)", tenant_id, exc)
            self._skip(tenant_id, "budget_unchecked")
            return False
        if int(used) > budget:
            self._skip(tenant_id, "daily_budget")
            return False
        return True

    @staticmethod
    def _skip(tenant_id: TenantId, reason: str) -> None:
        log.info("LLM extraction step skipped for tenant %s (%s): rules only", tenant_id, reason)
        LLM_EXTRACTION_SKIPPED.add(1, {"reason": reason})
