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
from tether.core.redis_client import RedisStalledTimeout, Stall, create_redis
from tether.core.settings import Settings


def test_a_stall_is_two_failures_one_after_another() -> None:
    now = [100.0]
    stall = Stall(2.0, clock=lambda: now[0])
    stall.failed(started=99.5, timed_out=True)
    assert not stall.skip()  # one timeout can be a busy process
    stall.failed(started=99.6, timed_out=True)  # in flight with the first: the same event
    assert not stall.skip()
    stall.answered()
    now[0] += 1
    stall.failed(started=now[0] - 0.5, timed_out=True)
    assert not stall.skip()  # an answer came in between
    now[0] += 1
    stall.failed(started=now[0] - 0.5, timed_out=True)
    assert stall.skip()
    assert stall.timed_out


def test_after_the_pause_one_read_checks_and_an_answer_ends_it() -> None:
    now = [100.0]
    stall = Stall(2.0, clock=lambda: now[0])
    for _ in range(2):
        now[0] += 1
        stall.failed(started=now[0] - 0.5, timed_out=False)
    now[0] += 1.9
    assert stall.skip()
    now[0] += 0.2
    assert not stall.skip()  # this read is sent
    assert stall.skip()  # the others still are not, until it settles
    stall.answered()
    assert not stall.skip()
    assert not stall.skip()


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
            assert kind is RedisStalledTimeout  # a timeout to its caller, as before
            assert skipped < 0.3  # not sent
            _, listed = await _timed(client.lrange("l", 0, -1))
            assert listed < 0.3
            _, write = await _timed(client.set("k", b"v"))
            assert write >= 0.55  # an invalidation is never skipped
            await asyncio.sleep(2.1)  # the pause is over: one read is sent to check
            checks = await asyncio.gather(*(_timed(client.get("k")) for _ in range(3)))
            assert sorted(kind.__name__ for kind, _ in checks) == [
                "RedisStalledTimeout",
                "RedisStalledTimeout",
                "TimeoutError",
            ]
        finally:
            await client.aclose()


async def test_reads_that_time_out_together_are_one_failure() -> None:
    # A frozen event loop times out every read in flight while Redis may be fine.
    with stalled_redis() as url:
        client = create_redis(Settings(redis_url=url, redis_stall_seconds=2.0), 0.5)
        try:
            together = await asyncio.gather(*(_timed(client.get("k")) for _ in range(3)))
            assert all(kind is RedisTimeoutError for kind, _ in together)
            kind, waited = await _timed(client.get("k"))
            assert kind is RedisTimeoutError  # sent: that was one failure, not three
            assert waited >= 0.45
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


async def test_a_pipeline_counts_as_one_command() -> None:
    # A read-only pipeline is skipped in a stall like a read; one holding a write is
    # always sent; each pipeline's timeout counts as one failure.
    with stalled_redis() as url:
        client = create_redis(Settings(redis_url=url, redis_stall_seconds=2.0), 0.6)

        async def reads() -> object:
            async with client.pipeline(transaction=False) as pipe:
                pipe.get("k")
                pipe.exists("h")
                return await pipe.execute()

        async def writes() -> object:
            async with client.pipeline(transaction=True) as pipe:
                pipe.set("k", b"v")
                pipe.delete("h")
                return await pipe.execute()

        try:
            for _ in range(2):
                kind, waited = await _timed(reads())
                assert kind is RedisTimeoutError
                assert waited >= 0.55
            kind, skipped = await _timed(reads())
            assert kind is RedisStalledTimeout
            assert skipped < 0.3
            _, single = await _timed(client.get("k"))
            assert single < 0.3  # the pipelines' failures stalled single reads too
            _, write = await _timed(writes())
            assert write >= 0.55
        finally:
            await client.aclose()


async def test_a_pipeline_answer_ends_a_stall(settings: Settings) -> None:
    client = create_redis(settings.model_copy(update={"redis_stall_seconds": 2.0}), 0.5)
    try:
        assert client.stall is not None
        for _ in range(2):
            client.stall.failed(started=client.stall.now(), timed_out=True)
        client.stall._until = 0.0  # the pause is over: the next read checks
        async with client.pipeline(transaction=False) as pipe:
            pipe.set("stall-check", b"1")
            pipe.get("stall-check")
            assert await pipe.execute() == [True, b"1"]
        assert not client.stall.skip()
        assert not client.stall.skip()  # answered: no longer stalled
    finally:
        await client.aclose()
