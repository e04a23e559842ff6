"""Version tokens: which state of a relationship's partition is current.

A token in the hot Redis names the current state. Every memory write replaces it when
its transaction commits (and deletes the Redis copy), so a copy tagged with an older token
is never used, in any process. A token lives ``VERSION_TTL_SECONDS`` from when it is set
and is never extended by reads: when an invalidation fails (the hot Redis away), the old
token and copies stay, and the token's expiry bounds how long they can outlive the
write. Until then the failure is retried: in the background by API processes, and by the
beat task from the durable record every process writes (invalidations.py).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
import uuid

from redis.asyncio import Redis
from redis.exceptions import RedisError

from tenancy.ids import RelationshipScope
from tether.core.background import spawn
from tether.recall.invalidations import record_failed

log = logging.getLogger(__name__)

VERSION_TTL_SECONDS = 3600
# Bumped when the Redis copy's layout changes: a copy of another layout is never read.
BLOB_FORMAT = 6
# A failed invalidation is tried again with waits doubling from the first to the most,
# until it lands or the token has expired by itself; past the most pending, the oldest
# are left to the TTL.
RETRY_FIRST_SECONDS = 0.5
RETRY_MOST_SECONDS = 30.0
PENDING_MOST = 10_000

_Key = tuple[uuid.UUID, uuid.UUID]  # (tenant, relationship)


def partition_keys(scope: RelationshipScope) -> tuple[str, str]:
    """The version token's and the Redis copy's keys. The copy's key names its format,
    so a release that reads another layout never meets it (rolling deploys)."""
    base = f"{scope.tenant_id}:{scope.relationship_id}"
    return f"tether:pv:{base}", f"tether:hot{BLOB_FORMAT}:{base}"


def _text(raw: bytes | str | None) -> str | None:
    return raw.decode() if isinstance(raw, bytes) else raw


class PartitionVersions:
    def __init__(self, redis: Redis, durable: Redis | None, *, retry: bool) -> None:
        """``redis``: the hot Redis. ``durable``: where a failed invalidation is
        recorded for the beat's retry (None: not recorded). ``retry``: retry failures in
        the background (API processes, whose event loop always runs)."""
        self._redis = redis
        self._durable = durable
        self._retry = retry
        self._pending: dict[_Key, tuple[RelationshipScope, float]] = {}
        self._retrying: asyncio.Task[None] | None = None

    async def current(self, scope: RelationshipScope, ask_for_copy: bool) -> tuple[str, bool]:
        """The partition's current token (minted if it has none), and whether a Redis
        copy may hold it. ``ask_for_copy``: whether one exists is asked in the same round
        trip (a cold read's Redis steps all come before its Postgres ones)."""
        version_key, blob_key = partition_keys(scope)
        if ask_for_copy:
            async with self._redis.pipeline(transaction=False) as pipe:
                pipe.get(version_key)
                pipe.exists(blob_key)
                current, copies = await pipe.execute()
        else:
            current, copies = await self._redis.get(version_key), 1
        version = _text(current)
        if version is not None:
            return version, bool(copies)
        minted = secrets.token_hex(8)
        if await self._redis.set(version_key, minted, ex=VERSION_TTL_SECONDS, nx=True):
            return minted, False  # no copy can hold a token minted just now
        # Another process minted one first; its fill may have stored a copy meanwhile.
        return _text(await self._redis.get(version_key)) or minted, True

    async def still(self, scope: RelationshipScope, version: str) -> bool:
        """Whether ``version`` is still the current token."""
        return _text(await self._redis.get(partition_keys(scope)[0])) == version

    async def replace(self, scope: RelationshipScope) -> None:
        """Make every copy of the partition stale (raises ``RedisError`` if the hot
        Redis does not answer)."""
        version_key, blob_key = partition_keys(scope)
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.set(version_key, secrets.token_hex(8), ex=VERSION_TTL_SECONDS)
            pipe.delete(blob_key)
            await pipe.execute()

    async def invalidate(self, scope: RelationshipScope) -> None:
        """A memory of this relationship changed (call after the commit)."""
        key = (scope.tenant_id, scope.relationship_id)
        try:
            await self.replace(scope)
            self._pending.pop(key, None)
        except RedisError as exc:
            log.error("hot partition of %s not invalidated: %s", scope.relationship_id, exc)
            if self._durable is not None:
                await record_failed(self._durable, scope, time.time())
            if self._retry:
                self._retry_later(key, scope)

    def _retry_later(self, key: _Key, scope: RelationshipScope) -> None:
        if key not in self._pending and len(self._pending) >= PENDING_MOST:
            self._pending.pop(next(iter(self._pending)))
        self._pending.setdefault(key, (scope, time.monotonic()))
        if self._retrying is None or self._retrying.done():
            self._retrying = spawn(self._retry_pending(), "invalidation retry")

    async def _retry_pending(self) -> None:
        wait = RETRY_FIRST_SECONDS
        while self._pending:
            await asyncio.sleep(wait)
            wait = min(wait * 2, RETRY_MOST_SECONDS)
            for key, (scope, since) in list(self._pending.items()):
                if time.monotonic() - since >= VERSION_TTL_SECONDS:
                    self._pending.pop(key, None)  # the token expired by itself
                    continue
                try:
                    await self.replace(scope)
                except RedisError:
                    break  # still away: wait longer
                self._pending.pop(key, None)
                log.info("hot partition of %s invalidated on retry", scope.relationship_id)
            else:
                wait = RETRY_FIRST_SECONDS

    def close(self) -> None:
        """Stop retrying (at shutdown, before the Redis clients close): the tokens' TTL
        bounds what is left."""
        if self._retrying is not None and not self._retrying.done():
            self._retrying.cancel()
            log.warning("%d hot partitions left to their TTL", len(self._pending))
        self._pending.clear()
