"""Creator pages: personas, the profile editor with its live preview, saving with
If-Match (a 412 shows both versions for a merge), and the version history."""

from __future__ import annotations

import uuid
from typing import Any

from litestar import Controller, Request, get, post
from litestar.datastructures import FormMultiDict
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, FromQuery
from litestar.response import Redirect, Template

from tenancy.access.guard import policy
from tenancy.graph.deps import provide_graph_service
from tenancy.graph.services import GraphService
from tether.console import forms
from tether.console.diffs import segments
from tether.console.pages import back_to, may, render, require
from tether.console.preview import profile_preview
from tether.core.settings import Settings
from tether.personas.deps import provide_persona_profile_service
from tether.personas.errors import ProfileChanged
from tether.personas.schemas import PersonaProfileRead, PersonaProfileWrite
from tether.personas.services import PersonaProfileService, etag

AnyRequest = Request[Any, Any, Any]
Graph = NamedDependency[GraphService]
Profiles = NamedDependency[PersonaProfileService]
FIELDS = ("background", "tone", "taboos", "scripts", "notes")
PAGE = 25


def _write(form: FormMultiDict) -> PersonaProfileWrite:
    return forms.parse(
        PersonaProfileWrite,
        {
            "background": forms.text(form, "background"),
            "tone": forms.text(form, "tone"),
            "taboos": forms.lines(form, "taboos"),
            "scripts": forms.lines(form, "scripts"),
            "notes": forms.text(form, "notes"),
        },
    )


def _as_read(persona_id: uuid.UUID, data: PersonaProfileWrite, version: int) -> PersonaProfileRead:
    return PersonaProfileRead(
        persona_id,
        version,
        data.background,
        data.tone,
        list(data.taboos),
        list(data.scripts),
        data.notes,
        None,
        None,
    )


def _field_text(profile: PersonaProfileRead | PersonaProfileWrite, name: str) -> str:
    value = getattr(profile, name)
    return "\n".join(value) if isinstance(value, list) else str(value)


def _diff(old: PersonaProfileRead, new: PersonaProfileRead) -> dict[str, Any]:
    return {
        name: segments(_field_text(old, name), _field_text(new, name))
        for name in FIELDS
        if _field_text(old, name) != _field_text(new, name)
    }


