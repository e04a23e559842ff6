"""Tenant admin: API keys (create with role and subject, shown once; revoke) and the
console sessions signed in to the tenant (revoke)."""

from __future__ import annotations

import uuid
from typing import Any

from litestar import Controller, Request, get, post
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, FromQuery
from litestar.response import Redirect, Template

from tenancy.access.authenticator import Authenticator
from tenancy.access.deps import provide_api_key_service
from tenancy.access.guard import policy
from tenancy.access.principal import Principal
from tenancy.access.schemas import ApiKeyCreate
from tenancy.access.services import ApiKeyService
from tenancy.enums import Role
from tenancy.ids import ApiKeyId
from tether.console import forms
from tether.console.pages import back_to, may, render, session_of
from tether.console.sessions import SessionStore
from tether.core.resources import Resources

AnyRequest = Request[Any, Any, Any]
Keys = NamedDependency[ApiKeyService]


def _store(request: AnyRequest) -> SessionStore:
    resources: Resources = request.app.state.resources
    return SessionStore(resources.redis, resources.settings.console)


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
    ) -> Template:
        """The tenant's keys (never their secrets) and its console sessions."""
        keys = await api_key_service.list()
        sessions = await _store(request).of_tenant(str(principal.tenant_id))
        current = session_of(request)
        return render(
            request,
            "admin/keys.html",
            keys=keys,
            sessions=sessions,
            roles=list(Role),
            created=None,
            revoked=revoked,
            may_write=may(request, "api_key", "write"),
            may_revoke=may(request, "api_key", "delete"),
            current_session=current.id_hash if current else "",
        )

    @post("/keys", opt=policy("api_key", "write"))
    async def create(
        self, request: AnyRequest, api_key_service: Keys, principal: NamedDependency[Principal]
    ) -> Template:
        """Issue a key; its secret is on this page only."""
        form = await request.form()
        subject = forms.text(form, "subject").strip()
        data = forms.parse(
            ApiKeyCreate,
            {
                "role": forms.text(form, "role"),
                "subject": subject or None,
                "name": forms.text(form, "name").strip(),
            },
        )
        created = await api_key_service.issue(data)
        keys = await api_key_service.list()
        sessions = await _store(request).of_tenant(str(principal.tenant_id))
        return render(
            request,
            "admin/keys.html",
            status=201,
            keys=keys,
            sessions=sessions,
            roles=list(Role),
            created=created,
            revoked=None,
            may_write=True,
            may_revoke=may(request, "api_key", "delete"),
            current_session="",
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
