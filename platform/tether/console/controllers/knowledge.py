"""Tenant admin: knowledge bases, uploading documents (with progress), their indexing
status (refreshed while any is in progress) and re-indexing."""

from __future__ import annotations

import uuid
from typing import Any

from litestar import Controller, Request, get, post
from litestar.datastructures import UploadFile
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, FromQuery
from litestar.response import Redirect, Template

from tenancy.access.guard import policy
from tether.console import forms
from tether.console.pages import back_to, may, render
from tether.knowledge.deps import provide_document_service, provide_knowledge_base_service
from tether.knowledge.documents import DocumentService
from tether.knowledge.limits import upload_limit
from tether.knowledge.schemas import DocumentStatus, KnowledgeBaseCreate
from tether.knowledge.services import KnowledgeBaseService

AnyRequest = Request[Any, Any, Any]
Bases = NamedDependency[KnowledgeBaseService]
Documents = NamedDependency[DocumentService]
READ, WRITE = policy("knowledge", "read"), policy("knowledge", "write")
PAGE = 50
BUSY = {DocumentStatus.UPLOADED, DocumentStatus.INDEXING}


async def _documents(
    request: AnyRequest,
    knowledge_base_id: uuid.UUID,
    knowledge_base_service: KnowledgeBaseService,
    document_service: DocumentService,
    cursor: str | None,
    fragment: bool,
) -> Template:
    base = await knowledge_base_service.get(knowledge_base_id)
    documents = await document_service.list(knowledge_base_id, None, cursor, PAGE)
    return render(
        request,
        "admin/_documents.html" if fragment else "admin/base.html",
        base=base,
        documents=documents,
        busy=any(d.status in BUSY for d in documents.items),
        may_write=may(request, "knowledge", "write"),
    )


class KnowledgePages(Controller):
    path = "/admin/knowledge"
    dependencies = {  # noqa: RUF012
        "knowledge_base_service": Provide(provide_knowledge_base_service, sync_to_thread=False),
        "document_service": Provide(provide_document_service, sync_to_thread=False),
    }

    @get("/", opt=READ)
    async def bases(
        self,
        request: AnyRequest,
        knowledge_base_service: Bases,
        cursor: FromQuery[str | None] = None,
    ) -> Template:
        """The knowledge bases this key reaches."""
        page = await knowledge_base_service.list(None, cursor, PAGE)
        return render(
            request, "admin/knowledge.html", page=page, may_write=may(request, "knowledge", "write")
        )

    @post("/", opt=WRITE)
    async def create(self, request: AnyRequest, knowledge_base_service: Bases) -> Redirect:
        """A base for the tenant, or bound to a persona."""
        form = await request.form()
        persona = forms.ident(forms.text(form, "creator_persona_id"), "creator_persona_id")
        data = forms.parse(
            KnowledgeBaseCreate,
            {
                "name": forms.text(form, "name").strip(),
                "description": forms.text(form, "description"),
                "creator_persona_id": None if persona is None else str(persona),
            },
        )
        base = await knowledge_base_service.create(data)
        return back_to(f"/console/admin/knowledge/{base.id}")

    @get("/{knowledge_base_id:uuid}", opt=READ)
    async def base(
        self,
        request: AnyRequest,
        knowledge_base_id: FromPath[uuid.UUID],
        knowledge_base_service: Bases,
        document_service: Documents,
        cursor: FromQuery[str | None] = None,
    ) -> Template:
        """A base's documents with their status; the table refreshes while any indexes."""
        fragment = bool(request.headers.get("hx-request"))
        return await _documents(
            request, knowledge_base_id, knowledge_base_service, document_service, cursor, fragment
        )

    @post(
        "/{knowledge_base_id:uuid}/documents",
        opt=WRITE,
        request_max_body_size=None,  # upload_limit applies the configured limit
        middleware=[upload_limit],
    )
    async def upload(
        self,
        request: AnyRequest,
        knowledge_base_id: FromPath[uuid.UUID],
        knowledge_base_service: Bases,
        document_service: Documents,
    ) -> Redirect | Template:
        """Upload a PDF, text or Markdown file; indexing starts at once in a worker."""
        upload = (await request.form()).get("file")
        if not isinstance(upload, UploadFile):
            raise forms.FormInvalid("choose a file to upload")
        await document_service.upload(knowledge_base_id, upload)
        if request.headers.get("hx-request") != "true":
            return back_to(f"/console/admin/knowledge/{knowledge_base_id}")
        # htmx uploaded it (with a progress bar): answer with the refreshed table.
        return await _documents(
            request, knowledge_base_id, knowledge_base_service, document_service, None, True
        )

    @post("/{knowledge_base_id:uuid}/documents/{document_id:uuid}/reindex", opt=WRITE)
    async def reindex(
        self,
        knowledge_base_id: FromPath[uuid.UUID],
        document_id: FromPath[uuid.UUID],
        document_service: Documents,
    ) -> Redirect:
        """Index the document again (its current passages answer meanwhile)."""
        await document_service.reindex(knowledge_base_id, document_id)
        return back_to(f"/console/admin/knowledge/{knowledge_base_id}")
