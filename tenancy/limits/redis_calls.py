"""Running a limit's Lua script in Redis, failing open: when Redis is away (or paused
after a stall, see ``tether.core.redis_client``) a limit is not checked and the request
is served. Limits protect the service; they must never be the reason it fails."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from redis.asyncio import Redis
from redis.commands.core import AsyncScript
from redis.exceptions import RedisError

from tether.core.instruments import LIMITS_UNCHECKED
from tether.core.redis_client import StallAwareRedis

log = logging.getLogger(__name__)
_LOG_EVERY_SECONDS = 10.0
_last_logged = 0.0


def _stalled(redis: Redis) -> bool:
    return isinstance(redis, StallAwareRedis) and redis.stall is not None and redis.stall.skip()


def _note_unchecked(what: str, reason: str) -> None:
    global _last_logged
    LIMITS_UNCHECKED.add(1, {"limit": what})
    now = time.monotonic()
    if now - _last_logged >= _LOG_EVERY_SECONDS:
        _last_logged = now
        log.warning("limits not checked (%s): %s; requests are served", what, reason)


async def run_script(
    redis: Redis, script: AsyncScript, what: str, keys: Sequence[str], args: Sequence[int | str]
) -> list[int] | None:
    """The script's integer answers, or None when Redis could not be asked."""
    if _stalled(redis):
        _note_unchecked(what, "Redis paused after failures")
        return None
    try:
        answer = await script(keys=list(keys), args=list(args))
    except RedisError as exc:
        _note_unchecked(what, type(exc).__name__)
        return None
    return [int(value) for value in answer]
