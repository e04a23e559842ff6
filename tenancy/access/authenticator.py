"""Turns a bearer token into a Principal, with a short in-process cache.

Authentication runs on every request; the cache keeps it off Postgres. A revoked key
is evicted at once in the process that revoked it and within ``ttl`` seconds elsewhere.
"""

from __future__ import annotations

import time
from collections import OrderedDict

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tenancy.access.principal import Principal
from tenancy.access.repositories import KeyLookupRepository
from tenancy.access.tokens import digest, looks_like_token
from tenancy.ids import ApiKeyId
from tether.core.errors import Unauthenticated
from tether.core.ids import TenantId


class Authenticator:
    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], ttl: float = 5.0, size: int = 10_000
    ) -> None:
        self._sessions = sessions
        self._ttl = ttl
        self._size = size
        self._cache: OrderedDict[bytes, tuple[float, Principal]] = OrderedDict()

    async def authenticate(self, token: str) -> Principal:
        if not looks_like_token(token):
            raise Unauthenticated("the API key is malformed")
        return await self.authenticate_digest(digest(token))

    async def authenticate_digest(self, key_digest: bytes) -> Principal:
        """The Principal of the active key with this digest (a console session keeps the
        digest, never the key, and is checked this way on every request)."""
        cached = self._cache.get(key_digest)
        if cached is not None and cached[0] > time.monotonic():
            return cached[1]
        principal = await self._load(key_digest)
        self._remember(key_digest, principal)
        return principal

    async def _load(self, key_digest: bytes) -> Principal:
        async with self._sessions() as session:
            found = await KeyLookupRepository(session).find_active(key_digest)
        if found is None:
            raise Unauthenticated("the API key is unknown or revoked")
        key, tenant = found
        return Principal(
            key_id=ApiKeyId(key.id),
            tenant_id=TenantId(key.tenant_id),
            role=key.role,
            subject=key.subject,
            region=tenant.region,
        )

    def _remember(self, key_digest: bytes, principal: Principal) -> None:
        self._cache[key_digest] = (time.monotonic() + self._ttl, principal)
        self._cache.move_to_end(key_digest)
        while len(self._cache) > self._size:
            self._cache.popitem(last=False)

    def forget(self, key_digest: bytes) -> None:
        self._cache.pop(key_digest, None)
