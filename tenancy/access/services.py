"""Tenant and API key management."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.repositories import ApiKeyRepository, SigningRepository, TenantRepository
from tenancy.access.schemas import (
    ApiKeyCreate,
    ApiKeyCreated,
    ApiKeyPage,
    ApiKeyRead,
    ApiKeyRotate,
    TenantCreated,
)
from tenancy.access.tokens import digest, display_prefix, generate_token
from tenancy.audit.log import SYSTEM, Actor, AuditLog
from tenancy.enums import Role
from tenancy.errors import (
    ApiKeyAlreadyRotated,
    ApiKeyNotFound,
    ApiKeySubjectRefused,
    TenantNotFound,
)
from tenancy.ids import ApiKeyId
from tenancy.models import ApiKey, Tenant
from tether.core.errors import InvalidInput
from tether.core.ids import TenantId
from tether.core.pagination import decode_stamped_cursor, encode_stamped_cursor
from tether.core.settings import AccessSettings


def _read(key: ApiKey) -> ApiKeyRead:
    return ApiKeyRead(
        id=key.id,
        role=key.role,
        subject=key.subject,
        name=key.name,
        prefix=key.prefix,
        created_at=key.created_at,
        revoked_at=key.revoked_at,
        expires_at=key.expires_at,
        last_used_at=key.last_used_at,
        replaced_by=key.replaced_by,
        signed=key.signed,
    )


def _in_future(expires_at: datetime | None) -> None:
    if expires_at is not None and expires_at <= datetime.now(UTC):
        message = "must be in the future"
        raise InvalidInput(
            f"expires_at {message}", errors=[{"field": "expires_at", "message": message}]
        )


def _stamp(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


class ApiKeyService:
    """Issues, rotates and revokes a tenant's keys. The secret is returned once, stored
    hashed; every change is audited in the tenant's chain."""

    def __init__(
        self,
        session: AsyncSession,
        tenant_id: TenantId,
        actor: Actor = SYSTEM,
        settings: AccessSettings | None = None,
    ) -> None:
        self._keys = ApiKeyRepository(session, tenant_id)
        self._session = session
        self._tenant_id = tenant_id
        self._audit = AuditLog(session)
        self._actor = actor
        self._settings = settings or AccessSettings()

    async def issue(self, data: ApiKeyCreate) -> ApiKeyCreated:
        await self._check_subject(data.role, data.subject)
        _in_future(data.expires_at)
        key, token = await self._add(data.role, data.subject, data.name, data.expires_at)
        detail = {
            "key_id": str(key.id),
            "role": key.role.value,
            "subject": key.subject,
            "expires_at": _stamp(key.expires_at),
        }
        await self._audit.record(
            self._tenant_id, self._actor, "key.issue", "api_key", detail=detail
        )
        return ApiKeyCreated(key=_read(key), token=token)

    async def _check_subject(self, role: Role, subject: str | None) -> None:
        """A creator key names an existing creator; an operator key names its pool
        operator (free-form: pool operators have no registry); other roles name none."""
        problem = None
        if role in (Role.CREATOR, Role.OPERATOR) and subject is None:
            problem = f"a {role.value} key needs a subject"
        elif role not in (Role.CREATOR, Role.OPERATOR) and subject is not None:
            problem = f"a {role.value} key has no subject (it would not narrow the key)"
        elif role is Role.CREATOR and not await self._creator_exists(subject or ""):
            problem = f"no creator with external id {subject!r} in this tenant"
        if problem is not None:
            raise ApiKeySubjectRefused(problem, errors=[{"field": "subject", "message": problem}])

    async def _creator_exists(self, external_id: str) -> bool:
        return await self._keys.creator_exists(external_id)

    async def _add(
        self, role: Role, subject: str | None, name: str, expires_at: datetime | None
    ) -> tuple[ApiKey, str]:
        token = generate_token((await SigningRepository(self._session).get()).secret)
        key = await self._keys.add(
            role, subject, name, display_prefix(token), digest(token), expires_at
        )
        await self._session.refresh(key)
        return key, token

    async def rotate(self, key_id: ApiKeyId, data: ApiKeyRotate) -> tuple[ApiKeyCreated, bytes]:
        """A new key for the same role and subject; the old one keeps working for the
        overlap (or until it expires, if sooner). Returns the old key's digest too."""
        old = await self._keys.get_active(key_id)
        if old is None:
            raise ApiKeyNotFound(f"no active API key {key_id}")
        if old.replaced_by is not None:
            raise ApiKeyAlreadyRotated(f"API key {key_id} was rotated to {old.replaced_by}")
        _in_future(data.expires_at)
        now = datetime.now(UTC)
        expires_at = data.expires_at
        if expires_at is None and old.expires_at is not None:
            expires_at = now + (old.expires_at - old.created_at)
        new, token = await self._add(old.role, old.subject, old.name, expires_at)
        overlap = data.overlap_seconds
        if overlap is None:
            overlap = self._settings.rotation_overlap_seconds
        retired = await self._keys.retire(old.id, new.id, now + timedelta(seconds=overlap))
        detail = {
            "key_id": str(old.id),
            "new_key_id": str(new.id),
            "old_key_ends_at": _stamp(retired.expires_at),
            "expires_at": _stamp(new.expires_at),
        }
        await self._audit.record(
            self._tenant_id, self._actor, "key.rotate", "api_key", detail=detail
        )
        return ApiKeyCreated(key=_read(new), token=token), retired.key_hash

    async def page(self, cursor: str | None, limit: int) -> ApiKeyPage:
        """The tenant's keys a page at a time, oldest first (creation time, then id).

        Raises:
            InvalidInput: a cursor this API did not issue.
        """
        rows = await self._keys.page(decode_stamped_cursor(cursor), limit)
        last = rows[-1] if rows and len(rows) == limit else None
        more = None if last is None else encode_stamped_cursor(last.created_at, last.id)
        return ApiKeyPage(items=[_read(k) for k in rows], next_cursor=more)

    async def get(self, key_id: ApiKeyId) -> ApiKeyRead:
        """One of the tenant's keys (another tenant's is missing, exactly like none)."""
        key = await self._keys.get(key_id)
        if key is None:
            raise ApiKeyNotFound(f"no API key {key_id}")
        return _read(key)

    async def revoke(self, key_id: ApiKeyId) -> bytes:
        """Revoke a key; returns its digest so callers can evict caches."""
        revoked = await self._keys.revoke(key_id)
        if revoked is None:
            raise ApiKeyNotFound(f"no active API key {key_id}")
        detail = {"key_id": str(key_id)}
        await self._audit.record(
            self._tenant_id, self._actor, "key.revoke", "api_key", detail=detail
        )
        return revoked