class PersonaPages(Controller):
    path = "/personas"
    dependencies = {  # noqa: RUF012
        "graph_service": Provide(provide_graph_service, sync_to_thread=False),
        "persona_profile_service": Provide(provide_persona_profile_service, sync_to_thread=False),
    }

    @get("/", opt=policy("identity", "read"))
    async def personas(
        self, request: AnyRequest, graph_service: Graph, cursor: FromQuery[str | None] = None
    ) -> Template:
        """The personas this key reaches (a creator: its own)."""
        page = await graph_service.list_personas(None, cursor, PAGE)
        return render(request, "personas/list.html", page=page)

    @get("/{persona_id:uuid}", opt=policy("persona_profile", "read"))
    async def editor(
        self,
        request: AnyRequest,
        persona_id: FromPath[uuid.UUID],
        graph_service: Graph,
        persona_profile_service: Profiles,
        settings: NamedDependency[Settings],
        saved: FromQuery[int | None] = None,
    ) -> Template:
        """The profile editor with the preview of the persona section."""
        require(request, "identity", "read")  # the persona itself, as GET /v1/personas/{id}
        persona = await graph_service.get_persona(persona_id)
        profile = await persona_profile_service.get(persona_id)
        preview = profile_preview(profile, settings.context)
        return render(
            request,
            "personas/editor.html",
            persona=persona,
            profile=profile,
            form=profile,
            preview=preview,
            saved=saved,
            editable=may(request, "persona_profile", "write"),
        )

    @post("/{persona_id:uuid}/preview", opt=policy("persona_profile", "read"))
    async def preview(
        self,
        request: AnyRequest,
        persona_id: FromPath[uuid.UUID],
        graph_service: Graph,
        settings: NamedDependency[Settings],
    ) -> Template:
        """The preview of the form as typed (htmx swaps it in while the creator types)."""
        await graph_service.get_persona(persona_id)
        try:
            draft = _as_read(persona_id, _write(await request.form()), 0)
        except forms.FormInvalid as exc:
            return render(request, "personas/_preview.html", preview=None, error=exc.detail)
        return render(
            request,
            "personas/_preview.html",
            preview=profile_preview(draft, settings.context),
            error="",
        )

    @post("/{persona_id:uuid}/profile", opt=policy("persona_profile", "write"))
    async def save(
        self,
        request: AnyRequest,
        persona_id: FromPath[uuid.UUID],
        graph_service: Graph,
        persona_profile_service: Profiles,
        settings: NamedDependency[Settings],
    ) -> Template | Redirect:
        """Save as a new version if nobody saved since the form was read; else 412 and
        the merge view."""
        form = await request.form()
        require(request, "identity", "read")
        persona = await graph_service.get_persona(persona_id)
        read_version = forms.number(form, "version")
        try:
            data = _write(form)
        except forms.FormInvalid as exc:
            draft = PersonaProfileRead(
                persona_id,
                read_version,
                forms.text(form, "background"),
                forms.text(form, "tone"),
                forms.lines(form, "taboos"),
                forms.lines(form, "scripts"),
                forms.text(form, "notes"),
                None,
                None,
            )
            return render(
                request,
                "personas/editor.html",
                status=422,
                persona=persona,
                profile=draft,
                form=draft,
                preview=None,
                saved=None,
                editable=True,
                error=exc.detail,
            )
        try:
            saved = await persona_profile_service.put(persona_id, data, etag(read_version))
        except ProfileChanged:
            theirs = await persona_profile_service.get(persona_id)
            mine = _as_read(persona_id, data, read_version)
            return render(
                request,
                "personas/merge.html",
                status=412,
                persona=persona,
                mine=mine,
                theirs=theirs,
                diff=_diff(theirs, mine),
                preview=profile_preview(mine, settings.context),
            )
        return back_to(f"/console/personas/{persona_id}?saved={saved.version}")

    @get("/{persona_id:uuid}/history", opt=policy("persona_profile", "read"))
    async def history(
        self,
        request: AnyRequest,
        persona_id: FromPath[uuid.UUID],
        graph_service: Graph,
        persona_profile_service: Profiles,
        cursor: FromQuery[str | None] = None,
    ) -> Template:
        """Every version, each with what it changed; a restore writes it as the newest."""
        require(request, "identity", "read")
        persona = await graph_service.get_persona(persona_id)
        page = await persona_profile_service.history(persona_id, cursor, PAGE)
        current = await persona_profile_service.get(persona_id)
        rows = []
        if page.items:
            before = await persona_profile_service.version(persona_id, page.items[0].version - 1)
            for item in page.items:
                rows.append((item, _diff(before, item)))
                before = item
        rows.reverse()  # newest first on the page
        return render(
            request,
            "personas/history.html",
            persona=persona,
            rows=rows,
            page=page,
            current=current,
            editable=may(request, "persona_profile", "write"),
        )

    @post("/{persona_id:uuid}/restore", opt=policy("persona_profile", "write"))
    async def restore(
        self,
        request: AnyRequest,
        persona_id: FromPath[uuid.UUID],
        persona_profile_service: Profiles,
    ) -> Redirect:
        """Write an old version again as the newest (If-Match: the version shown)."""
        form = await request.form()
        old = await persona_profile_service.version(persona_id, forms.number(form, "version"))
        data = PersonaProfileWrite(old.background, old.tone, old.taboos, old.scripts, old.notes)
        current = forms.number(form, "current")
        saved = await persona_profile_service.put(persona_id, data, etag(current))
        return back_to(f"/console/personas/{persona_id}?saved={saved.version}")
