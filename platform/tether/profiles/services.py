"""The global profile behind two locks: a policy for the caller AND the user's recorded
consent for the field's scope. Every read (what was shown, what was withheld) and every
consent change is audited in the same transaction."""

from __future__ import annotations

import logging
import uuid

from redis.exceptions import RedisError
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.policy import PolicyEnforcer
from tenancy.access.principal import Principal
from tenancy.audit.log import Actor, AuditLog
from tenancy.errors import RelationshipNotFound
from tenancy.graph.services import GraphService
from tenancy.models import Relationship
from tether.core.unit_of_work import on_commit
from tether.privacy.tenant_filters import TenantFilters
from tether.profiles import schemas as s
from tether.profiles.consent_cache import ConsentCache
from tether.profiles.errors import ConsentCacheUnavailable
from tether.profiles.grants import Grant
from tether.profiles.models import ConsentRecord, GlobalProfileField
from tether.profiles.repositories import ProfileRepository

log = logging.getLogger(__name__)

OBJECT = "global_user_profile"
SENSITIVE = "global_user_profile:sensitive"


def _field(f: GlobalProfileField) -> s.ProfileFieldRead:
    return s.ProfileFieldRead(
        f.field, f.value, f.scope, f.sensitivity, f.source_relationship_id, f.updated_at
    )


def _consent(c: ConsentRecord) -> s.ConsentRead:
    return s.ConsentRead(list(c.scopes), c.source, c.withdrawn, c.actor_key_id, c.created_at)


def shareable(
    fields: list[GlobalProfileField], granted: frozenset[str], see_sensitive: bool
) -> tuple[list[GlobalProfileField], dict[str, str]]:
    """Split fields into what consent (``granted`` scopes) and sensitivity let through
    and what not, and why."""
    shown, withheld = [], {}
    for f in fields:
        if f.scope not in granted:
            withheld[f.field] = f"no consent for scope {f.scope!r}"
        elif f.sensitivity == "high" and not see_sensitive:
            withheld[f.field] = "high sensitivity"
        else:
            shown.append(f)
    return shown, withheld