class TenantService:
    """The operator's side of tenants (CLI only): create them with their first admin
    key, disable and enable them, issue a new admin key. Every change is audited."""

    def __init__(self, session: AsyncSession) -> None:
        self._session = session
        self._tenants = TenantRepository(session)

    async def create(
        self, name: str, region: str, tenant_id: TenantId | None = None
    ) -> TenantCreated:
        """Under row-level security the session must already be bound to
        ``tenant_id``, the new tenant's id (``tenant_sessions.tenant_transaction``)."""
        tenant = await self._tenants.add(name, region, tenant_id)
        created = await ApiKeyService(self._session, TenantId(tenant.id)).issue(
            ApiKeyCreate(role=Role.ADMIN, name="first admin key")
        )
        return TenantCreated(
            tenant_id=tenant.id,
            name=tenant.name,
            region=tenant.region,
            admin_key_id=created.key.id,
            admin_token=created.token,
        )

    async def set_disabled(self, tenant_id: TenantId, disabled: bool, actor: Actor) -> Tenant:
        """Disable (its keys get 403 ``tenant_disabled``) or enable the tenant the
        session is bound to; audited when it changes."""
        tenant = await self._tenants.get(tenant_id)
        if tenant is None:
            raise TenantNotFound(f"no tenant {tenant_id}")
        if await self._tenants.set_disabled(tenant, disabled):
            action = "tenant.disable" if disabled else "tenant.enable"
            await AuditLog(self._session).record(tenant_id, actor, action, "tenant")
        return tenant

    async def issue_admin_key(self, tenant_id: TenantId, actor: Actor) -> ApiKeyCreated:
        """A new admin key (say, the last one was lost); audited as ``key.issue``."""
        return await ApiKeyService(self._session, tenant_id, actor).issue(
            ApiKeyCreate(role=Role.ADMIN, name="admin key issued by the operator")
        )
