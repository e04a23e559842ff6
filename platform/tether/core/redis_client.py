"""The async Redis client. Short timeouts: a Redis outage must degrade a request, not
hang it."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, cast

from redis.asyncio import Redis
from redis.asyncio.client import Pipeline
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from tether.core.instruments import REDIS_READS_SKIPPED
from tether.core.settings import Settings
from tether.core.telemetry import instrument_redis


def broker_url(redis_url: str) -> str:
    """The Celery broker URL for our Redis: kombu spells a unix socket ``redis+socket://``;
    TCP URLs pass through."""
    if redis_url.startswith("unix://"):
        path, _, query = redis_url[len("unix://") :].partition("?")
        db = dict(p.split("=", 1) for p in query.split("&") if "=" in p).get("db", "0")
        return f"redis+socket://{path}?virtual_host={db}"
    return redis_url


def as_bytes(reply: bytes | str) -> bytes:
    """A Redis reply as bytes (the typed client says either; ours returns bytes)."""
    return reply.encode() if isinstance(reply, str) else reply


# Reading or writing one value of several megabytes (a large hot partition) took longer
# than the default timeout under load, and was taken for an outage.
BULK_SOCKET_TIMEOUT_SECONDS = 2.0


class Stall:
    """Remembers for ``seconds`` that Redis failed ``after`` times in a row (a timeout,
    or no connection).

    "In a row" means one after another: a failure counts only if its command started
    after the previous counted failure. One frozen event loop times out every read in
    flight at once while Redis is fine; that is one failure, not several. Any answer
    from Redis ends the stall."""

    def __init__(
        self, seconds: float, after: int = 2, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.seconds = seconds
        self._after = after
        self._clock = clock
        self._failures = 0
        self._last_failure = float("-inf")
        self._until = 0.0
        self.timed_out = False  # what the failures were: timeouts, or refused connections

    def now(self) -> float:
        return self._clock()

    def failed(self, started: float, timed_out: bool) -> None:
        if started < self._last_failure:
            return  # in flight together with the failure already counted
        self._last_failure = self._clock()
        self._failures += 1
        self.timed_out = timed_out
        if self._failures >= self._after:
            self._until = self._last_failure + self.seconds

    def answered(self) -> None:
        self._failures = 0
        self._until = 0.0

    def skip(self) -> bool:
        """Whether an optional read should not be sent now. When the pause is over, the
        first read is sent to see whether Redis is back (the pause starts over for the
        others meanwhile; its answer or failure settles it)."""
        now = self._clock()
        if now < self._until:
            return True
        if self._failures >= self._after:
            self._until = now + self.seconds
        return False


# Reads every caller already treats as optional (a RedisError means "read Postgres" or
# "no cached value"); EXPIRE only extends a TTL. Writes are always sent: an invalidation
# must not be skipped because an earlier command failed.
SKIPPABLE = frozenset({b"GET", b"GETEX", b"MGET", b"LRANGE", b"EXISTS", b"TTL", b"EXPIRE"})


class RedisStalledTimeout(RedisTimeoutError):
    """A read not sent because Redis recently timed out (callers see a timeout)."""


class RedisStalledConnection(RedisConnectionError):
    """A read not sent because Redis recently refused connections."""


def _stalled(stall: Stall, *names: bytes) -> RedisError:
    for name in names:
        REDIS_READS_SKIPPED.add(1, {"command": name.decode()})
    reason = f"Redis failed twice in a row less than {stall.seconds} s ago; not asked"
    return RedisStalledTimeout(reason) if stall.timed_out else RedisStalledConnection(reason)


class StallAwareRedis(Redis):
    """A client that, for a few seconds after Redis failed twice in a row (timed out, or
    refused a connection), fails the reads in ``SKIPPABLE`` at once, with the same kind
    of error, instead of waiting for each one's timeout.

    A stalled Redis (it accepts connections and never answers) otherwise costs every
    read its full socket timeout: a context request makes four sequential reads, so each
    message took 2 s. With this, one read per ``stall.seconds`` is sent to see whether
    Redis is back, and the others degrade at once."""

    stall: Stall | None = None

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        stall = self.stall
        if stall is None:
            return await super().execute_command(*args, **options)  # type: ignore[no-untyped-call]
        name = _name(args)
        if name in SKIPPABLE and stall.skip():
            raise _stalled(stall, name)
        started = stall.now()
        try:
            answer = await super().execute_command(*args, **options)  # type: ignore[no-untyped-call]
        except (RedisConnectionError, RedisTimeoutError) as exc:
            stall.failed(started, timed_out=isinstance(exc, RedisTimeoutError))
            raise
        stall.answered()
        return answer

    def pipeline(self, transaction: bool = True, shard_hint: str | None = None) -> Pipeline:
        pipeline = StallAwarePipeline(
            self.connection_pool, self.response_callbacks, transaction, shard_hint
        )
        pipeline.stall = self.stall
        return pipeline


class StallAwarePipeline(Pipeline):
    """A pipeline that counts in the client's ``Stall`` like one command: it fails at
    once during a stall if every command it holds is in ``SKIPPABLE`` (one with a write
    is always sent), and its timeout or answer counts as one failure or one answer."""

    stall: Stall | None = None

    async def execute(self, raise_on_error: bool = True) -> list[Any]:
        stall = self.stall
        if stall is None or not self.command_stack:
            return await super().execute(raise_on_error)
        names = [_name(args) for args, _ in self.command_stack]
        if all(name in SKIPPABLE for name in names) and stall.skip():
            await self.reset()  # type: ignore[no-untyped-call]
            raise _stalled(stall, *names)
        started = stall.now()
        try:
            answers = await super().execute(raise_on_error)
        except (RedisConnectionError, RedisTimeoutError) as exc:
            stall.failed(started, timed_out=isinstance(exc, RedisTimeoutError))
            raise
        stall.answered()
        return answers


def _name(args: tuple[Any, ...]) -> bytes:
    if not args:
        return b""
    first = args[0]
    return (first if isinstance(first, bytes) else str(first).encode()).upper()


def create_redis(settings: Settings, socket_timeout: float = 0.5, url: str | None = None) -> Redis:
    """A pooled client for this process (one per event loop), of ``url`` (default: the
    Redis of ``redis_url``). ``socket_timeout``: longer only for the client of
    multi-megabyte values (``Resources.bulk_redis``)."""
    # from_url builds ``cls``; its annotation says Redis.
    client = cast(
        StallAwareRedis,
        StallAwareRedis.from_url(
            url or settings.require_redis_url(),
            socket_connect_timeout=0.5,
            socket_timeout=socket_timeout,
            health_check_interval=30,
            decode_responses=False,
        ),
    )
    if settings.redis_stall_seconds > 0:
        client.stall = Stall(settings.redis_stall_seconds)
    instrument_redis(client)
    return client
