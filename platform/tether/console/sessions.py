"""Console sign-in sessions, kept in Redis.

The browser holds only an opaque random id (the cookie); Redis holds, under the
SHA-256 of that id, what the session is: the signed-in key's id and the digest of its
secret (never the secret), its tenant and role, a CSRF token, and when it ends. Every
request re-checks the key through the authenticator, so revoking the key ends the
session; so do signing out, an admin's revocation, idleness and the absolute lifetime.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import asdict, dataclass, replace

import msgspec
from redis.asyncio import Redis

from tenancy.access.principal import Principal
from tether.core.settings import ConsoleSettings

_PREFIX = "tether:console:"
# Writing last_seen on every request would cost a write each; once a minute is enough.
_TOUCH_EVERY = 60.0


def _session_key(id_hash: str) -> str:
    return f"{_PREFIX}session:{id_hash}"


def _tenant_key(tenant_id: str) -> str:
    return f"{_PREFIX}tenant:{tenant_id}"


def _key_key(key_id: str) -> str:
    return f"{_PREFIX}key:{key_id}"


def hash_id(session_id: str) -> str:
    """Redis knows sessions by this hash, so a copy of Redis holds no usable cookie."""
    return hashlib.sha256(session_id.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class ConsoleSession:
    id_hash: str
    key_id: str
    key_digest: str  # hex SHA-256 of the API key: re-checked on every request
    tenant_id: str
    role: str
    subject: str | None
    csrf: str
    created_at: float
    expires_at: float  # the absolute end
    last_seen: float
    user_agent: str


class SessionStore:
    def __init__(self, redis: Redis, settings: ConsoleSettings) -> None:
        self._redis = redis
        self._idle = int(settings.session_idle_minutes * 60)
        self._lifetime = settings.session_max_hours * 3600

    def _ttl(self, session: ConsoleSession, now: float) -> int:
        return max(1, int(min(self._idle, session.expires_at - now)))

    async def create(
        self, principal: Principal, key_digest: bytes, user_agent: str
    ) -> tuple[str, ConsoleSession]:
        """A new session for ``principal``; returns the cookie value (shown only here)."""
        session_id = secrets.token_urlsafe(32)
        now = time.time()
        session = ConsoleSession(
            id_hash=hash_id(session_id),
            key_id=str(principal.key_id),
            key_digest=key_digest.hex(),
            tenant_id=str(principal.tenant_id),
            role=principal.role.value,
            subject=principal.subject,
            csrf=secrets.token_urlsafe(32),
            created_at=now,
            expires_at=now + self._lifetime,
            last_seen=now,
            user_agent=user_agent[:200],
        )
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.set(_session_key(session.id_hash), _encode(session), ex=self._ttl(session, now))
            pipe.zadd(_tenant_key(session.tenant_id), {session.id_hash: now})
            pipe.expire(_tenant_key(session.tenant_id), int(self._lifetime) + 60)
            pipe.sadd(_key_key(session.key_id), session.id_hash)
            pipe.expire(_key_key(session.key_id), int(self._lifetime) + 60)
            await pipe.execute()
        return session_id, session

    async def load(self, session_id: str) -> ConsoleSession | None:
        """The live session with this cookie value, its idle time restarted; None when
        unknown, ended or past its absolute lifetime."""
        if not session_id or len(session_id) > 128:
            return None
        id_hash = hash_id(session_id)
        raw = await self._redis.get(_session_key(id_hash))
        if raw is None:
            return None
        session = _decode(raw)
        now = time.time()
        if now >= session.expires_at:
            await self.end(session)
            return None
        if now - session.last_seen > _TOUCH_EVERY:
            session = replace(session, last_seen=now)
            await self._redis.set(
                _session_key(id_hash), _encode(session), ex=self._ttl(session, now)
            )
        else:
            await self._redis.expire(_session_key(id_hash), self._ttl(session, now))
        return session

    async def end(self, session: ConsoleSession) -> None:
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.delete(_session_key(session.id_hash))
            pipe.zrem(_tenant_key(session.tenant_id), session.id_hash)
            pipe.srem(_key_key(session.key_id), session.id_hash)
            await pipe.execute()

    async def of_tenant(self, tenant_id: str) -> list[ConsoleSession]:
        """The tenant's live sessions, newest first (ended ones are pruned on the way)."""
        members = await self._redis.zrevrange(_tenant_key(tenant_id), 0, 499)
        if not members:
            return []
        hashes = [m.decode() if isinstance(m, bytes) else str(m) for m in members]
        raws = await self._redis.mget([_session_key(h) for h in hashes])
        live, gone = [], []
        for id_hash, raw in zip(hashes, raws, strict=True):
            if raw is None:
                gone.append(id_hash)
            else:
                live.append(_decode(raw))
        if gone:
            await self._redis.zrem(_tenant_key(tenant_id), *gone)
        return live

    async def end_by_hash(self, tenant_id: str, id_hash: str) -> bool:
        """End one of the tenant's sessions (an admin's revocation)."""
        raw = await self._redis.get(_session_key(id_hash))
        if raw is None:
            return False
        session = _decode(raw)
        if session.tenant_id != tenant_id:
            return False  # another tenant's session is not there for this admin
        await self.end(session)
        return True

    async def end_for_key(self, key_id: str) -> int:
        """End every session signed in with this key (the key was revoked)."""
        members = await self._redis.smembers(_key_key(key_id))
        ended = 0
        for member in members:
            id_hash = member.decode() if isinstance(member, bytes) else str(member)
            raw = await self._redis.get(_session_key(id_hash))
            if raw is not None:
                await self.end(_decode(raw))
                ended += 1
        await self._redis.delete(_key_key(key_id))
        return ended


def _encode(session: ConsoleSession) -> bytes:
    return msgspec.json.encode(asdict(session))


def _decode(raw: bytes | str) -> ConsoleSession:
    return ConsoleSession(**msgspec.json.decode(raw))
