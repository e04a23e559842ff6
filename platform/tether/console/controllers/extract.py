"""The extraction preview: paste a conversation snippet, see what POST
/v1/memories/extract says the pipeline would extract and do with each candidate
(insert, update, supersede, duplicate, hold) against the relationship's memories.
A dry run through the API's own service: nothing is stored."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, get, post
from litestar.di import NamedDependency, Provide
from litestar.params import FromQuery
from litestar.response import Template

from tenancy.access.guard import policy
from tether.console import forms
from tether.console.pages import render
from tether.console.snippets import turns_of
from tether.memories.preview import ExtractionPreview
from tether.memories.preview_controllers import provide_extraction_preview
from tether.memories.preview_schemas import ExtractPreviewRequest

AnyRequest = Request[Any, Any, Any]
READ = policy("relationship_memory", "read")


class ExtractPages(Controller):
    path = "/extract"
    dependencies = {  # noqa: RUF012
        "extraction_preview": Provide(provide_extraction_preview, sync_to_thread=False)
    }

    @get("/", opt=READ)
    async def form(
        self, request: AnyRequest, relationship_id: FromQuery[str | None] = None
    ) -> Template:
        """Pick a relationship, paste a snippet."""
        draft = {"relationship_id": relationship_id or "", "snippet": ""}
        return render(request, "extract.html", draft=draft, result=None, turns=[])

    @post("/", opt=READ)
    async def run(
        self, request: AnyRequest, extraction_preview: NamedDependency[ExtractionPreview]
    ) -> Template:
        """What would be stored, decided as the write path would decide it."""
        form = await request.form()
        relationship_id = forms.text(form, "relationship_id").strip()
        draft = {"relationship_id": relationship_id, "snippet": forms.text(form, "snippet")}
        turns = turns_of(draft["snippet"])
        body = forms.parse(
            ExtractPreviewRequest,
            {
                "relationship_id": str(forms.ident(relationship_id, "relationship_id")),
                "turns": turns,
            },
        )
        result = await extraction_preview.preview(body)
        return render(request, "extract.html", draft=draft, result=result, turns=turns)
