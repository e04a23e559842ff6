"""Tenant admin: API keys (create with role, subject and an optional expiry, shown once;
their expiry and last use; rotate with an overlap, the new secret shown once; revoke)
and the console sessions signed in to the tenant (revoke). Every action calls the
ApiKeyService the /v1/api-keys routes call."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from litestar import Controller, Request, get, post
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, FromQuery
from litestar.response import Redirect, Template

from tenancy.access.authenticator import Authenticator
from tenancy.access.deps import provide_api_key_service
from tenancy.access.guard import policy
from tenancy.access.principal import Principal
from tenancy.access.schemas import (
    MAX_OVERLAP_SECONDS,
    ApiKeyCreate,
    ApiKeyCreated,
    ApiKeyRead,
    ApiKeyRotate,
)
from tenancy.access.services import ApiKeyService
from tenancy.enums import Role
from tenancy.errors import ApiKeyAlreadyRotated, ApiKeyNotFound
from tenancy.ids import ApiKeyId
from tether.console import forms
from tether.console.pages import back_to, may, render, session_of
from tether.console.sessions import SessionStore
from tether.core.errors import InvalidInput
from tether.core.pagination import StampedCursor
from tether.core.resources import Resources
from tether.core.settings import Settings

AnyRequest = Request[Any, Any, Any]
Keys = NamedDependency[ApiKeyService]
PAGE = 50


def _store(request: AnyRequest) -> SessionStore:
    resources: Resources = request.app.state.resources
    return SessionStore(resources.redis, resources.settings.console)


def _state(key: ApiKeyRead, now: datetime) -> str:
    """revoked, expired, rotated (works until its end), or active."""
    if key.revoked_at is not None:
        return "revoked"
    if key.expires_at is not None and key.expires_at <= now:
        return "expired"
    return "rotated" if key.replaced_by is not None else "active"


async def _keys_page(
    request: AnyRequest,
    api_key_service: ApiKeyService,
    principal: Principal,
    cursor: str | None = None,
    status: int = 200,
    **shown: Any,
) -> Template:
    """The keys page: a page of keys (never their secrets) and the console sessions;
    ``shown`` carries a secret just issued, a flash or a form error."""
    page = await api_key_service.page(cursor, PAGE)
    now = datetime.now(UTC)
    sessions = await _store(request).of_tenant(str(principal.tenant_id))
    current = session_of(request)
    context: dict[str, Any] = {
        "created": None,
        "rotated_from": None,
        "revoked": None,
        "error": None,
        "form": {},
    }
    context.update(shown)
    return render(
        request,
        "admin/keys.html",
        status=status,
        page=page,
        states={k.id: _state(k, now) for k in page.items},
        sessions=sessions,
        roles=list(Role),
        may_write=may(request, "api_key", "write"),
        may_revoke=may(request, "api_key", "delete"),
        current_session=current.id_hash if current else "",
        **context,
    )


def _rotatable(key: ApiKeyRead) -> ApiKeyRead:
    """A key the API would rotate: ended keys are missing (404), rotated ones 409."""
    if _state(key, datetime.now(UTC)) in ("revoked", "expired"):
        raise ApiKeyNotFound(f"no active API key {key.id}")
    if key.replaced_by is not None:
        raise ApiKeyAlreadyRotated(f"API key {key.id} was rotated to {key.replaced_by}")
    return key


class KeyPages(Controller):
    path = "/admin"
    dependencies = {"api_key_service": Provide(provide_api_key_service, sync_to_thread=False)}  # noqa: RUF012

    @get("/keys", opt=policy("api_key", "read"))
    async def keys(
        self,
        request: AnyRequest,
        api_key_service: Keys,
        principal: NamedDependency[Principal],
        revoked: FromQuery[int | None] = None,
        cursor: FromQuery[StampedCursor] = None,
    ) -> Template:
        """The tenant's keys (never their secrets), with expiry and last use, and its
        console sessions."""
        return await _keys_page(request, api_key_service, principal, cursor, revoked=revoked)

    @post("/keys", opt=policy("api_key", "write"))
    async def create(
        self, request: AnyRequest, api_key_service: Keys, principal: NamedDependency[Principal]
    ) -> Template:
        """Issue a key (checked as POST /v1/api-keys checks it); its secret is on this
        page only."""
        form = await request.form()
        subject = forms.text(form, "subject").strip()
        fields = {
            "role": forms.text(form, "role"),
            "subject": subject,
            "name": forms.text(form, "name").strip(),
            "expires_at": forms.text(form, "expires_at").strip(),
        }
        try:
            expires_at = forms.moment(fields["expires_at"], "expires_at")
            data = forms.parse(
                ApiKeyCreate,
                {
                    "role": fields["role"],
                    "subject": subject or None,
                    "name": fields["name"],
                    "expires_at": None if expires_at is None else expires_at.isoformat(),
                },
            )
            created: ApiKeyCreated = await api_key_service.issue(data)
        except InvalidInput as exc:
            return await _keys_page(
                request,
                api_key_service,
                principal,
                status=exc.status_code,
                error=exc.detail,
                form=fields,
            )
        return await _keys_page(request, api_key_service, principal, status=201, created=created)

    @get("/keys/{key_id:uuid}/rotate", opt=policy("api_key", "write"))
    async def confirm_rotate(
        self,
        request: AnyRequest,
        key_id: FromPath[uuid.UUID],
        api_key_service: Keys,
        settings: NamedDependency[Settings],
    ) -> Template:
        """Confirm a rotation: how long the old secret keeps working, and the new key's end."""
        key = _rotatable(await api_key_service.get(ApiKeyId(key_id)))
        return render(
            request,
            "admin/rotate.html",
            key=key,
            overlap_minutes=settings.access.rotation_overlap_seconds // 60,
            max_overlap_minutes=MAX_OVERLAP_SECONDS // 60,
            error=None,
            expires_at="",
        )

    @post("/keys/{key_id:uuid}/rotate", opt=policy("api_key", "write"))
    async def rotate(
        self,
        request: AnyRequest,
        key_id: FromPath[uuid.UUID],
        api_key_service: Keys,
        principal: NamedDependency[Principal],
        settings: NamedDependency[Settings],
    ) -> Template:
        """Rotate as POST /v1/api-keys/{id}/rotate does: a new secret (shown here once)
        for the same role, subject and name; the old one works for the overlap."""
        form = await request.form()
        minutes = forms.text(form, "overlap_minutes").strip()
        expires = forms.text(form, "expires_at").strip()
        try:
            overlap = forms.number(form, "overlap_minutes")
            expires_at = forms.moment(expires, "expires_at")
            data = forms.parse(
                ApiKeyRotate,
                {
                    "overlap_seconds": overlap * 60 if minutes else None,
                    "expires_at": None if expires_at is None else expires_at.isoformat(),
                },
            )
            created, old_digest = await api_key_service.rotate(ApiKeyId(key_id), data)
        except InvalidInput as exc:
            key = _rotatable(await api_key_service.get(ApiKeyId(key_id)))
            return render(
                request,
                "admin/rotate.html",
                status=exc.status_code,
                key=key,
                overlap_minutes=minutes,
                max_overlap_minutes=MAX_OVERLAP_SECONDS // 60,
                error=exc.detail,
                expires_at=expires,
            )
        authenticator: Authenticator = request.app.state.authenticator
        authenticator.forget(old_digest)  # the old key's new end applies here at once
        old = await api_key_service.get(ApiKeyId(key_id))
        return await _keys_page(
            request, api_key_service, principal, status=201, created=created, rotated_from=old
        )

    @post("/keys/{key_id:uuid}/revoke", opt=policy("api_key", "delete"))
    async def revoke(
        self, request: AnyRequest, key_id: FromPath[uuid.UUID], api_key_service: Keys
    ) -> Redirect:
        """Revoke a key: it stops authenticating, and its console sessions end."""
        key_digest = await api_key_service.revoke(ApiKeyId(key_id))
        authenticator: Authenticator = request.app.state.authenticator
        authenticator.forget(key_digest)
        ended = await _store(request).end_for_key(str(key_id))
        return back_to(f"/console/admin/keys?revoked={ended}")

    @post("/sessions/{id_hash:str}/revoke", opt=policy("api_key", "delete"))
    async def end_session(
        self, request: AnyRequest, id_hash: FromPath[str], principal: NamedDependency[Principal]
    ) -> Redirect:
        """End one console session of this tenant."""
        ended = await _store(request).end_by_hash(str(principal.tenant_id), id_hash)
        return back_to(f"/console/admin/keys?revoked={int(ended)}")
