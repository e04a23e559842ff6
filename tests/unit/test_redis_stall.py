"""After Redis times out twice in a row, the client fails optional reads at once for a
while instead of letting every one wait for its own timeout; writes are always sent."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from tests.support import stalled_redis
from tether.core.redis_client import Stall, create_redis
from tether.core.settings import Settings


def test_a_stall_is_two_failures_in_a_row_remembered_for_its_seconds() -> None:
    now = [100.0]
    stall = Stall(2.0, clock=lambda: now[0])
    stall.failed()
    assert not stall.recent  # one timeout can be a busy process
    stall.answered()
    stall.failed()
    assert not stall.recent  # not in a row
    stall.failed()
    assert stall.recent
    now[0] += 1.9
    assert stall.recent
    now[0] += 0.2
    assert not stall.recent
    stall.failed()  # the first read after the pause fails too: a stall again at once
    assert stall.recent


async def _timed(call: Awaitable[object]) -> tuple[type[BaseException], float]:
    started = time.perf_counter()
    with pytest.raises((RedisConnectionError, RedisTimeoutError)) as failure:
        await call
    return failure.type, time.perf_counter() - started


async def test_reads_after_two_timeouts_fail_at_once_and_writes_still_go() -> None:
    # Timeouts of 0.6 s against "at once": far apart even on a loaded machine.
    with stalled_redis() as url:
        client = create_redis(Settings(redis_url=url, redis_stall_seconds=2.0), 0.6)
        try:
            for _ in range(2):
                kind, waited = await _timed(client.get("k"))
                assert kind is RedisTimeoutError
                assert waited >= 0.55  # sent, and waited for its timeout
            kind, skipped = await _timed(client.get("k"))
            assert kind is RedisConnectionError
            assert skipped < 0.3  # not sent
            _, listed = await _timed(client.lrange("l", 0, -1))
            assert listed < 0.3
            _, write = await _timed(client.set("k", b"v"))
            assert write >= 0.55  # an invalidation is never skipped
            await asyncio.sleep(2.1)  # the stall is over: the next read is sent again
            kind, again = await _timed(client.get("k"))
            assert kind is RedisTimeoutError
            assert again >= 0.55
        finally:
            await client.aclose()


async def test_zero_seconds_turns_it_off() -> None:
    with stalled_redis() as url:
        client = create_redis(Settings(redis_url=url, redis_stall_seconds=0), 0.4)
        try:
            for _ in range(3):
                kind, waited = await _timed(client.get("k"))
                assert kind is RedisTimeoutError
                assert waited >= 0.35
        finally:
            await client.aclose()
