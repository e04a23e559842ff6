"""The context playground: a relationship and a message in, the exact context POST
/v1/context would return out, with each memory's ranking and what the budget left out.
A dry run: the memories it recalls are not reinforced."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, get, post
from litestar.di import NamedDependency, Provide
from litestar.params import FromQuery
from litestar.response import Template

from tenancy.access.guard import policy
from tether.console import forms
from tether.console.pages import render
from tether.context.deps import provide_context_service
from tether.context.explain import explain
from tether.context.schemas import ContextRequest
from tether.context.services import ContextService
from tether.core.settings import Settings
from tether.recall.deps import provide_recall

AnyRequest = Request[Any, Any, Any]
READ = policy("relationship_memory", "read")
SECTIONS = ("rules", "profile", "memory", "recent", "knowledge")


class PlaygroundPages(Controller):
    path = "/playground"
    dependencies = {  # noqa: RUF012
        "recall": Provide(provide_recall, sync_to_thread=False),
        "context_service": Provide(provide_context_service, sync_to_thread=False),
    }

    @get("/", opt=READ)
    async def form(
        self,
        request: AnyRequest,
        settings: NamedDependency[Settings],
        relationship_id: FromQuery[str | None] = None,
    ) -> Template:
        """Pick a relationship, type a message."""
        draft = {
            "relationship_id": relationship_id or "",
            "query": "",
            "knowledge": False,
            "max_tokens": settings.context.default_max_tokens,
            "recent_turns": 6,
        }
        return render(request, "playground.html", draft=draft, result=None, sections=SECTIONS)

    @post("/", opt=READ)
    async def run(
        self,
        request: AnyRequest,
        context_service: NamedDependency[ContextService],
        settings: NamedDependency[Settings],
    ) -> Template:
        """Build the context for the message, explained."""
        form = await request.form()
        relationship_id = forms.text(form, "relationship_id").strip()
        draft = {
            "relationship_id": relationship_id,
            "query": forms.text(form, "query"),
            "knowledge": forms.text(form, "knowledge") == "on",
            "max_tokens": forms.number(form, "max_tokens", settings.context.default_max_tokens),
            "recent_turns": forms.number(form, "recent_turns", 6),
        }
        context_request = forms.parse(
            ContextRequest,
            {
                "relationship_id": str(forms.ident(relationship_id, "relationship_id")),
                "query": draft["query"],
                "max_tokens": draft["max_tokens"],
                "knowledge_enabled": draft["knowledge"],
                "recent_turns": draft["recent_turns"],
            },
        )
        result = explain(await context_service.assemble(context_request, dry_run=True))
        return render(request, "playground.html", draft=draft, result=result, sections=SECTIONS)
