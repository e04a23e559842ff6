"""Support pages: relationships, a relationship's memory timeline, why a memory is
remembered, editing it, forgetting with preview and confirm, and export."""

from __future__ import annotations

import uuid
from typing import Any

from litestar import Controller, Request, get, post
from litestar.datastructures import State
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, FromQuery
from litestar.response import Redirect, Stream, Template
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.guard import policy
from tenancy.access.principal import Principal
from tenancy.relationships.deps import provide_relationship_service
from tenancy.relationships.directory import RelationshipDirectory
from tenancy.relationships.services import RelationshipService
from tether.console import forms
from tether.console.pages import back_to, may, render, require
from tether.console.timeline import timeline
from tether.core.resources import Resources
from tether.memories.conflicts import ConflictService
from tether.memories.deps import provide_conflict_service, provide_console_memory_service
from tether.memories.enums import MemoryLayer, MemoryType
from tether.memories.schemas import MemoryUpdate
from tether.memories.services import MemoryService
from tether.recall.services import may_see_private
from tether.recap.deps import provide_rules_recap_service
from tether.recap.services import RecapService
from tether.rights.controllers import provide_forget_service
from tether.rights.export import audited_relationship_export
from tether.rights.forget import ForgetService
from tether.rights.schemas import ForgetRequest

AnyRequest = Request[Any, Any, Any]
Memories = NamedDependency[MemoryService]
Relationships = NamedDependency[RelationshipService]
PAGE = 50
CONFLICTS = 20  # the oldest open conflicts beside the timeline


def _choice(kind: type[Any], value: str | None) -> Any:
    if not value:
        return None
    try:
        return kind(value)
    except ValueError as exc:
        raise forms.FormInvalid(f"unknown {kind.__name__}: {value}") from exc


