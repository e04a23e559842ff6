"""The consent manager: per global user, which global-profile fields each persona's
context may carry and the policy that allows it; granting and revoking consent (recorded
with its source and audited, as PUT /v1/users/{id}/consent)."""

from __future__ import annotations

import uuid
from typing import Any

from litestar import Controller, Request, get, post
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, FromQuery
from litestar.response import Redirect, Template

from tenancy.access.guard import policy
from tenancy.graph.deps import provide_graph_service
from tenancy.graph.services import GraphService
from tenancy.relationships.deps import provide_relationship_service
from tenancy.relationships.services import RelationshipService
from tether.console import forms
from tether.console.pages import back_to, may, render, require, session_of
from tether.profiles.controllers import provide_profile_service
from tether.profiles.schemas import ConsentScope, ConsentWrite
from tether.profiles.services import OBJECT, ProfileService

AnyRequest = Request[Any, Any, Any]
Graph = NamedDependency[GraphService]
Profiles = NamedDependency[ProfileService]
PAGE = 50
# The role whose key builds contexts: its rule is what lets a persona's context read.
CONTEXT_ROLE = "gateway"


class ConsentPages(Controller):
    path = "/users"
    dependencies = {  # noqa: RUF012
        "graph_service": Provide(provide_graph_service, sync_to_thread=False),
        "profile_service": Provide(provide_profile_service, sync_to_thread=False),
        "relationship_service": Provide(provide_relationship_service, sync_to_thread=False),
    }

    @get("/", opt=policy("global_user_profile", "read"))
    async def users(
        self, request: AnyRequest, graph_service: Graph, cursor: FromQuery[str | None] = None
    ) -> Template:
        """The tenant's global users."""
        require(request, "identity", "read")
        page = await graph_service.list_users(cursor, PAGE)
        return render(request, "consent/users.html", page=page)

    @get("/{user_id:uuid}", opt=policy("global_user_profile", "read"))
    async def consent(
        self,
        request: AnyRequest,
        user_id: FromPath[uuid.UUID],
        graph_service: Graph,
        profile_service: Profiles,
        relationship_service: NamedDependency[RelationshipService],
        saved: FromQuery[bool] = False,
    ) -> Template:
        """What each persona's context may carry of this user's global profile."""
        require(request, "identity", "read")
        user = await graph_service.get_user(user_id)
        state = await profile_service.consent(user_id)
        profile = await profile_service.get(user_id)  # audited, as every profile read
        relationships = await relationship_service.list_for_user(user_id, None, PAGE)
        personas = {}
        for r in relationships.items:
            if r.creator_persona_id not in personas:
                personas[r.creator_persona_id] = await graph_service.get_persona(
                    r.creator_persona_id
                )
        session = session_of(request)
        enforcer = (
            request.app.state.policy.for_tenant(uuid.UUID(session.tenant_id)) if session else None
        )
        rule = enforcer.decide(CONTEXT_ROLE, OBJECT, "read") if enforcer else None
        return render(
            request,
            "consent/user.html",
            user=user,
            state=state,
            profile=profile,
            relationships=relationships.items,
            personas=personas,
            rule=rule,
            may_inherit=may(request, "ownership", "write"),
            scopes=list(ConsentScope),
            saved=saved,
            granted=set(
                state.current.scopes if state.current and not state.current.withdrawn else []
            ),
            may_change=may(request, "global_user_profile", "write"),
        )

    @post("/{user_id:uuid}/consent", opt=policy("global_user_profile", "write"))
    async def change(
        self, request: AnyRequest, user_id: FromPath[uuid.UUID], profile_service: Profiles
    ) -> Redirect:
        """Record the scopes the user consents to from now on (none: withdraw all)."""
        form = await request.form()
        data = forms.parse(
            ConsentWrite,
            {
                "scopes": [str(v) for v in form.getall("scope", [])],
                "source": forms.text(form, "source").strip() or "console",
            },
        )
        await profile_service.put_consent(user_id, data)
        return back_to(f"/console/users/{user_id}?saved=true")
