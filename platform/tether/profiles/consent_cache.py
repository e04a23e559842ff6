"""The scopes of each user's current consent, from Redis: the context builder needs
them on every message and users change them rarely.

A withdrawal must stop the sharing at once, so the entry is kept in step with Postgres
without a per-message query:

- An entry is ``<version>:<scopes>``, the version being the consent record's id (see
  :class:`~tether.profiles.grants.Grant`). Writes are compare-and-set in Redis: an
  entry is never replaced by one of a lower version, so the cache settles on the record
  Postgres considers current, whatever order the writes arrive in.
- A change first replaces the entry with its own *change marker* (and is refused when it
  cannot: see :meth:`ConsentCache.begin_change`). Readers that find a marker read
  Postgres and do not fill. After the commit the change writes its scopes over its own
  marker; it leaves another change's marker alone (that change commits later and writes
  after it). A change that never writes (rolled back, or its process died) leaves its
  marker to expire after ``MARKER_SECONDS``: meanwhile readers use Postgres.
- Readers fill a missing entry with what they read; a marker or a newer entry wins.
"""

from __future__ import annotations

import logging
import secrets
import uuid

from redis.asyncio import Redis
from redis.exceptions import RedisError

from tether.core.redis_client import as_bytes
from tether.core.resources import Resources
from tether.profiles.grants import Grant

log = logging.getLogger(__name__)

MARKER = "change:"
# Longer than any consent change's transaction takes.
MARKER_SECONDS = 60

# KEYS[1] the entry. ARGV: version, value, ttl, the writer's marker ("" for a reader).
# An entry is written over nothing, over the writer's own marker, or over an entry of a
# lower version; never over another change's marker or a newer entry.
_WRITE = """
local current = redis.call('GET', KEYS[1])
if current then
  if string.sub(current, 1, string.len(ARGV[5])) == ARGV[5] then
    if ARGV[4] == '' or current ~= ARGV[4] then return 0 end
  elseif string.sub(current, 1, 32) >= ARGV[1] then
    return 0
  end
end
redis.call('SET', KEYS[1], ARGV[2], 'EX', tonumber(ARGV[3]))
return 1
"""


def consent_key(tenant_id: uuid.UUID, user_id: uuid.UUID) -> str:
    return f"tether:consent:{tenant_id}:{user_id}"


def _value(grant: Grant) -> str:
    return f"{grant.version}:{','.join(sorted(grant.scopes))}"


def _grant(raw: str) -> Grant | None:
    """The entry's grant; None for a change marker or an unreadable entry."""
    version, colon, scopes = raw.partition(":")
    if raw.startswith(MARKER) or not colon or len(version) != 32:
        return None
    return Grant(version, frozenset(scopes.split(",")) if scopes else frozenset())


class ConsentCache:
    def __init__(self, redis: Redis, ttl_seconds: int) -> None:
        self._redis = redis
        self._ttl = ttl_seconds

    async def get(self, tenant_id: uuid.UUID, user_id: uuid.UUID) -> Grant | None:
        """The cached grant; None on a miss or while a change is in progress; raises
        RedisError when Redis is away."""
        raw = await self._redis.get(consent_key(tenant_id, user_id))
        return None if raw is None else _grant(as_bytes(raw).decode("utf-8", "replace"))

    async def fill(self, tenant_id: uuid.UUID, user_id: uuid.UUID, grant: Grant) -> None:
        """Cache what a reader read from Postgres, unless a change started since."""
        try:
            await self._set(tenant_id, user_id, grant, marker="")
        except RedisError as exc:
            log.warning("consent not cached: %s", type(exc).__name__)

    async def begin_change(self, tenant_id: uuid.UUID, user_id: uuid.UUID) -> str:
        """Mark a change in progress before it commits; returns the marker for
        :meth:`finish_change`. Raises RedisError when Redis is away: the change must then
        not commit, or readers could be served the old scopes once Redis is back."""
        marker = f"{MARKER}{secrets.token_hex(8)}"
        await self._redis.set(consent_key(tenant_id, user_id), marker, ex=MARKER_SECONDS)
        return marker

    async def finish_change(
        self, tenant_id: uuid.UUID, user_id: uuid.UUID, marker: str, grant: Grant
    ) -> None:
        """After the commit: the change's grant replaces its marker."""
        try:
            await self._set(tenant_id, user_id, grant, marker=marker)
        except RedisError as exc:  # the marker stays until it expires: readers miss
            log.warning("consent of %s not cached after a change: %s", user_id, exc)

    async def _set(
        self, tenant_id: uuid.UUID, user_id: uuid.UUID, grant: Grant, marker: str
    ) -> None:
        key = consent_key(tenant_id, user_id)
        args: list[str | int] = [grant.version, _value(grant), self._ttl, marker, MARKER]
        # Registered per write, not per instance: an instance is made on every context
        # request, which only reads.
        await self._redis.register_script(_WRITE)(keys=[key], args=args)


def consent_cache(resources: Resources) -> ConsentCache:
    return ConsentCache(resources.redis, resources.settings.access.consent_cache_seconds)