class RelationshipPages(Controller):
    path = "/relationships"
    dependencies = {  # noqa: RUF012
        "relationship_service": Provide(provide_relationship_service, sync_to_thread=False),
        "memory_service": Provide(provide_console_memory_service, sync_to_thread=False),
        "forget_service": Provide(provide_forget_service, sync_to_thread=False),
        "conflict_service": Provide(provide_conflict_service, sync_to_thread=False),
        "recap_service": Provide(provide_rules_recap_service, sync_to_thread=False),
    }

    @get("/", opt=policy("relationship_memory", "read"))
    async def relationships(
        self,
        request: AnyRequest,
        relationship_service: Relationships,
        user_id: FromQuery[str | None] = None,
        persona_id: FromQuery[str | None] = None,
        cursor: FromQuery[str | None] = None,
    ) -> Template:
        """The relationships this key reaches, optionally of one user or persona."""
        require(request, "identity", "read")  # as GET /v1/relationships
        user = forms.ident(user_id, "user_id")
        persona = forms.ident(persona_id, "persona_id")
        page = await relationship_service.list(cursor, PAGE, user, persona, None)
        return render(
            request,
            "relationships/list.html",
            page=page,
            user_id=user_id or "",
            persona_id=persona_id or "",
        )

    @get("/{relationship_id:uuid}", opt=policy("relationship_memory", "read"))
    async def memories(
        self,
        request: AnyRequest,
        relationship_id: FromPath[uuid.UUID],
        relationship_service: Relationships,
        memory_service: Memories,
        conflict_service: NamedDependency[ConflictService],
        recap_service: NamedDependency[RecapService],
        layer: FromQuery[str | None] = None,
        memory_type: FromQuery[str | None] = None,
        show: FromQuery[str | None] = None,
        cursor: FromQuery[str | None] = None,
        forgotten: FromQuery[int | None] = None,
        resolved: FromQuery[str | None] = None,
    ) -> Template:
        """The memory timeline, newest first, superseded versions folded under the
        current one; beside it the open conflicts and the recap (GET …/conflicts and
        GET …/recap, the same policy as the timeline)."""
        require(request, "identity", "read")  # the relationship itself
        relationship = await relationship_service.get(relationship_id)
        page = await memory_service.list(
            relationship_id,
            cursor,
            PAGE,
            _choice(MemoryType, memory_type),
            True if show == "active" else None,
            None,
            layer=_choice(MemoryLayer, layer),
            newest_first=True,
        )
        conflicts = await conflict_service.list(relationship_id, None, CONFLICTS)
        recap = await recap_service.recap(relationship_id)
        filters = {"layer": layer or "", "memory_type": memory_type or "", "show": show or ""}
        extra = "".join(f"&{k}={v}" for k, v in filters.items() if v)
        return render(
            request,
            "relationships/memories.html",
            relationship=relationship,
            page=page,
            entries=timeline(page.items),
            filters=filters,
            extra=extra,
            layers=list(MemoryLayer),
            types=list(MemoryType),
            forgotten=forgotten,
            resolved=bool(resolved),
            may_forget=may(request, "relationship_memory", "delete"),
            may_export=may(request, "relationship_memory", "export"),
            may_resolve=may(request, "relationship_memory", "write"),
            may_inherit=may(request, "ownership", "write"),
            conflicts=conflicts,
            recap=recap,
        )

    @get(
        "/{relationship_id:uuid}/memories/{memory_id:uuid}",
        opt=policy("relationship_memory", "read"),
    )
    async def memory(
        self,
        request: AnyRequest,
        relationship_id: FromPath[uuid.UUID],
        memory_id: FromPath[uuid.UUID],
        memory_service: Memories,
    ) -> Template:
        """Why this is remembered: its source turns, its origin, the consolidation
        decisions that made or changed it, and its versions."""
        memory = await memory_service.get(relationship_id, memory_id)
        sources = await memory_service.sources(relationship_id, memory_id)
        history = await memory_service.history(relationship_id, memory_id, None, 100)
        decisions = await memory_service.consolidations(
            relationship_id, None, None, 100, memory_id=memory_id
        )
        return render(
            request,
            "relationships/memory.html",
            relationship_id=relationship_id,
            memory=memory,
            sources=sources,
            history=history.items,
            decisions=decisions.items,
            types=list(MemoryType),
            may_edit=may(request, "relationship_memory", "write"),
        )

    @post(
        "/{relationship_id:uuid}/memories/{memory_id:uuid}",
        opt=policy("relationship_memory", "write"),
    )
    async def edit(
        self,
        request: AnyRequest,
        relationship_id: FromPath[uuid.UUID],
        memory_id: FromPath[uuid.UUID],
        memory_service: Memories,
    ) -> Redirect:
        """Change a memory (a new version; the old one stays in its history)."""
        form = await request.form()
        update = forms.parse(
            MemoryUpdate,
            {
                "content": forms.text(form, "content") or None,
                "memory_type": forms.text(form, "memory_type") or None,
                "importance": forms.decimal(form, "importance"),
                "reason": forms.text(form, "reason") or "edited in the console",
            },
        )
        await memory_service.update(relationship_id, memory_id, update)
        return back_to(f"/console/relationships/{relationship_id}/memories/{memory_id}")

    @post("/{relationship_id:uuid}/forget", opt=policy("relationship_memory", "delete"))
    async def forget_preview(
        self,
        request: AnyRequest,
        relationship_id: FromPath[uuid.UUID],
        forget_service: NamedDependency[ForgetService],
    ) -> Template:
        """Exactly which memories a forget would take, before anything changes."""
        form = await request.form()
        ids = [forms.ident(str(v)) for v in form.getall("memory_id", [])]
        query = forms.text(form, "query").strip()
        request_body = forms.parse(
            ForgetRequest,
            {
                "query": query or None,
                "memory_ids": [str(i) for i in ids if i] or None,
                "hard": forms.text(form, "hard") == "on",
            },
        )
        if request_body.query is None and request_body.memory_ids is None:
            raise forms.FormInvalid("choose memories or type words to forget")
        preview = await forget_service.preview(relationship_id, request_body)
        return render(
            request, "relationships/forget.html", relationship_id=relationship_id, preview=preview
        )

    @post("/{relationship_id:uuid}/forget/confirm", opt=policy("relationship_memory", "delete"))
    async def forget_confirm(
        self,
        request: AnyRequest,
        relationship_id: FromPath[uuid.UUID],
        forget_service: NamedDependency[ForgetService],
    ) -> Redirect:
        """Forget what the preview showed (the token names exactly those memories)."""
        token = forms.text(await request.form(), "token")
        result = await forget_service.confirm(relationship_id, token)
        return back_to(f"/console/relationships/{relationship_id}?forgotten={result.forgotten}")

    @get("/{relationship_id:uuid}/export", opt=policy("relationship_memory", "export"))
    async def export(
        self,
        state: State,
        relationship_id: FromPath[uuid.UUID],
        principal: NamedDependency[Principal],
        db_session: NamedDependency[AsyncSession],
        relationship_directory: NamedDependency[RelationshipDirectory],
        resources: NamedDependency[Resources],
    ) -> Stream:
        """The relationship as JSON lines, as GET /v1/relationships/{id}/export."""
        card = await relationship_directory.open(relationship_id)
        complete = may_see_private(
            state.policy.for_tenant(principal.tenant_id), principal, "export"
        )
        lines = await audited_relationship_export(
            db_session, resources.sessions, card, principal, complete, state.access_log
        )
        name = f"relationship-{relationship_id}.jsonl"
        return Stream(
            lines,
            media_type="application/x-ndjson",
            headers={"Content-Disposition": f'attachment; filename="{name}"'},
        )