class ProfileService:
    def __init__(
        self,
        session: AsyncSession,
        principal: Principal,
        enforcer: PolicyEnforcer,
        consent_cache: ConsentCache,
        privacy: TenantFilters | None = None,
    ) -> None:
        self._session = session
        self._principal = principal
        self._enforcer = enforcer
        self._consent_cache = consent_cache
        self._privacy = privacy or TenantFilters(0)
        self._graph = GraphService(session, principal)
        self._profiles = ProfileRepository(session, principal.tenant_id)
        self._audit = AuditLog(session)

    async def put_field(
        self, user_id: uuid.UUID, field: str, data: s.ProfileFieldWrite
    ) -> s.ProfileFieldRead:
        await self._graph.require_user(user_id)
        if data.source_relationship_id is not None:
            relationship = await self._session.get(Relationship, data.source_relationship_id)
            if (
                relationship is None
                or relationship.tenant_id != self._principal.tenant_id
                or relationship.global_user_id != user_id
            ):
                raise RelationshipNotFound(
                    f"no relationship {data.source_relationship_id} of this user"
                )
        # The same filter as turns: a profile value is user data like any other.
        privacy = await self._privacy.for_tenant(self._session, self._principal.tenant_id)
        row = await self._profiles.upsert(
            user_id,
            field,
            value=privacy.mask(data.value).text,
            scope=data.scope.value,
            sensitivity=data.sensitivity,
            source_relationship_id=data.source_relationship_id,
        )
        await self._audit.record(
            self._principal.tenant_id,
            Actor.of(self._principal),
            "profile.write",
            OBJECT,
            global_user_id=user_id,
            relationship_id=data.source_relationship_id,
            detail={"field": field, "scope": data.scope.value},
        )
        return _field(row)

    async def get(self, user_id: uuid.UUID) -> s.ProfileRead:
        await self._graph.require_user(user_id)
        see_sensitive = self._enforcer.decide(self._principal.role.value, SENSITIVE, "read").allowed
        fields = await self._profiles.fields(user_id)
        granted = (await self._profiles.current_grant(user_id)).scopes
        shown, withheld = shareable(fields, granted, see_sensitive)
        await self._audit.record(
            self._principal.tenant_id,
            Actor.of(self._principal),
            "profile.read",
            OBJECT,
            global_user_id=user_id,
            detail={"shown": [f.field for f in shown], "withheld": sorted(withheld)},
        )
        return s.ProfileRead(user_id, [_field(f) for f in shown], withheld)

    async def put_consent(self, user_id: uuid.UUID, data: s.ConsentWrite) -> s.ConsentState:
        await self._graph.require_user(user_id)
        scopes = sorted({scope.value for scope in data.scopes})
        tenant_id = self._principal.tenant_id
        await self._profiles.lock_consent(user_id)
        try:
            marker = await self._consent_cache.begin_change(tenant_id, user_id)
        except RedisError as exc:
            raise ConsentCacheUnavailable(
                "the cached consent cannot be marked as changing, so the change is not made;"
                " retry when Redis is reachable"
            ) from exc
        record = await self._profiles.add_consent(
            user_id, scopes, data.source, self._principal.key_id
        )
        grant = Grant.of(record.id, frozenset() if record.withdrawn else frozenset(scopes))
        cache = self._consent_cache
        on_commit(self._session, lambda: cache.finish_change(tenant_id, user_id, marker, grant))
        await self._audit.record(
            self._principal.tenant_id,
            Actor.of(self._principal),
            "consent.change",
            OBJECT,
            global_user_id=user_id,
            detail={"scopes": scopes, "source": data.source},
        )
        return await self.consent(user_id)

    async def consent(self, user_id: uuid.UUID) -> s.ConsentState:
        await self._graph.require_user(user_id)
        history = [_consent(c) for c in await self._profiles.consents(user_id)]
        return s.ConsentState(user_id, history[0] if history else None, history)


class ConsentedProfile:
    """The global-profile fields a context may carry: only with a policy allowing the
    caller to read the global profile AND the user's consent for each field's scope;
    never high-sensitivity ones. Each use is audited (a cross-relationship read)."""

    def __init__(
        self,
        session: AsyncSession,
        principal: Principal,
        enforcer: PolicyEnforcer,
        consent_cache: ConsentCache,
    ) -> None:
        self._session = session
        self._principal = principal
        self._enforcer = enforcer
        self._consent_cache = consent_cache
        self._profiles = ProfileRepository(session, principal.tenant_id)
        self.redis_degraded = False

    async def _granted(self, user_id: uuid.UUID) -> frozenset[str]:
        # Redis first: most users never consent, and this runs on every message.
        tenant_id = self._principal.tenant_id
        try:
            cached = await self._consent_cache.get(tenant_id, user_id)
        except RedisError as exc:
            log.warning("consent cache unavailable, reading Postgres: %s", exc)
            self.redis_degraded = True
            return (await self._profiles.current_grant(user_id)).scopes
        if cached is not None:
            return cached.scopes
        grant = await self._profiles.current_grant(user_id)
        await self._consent_cache.fill(tenant_id, user_id, grant)
        return grant.scopes

    async def for_context(
        self, user_id: uuid.UUID, relationship_id: uuid.UUID
    ) -> list[GlobalProfileField]:
        if not self._enforcer.decide(self._principal.role.value, OBJECT, "read").allowed:
            return []
        granted = await self._granted(user_id)
        if not granted:
            return []  # the default: nothing learned elsewhere reaches this relationship
        shown, _ = shareable(await self._profiles.fields(user_id), granted, see_sensitive=False)
        if shown:
            await AuditLog(self._session).record(
                self._principal.tenant_id,
                Actor.of(self._principal),
                "profile.read",
                f"{OBJECT}:aggregate",
                relationship_id=relationship_id,
                global_user_id=user_id,
                detail={"fields": [f.field for f in shown], "purpose": "context"},
            )
        return shown
