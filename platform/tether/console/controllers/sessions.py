"""A relationship's sessions and their memory / knowledge flags (GET|PUT|DELETE
/v1/relationships/{id}/sessions/{sid}), resolving an open conflict (POST
…/memories/{mid}/resolve) and the pool operator's inherited layers (PUT
…/pool-inheritance): the API's own services, under the API's own policies."""

from __future__ import annotations

import uuid
from typing import Any

from litestar import Controller, Request, get, post
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, FromQuery
from litestar.response import Redirect, Template

from tenancy.access.guard import policy
from tenancy.relationships.deps import provide_relationship_service
from tenancy.relationships.schemas import PoolInheritance
from tenancy.relationships.services import RelationshipService
from tenancy.settings.schemas import ALL_LAYERS
from tether.console import forms
from tether.console.pages import back_to, may, render, require
from tether.core.pagination import KeyedCursor
from tether.core.text import IdentifierInPath
from tether.memories.conflicts import ConflictService
from tether.memories.deps import provide_conflict_service
from tether.memories.schemas import MemoryResolve
from tether.memories.session_controllers import provide_session_flags
from tether.memories.session_flags import SessionFlagService
from tether.memories.session_schemas import SessionFlagsUpdate

AnyRequest = Request[Any, Any, Any]
Flags = NamedDependency[SessionFlagService]
PAGE = 50
R = "/{relationship_id:uuid}"


def _flag(form_value: str) -> bool | None:
    """A flag select: "on", "off", or "" (inherit the persona's, then the tenant's)."""
    if form_value in ("", "inherit"):
        return None
    if form_value in ("on", "off"):
        return form_value == "on"
    raise forms.FormInvalid(f"a flag is on, off or inherit, not {form_value!r}")


class SessionPages(Controller):
    path = "/relationships"
    dependencies = {  # noqa: RUF012
        "relationship_service": Provide(provide_relationship_service, sync_to_thread=False),
        "conflict_service": Provide(provide_conflict_service, sync_to_thread=False),
        "session_flags": Provide(provide_session_flags, sync_to_thread=False),
    }

    @post(R + "/memories/{memory_id:uuid}/resolve", opt=policy("relationship_memory", "write"))
    async def resolve(
        self,
        request: AnyRequest,
        relationship_id: FromPath[uuid.UUID],
        memory_id: FromPath[uuid.UUID],
        conflict_service: NamedDependency[ConflictService],
    ) -> Redirect:
        """This memory wins every open conflict it is part of, as POST …/resolve."""
        form = await request.form()
        body = forms.parse(MemoryResolve, {"reason": forms.text(form, "reason").strip()})
        await conflict_service.resolve(relationship_id, memory_id, body.reason)
        return back_to(f"/console/relationships/{relationship_id}?resolved={memory_id}")

    @get(R + "/sessions", opt=policy("relationship_memory", "read"))
    async def sessions(
        self,
        request: AnyRequest,
        relationship_id: FromPath[uuid.UUID],
        session_flags: Flags,
        cursor: FromQuery[KeyedCursor] = None,
    ) -> Template:
        """The relationship's sessions, newest first, with their flags (cursor-paged as
        GET /v1/relationships/{id}/sessions)."""
        page = await session_flags.sessions(relationship_id, cursor, PAGE)
        return render(
            request,
            "relationships/sessions.html",
            relationship_id=relationship_id,
            page=page,
            may_write=may(request, "relationship_memory", "write"),
            may_forget=may(request, "relationship_memory", "delete"),
        )

    @post(R + "/sessions/{session_id:str}", opt=policy("relationship_memory", "write"))
    async def set_flags(
        self,
        request: AnyRequest,
        relationship_id: FromPath[uuid.UUID],
        session_id: FromPath[IdentifierInPath],
        session_flags: Flags,
    ) -> Redirect:
        """Set the session's flags (inherit: null), as PUT …/sessions/{sid}."""
        form = await request.form()
        update = SessionFlagsUpdate(
            memory_enabled=_flag(forms.text(form, "memory_enabled")),
            knowledge_enabled=_flag(forms.text(form, "knowledge_enabled")),
        )
        await session_flags.put(relationship_id, session_id, update)
        return back_to(f"/console/relationships/{relationship_id}/sessions")

    @post(R + "/sessions/{session_id:str}/forget", opt=policy("relationship_memory", "delete"))
    async def forget(
        self,
        relationship_id: FromPath[uuid.UUID],
        session_id: FromPath[IdentifierInPath],
        session_flags: Flags,
    ) -> Redirect:
        """Forget the session's turns and the memories only they support (DELETE)."""
        await session_flags.forget(relationship_id, session_id)
        return back_to(f"/console/relationships/{relationship_id}/sessions")

    @get(R + "/pool-inheritance", opt=policy("ownership", "write"))
    async def inheritance(
        self,
        request: AnyRequest,
        relationship_id: FromPath[uuid.UUID],
        relationship_service: NamedDependency[RelationshipService],
        saved: FromQuery[int | None] = None,
    ) -> Template:
        """The layers a pool operator inherits here; only who may change them sees it."""
        require(request, "identity", "read")  # the relationship itself
        relationship = await relationship_service.get(relationship_id)
        return render(
            request,
            "relationships/inheritance.html",
            relationship=relationship,
            layers=ALL_LAYERS,
            saved=saved,
        )

    @post(R + "/pool-inheritance", opt=policy("ownership", "write"))
    async def set_inheritance(
        self,
        request: AnyRequest,
        relationship_id: FromPath[uuid.UUID],
        relationship_service: NamedDependency[RelationshipService],
    ) -> Redirect:
        """As PUT …/pool-inheritance: the chosen layers, or the tenant's setting."""
        form = await request.form()
        chosen = [str(v) for v in form.getall("layer", [])]
        layers = None if forms.text(form, "mode") == "tenant" else chosen
        await relationship_service.set_pool_inheritance(
            relationship_id, forms.parse(PoolInheritance, {"layers": layers})
        )
        return back_to(f"/console/relationships/{relationship_id}/pool-inheritance?saved=1")
