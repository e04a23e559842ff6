"""Turns a bearer token into a Principal, with short in-process caches.

Authentication runs on every request; the caches keep it off Postgres. A revoked key
is evicted at once in the process that revoked it and within ``key_cache_seconds``
elsewhere; an expiring key's cache entry ends when the key does.

A bad token costs no query (decision 0035): a malformed one is refused from its
characters, a forged one by its signature, and a correctly signed one that matched no
usable key is remembered for ``unknown_key_cache_seconds``. Failures are counted per
client address (``FailedAuthentications``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tenancy.access.failures import AuthenticationThrottled, FailedAuthentications
from tenancy.access.key_cache import ExpiringCache
from tenancy.access.key_usage import KeyUsage
from tenancy.access.principal import Principal
from tenancy.access.repositories import KeyLookupRepository, SigningRepository
from tenancy.access.tokens import Shape, digest, shape, signature_valid
from tenancy.errors import TenantDisabled
from tenancy.ids import ApiKeyId
from tether.core.errors import Unauthenticated
from tether.core.ids import TenantId
from tether.core.instruments import AUTH_FAILURES
from tether.core.settings import AccessSettings


@dataclass(frozen=True, slots=True)
class _Signing:
    secret: bytes
    legacy_tokens: bool


class Authenticator:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        settings: AccessSettings,
        failures: FailedAuthentications,
        usage: KeyUsage,
        size: int = 10_000,
    ) -> None:
        self._sessions = sessions
        self._settings = settings
        self._failures = failures
        self.usage = usage
        self._known: ExpiringCache[Principal] = ExpiringCache(size)
        self._unknown: ExpiringCache[bool] = ExpiringCache(size)
        self._signing: _Signing | None = None
        self._signing_lock = asyncio.Lock()

    async def authenticate(self, token: str, address: str | None = None) -> Principal:
        """The key's principal; 401 for a bad token, 429 when ``address`` failed too
        often (checked only once the token failed)."""
        kind = shape(token)
        if kind is Shape.MALFORMED:
            return await self._fail(address, "malformed", "the API key is malformed")
        key_digest = digest(token)
        principal = self._known.get(key_digest)
        if principal is None:
            principal = await self._look_up(token, kind, key_digest, address)
        self.usage.touch(principal)
        return principal

    async def authenticate_digest(self, key_digest: bytes) -> Principal:
        """The Principal of the usable key with this digest (a console session keeps the
        digest, never the key, and is checked this way on every request)."""
        principal = self._known.get(key_digest)
        if principal is None:
            found = await self._load(key_digest)
            if found is None:
                raise Unauthenticated("the API key is unknown, expired or revoked")
            principal, expires_at = found
            self._known.put(key_digest, principal, self._cache_seconds(expires_at))
        self.usage.touch(principal)
        return principal

    def cached(self, token: str) -> Principal | None:
        """The principal this process already trusts for ``token`` (no I/O)."""
        if shape(token) is Shape.MALFORMED:
            return None
        return self._known.get(digest(token))

    def refused_here(self, token: str, address: str | None) -> AuthenticationThrottled | None:
        """The 429 for a token that cannot authenticate from an address this process
        throttles, decided without I/O (None: authenticate it as usual)."""
        seconds = self._failures.blocked_for(address)
        if not seconds or self._signing is None:
            return None
        kind = shape(token)
        if kind is Shape.SIGNED and signature_valid(token, self._signing.secret):
            key_digest = digest(token)
            if self._known.get(key_digest) is not None or not self._unknown.get(key_digest):
                return None  # perhaps a real key: it may cost one lookup
        AUTH_FAILURES.add(1, {"reason": "throttled"})
        return self._failures.throttled(seconds)

    async def _look_up(
        self, token: str, kind: Shape, key_digest: bytes, address: str | None
    ) -> Principal:
        unknown = "the API key is unknown, expired or revoked"
        if self._unknown.get(key_digest):
            return await self._fail(address, "unknown", unknown)
        signing = await self._load_signing()
        if kind is Shape.SIGNED and not signature_valid(token, signing.secret):
            return await self._fail(address, "forged", unknown)
        if kind is Shape.LEGACY:
            if not (signing.legacy_tokens and self._settings.legacy_tokens):
                return await self._fail(address, "legacy", unknown)
            if seconds := self._failures.blocked_for(address):
                # An unsigned token costs a query: none for an address already failing.
                AUTH_FAILURES.add(1, {"reason": "throttled"})
                raise self._failures.throttled(seconds)
        found = await self._load(key_digest)
        if found is None:
            self._unknown.put(key_digest, True, self._settings.unknown_key_cache_seconds)
            return await self._fail(address, "unknown", unknown)
        principal, expires_at = found
        self._known.put(key_digest, principal, self._cache_seconds(expires_at))
        return principal

    async def _fail(self, address: str | None, reason: str, detail: str) -> Principal:
        AUTH_FAILURES.add(1, {"reason": reason})
        if seconds := await self._failures.record(address):
            raise self._failures.throttled(seconds)
        raise Unauthenticated(detail)

    def _cache_seconds(self, expires_at: datetime | None) -> float:
        ttl = self._settings.key_cache_seconds
        if expires_at is None:
            return ttl
        return min(ttl, (expires_at - datetime.now(UTC)).total_seconds())

    async def _load_signing(self) -> _Signing:
        if self._signing is None:
            async with self._signing_lock:
                if self._signing is None:
                    async with self._sessions() as session:
                        row = await SigningRepository(session).get()
                    self._signing = _Signing(row.secret, row.legacy_tokens)
        return self._signing

    async def _load(self, key_digest: bytes) -> tuple[Principal, datetime | None] | None:
        async with self._sessions() as session:
            found = await KeyLookupRepository(session).find_active(key_digest)
        if found is None:
            return None
        key, tenant = found
        if tenant.disabled_at is not None:
            # Not cached: enabling the tenant again lets its keys in on the next request.
            raise TenantDisabled("the operator disabled this tenant; ask them to enable it")
        principal = Principal(
            key_id=ApiKeyId(key.id),
            tenant_id=TenantId(key.tenant_id),
            role=key.role,
            subject=key.subject,
            region=tenant.region,
        )
        return principal, key.expires_at

    def forget(self, key_digest: bytes) -> None:
        """Stop trusting this key here at once (after revoking or rotating it)."""
        self._known.pop(key_digest)
