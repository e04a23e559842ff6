"""/v1/knowledge-bases[...]: bases, their documents, and queries."""

from __future__ import annotations

import uuid
from typing import Annotated

from litestar import Controller, Response, delete, get, patch, post, put
from litestar.di import NamedDependency, Provide
from litestar.enums import RequestEncodingType
from litestar.params import Body, FromPath, FromQuery, JSONBody
from litestar.status_codes import (
    HTTP_200_OK,
    HTTP_201_CREATED,
    HTTP_202_ACCEPTED,
    HTTP_204_NO_CONTENT,
)

from tenancy.access.guard import policy
from tether.core.pagination import DEFAULT_LIMIT, Cursor, Limit
from tether.knowledge import schemas as s
from tether.knowledge.deps import (
    provide_document_service,
    provide_knowledge_base_service,
    provide_knowledge_query_service,
)
from tether.knowledge.documents import DocumentService
from tether.knowledge.limits import upload_limit
from tether.knowledge.queries import KnowledgeQueryService
from tether.knowledge.services import KnowledgeBaseService

Bases = NamedDependency[KnowledgeBaseService]
Documents = NamedDependency[DocumentService]
Queries = NamedDependency[KnowledgeQueryService]
Upload = Annotated[s.DocumentUpload, Body(media_type=RequestEncodingType.MULTI_PART)]
READ = policy("knowledge", "read")
WRITE = policy("knowledge", "write")
DELETE = policy("knowledge", "delete")
_BASE_SERVICE = {
    "knowledge_base_service": Provide(provide_knowledge_base_service, sync_to_thread=False)
}


class KnowledgeBaseController(Controller):
    path = "/v1/knowledge-bases"
    tags = ["knowledge"]  # noqa: RUF012
    dependencies = {  # noqa: RUF012
        **_BASE_SERVICE,
        "knowledge_query_service": Provide(provide_knowledge_query_service, sync_to_thread=False),
    }

    @post(operation_id="CreateKnowledgeBase", status_code=HTTP_201_CREATED, opt=WRITE)
    async def create(
        self, data: JSONBody[s.KnowledgeBaseCreate], knowledge_base_service: Bases
    ) -> s.KnowledgeBaseRead:
        """A knowledge base, bound to a persona or for the whole tenant."""
        return await knowledge_base_service.create(data)

    @get(operation_id="ListKnowledgeBases", opt=READ)
    async def list_bases(
        self,
        knowledge_base_service: Bases,
        creator_persona_id: FromQuery[uuid.UUID | None] = None,
        cursor: FromQuery[Cursor] = None,
        limit: FromQuery[Limit] = DEFAULT_LIMIT,
    ) -> s.KnowledgeBasePage:
        """The tenant's bases (for a creator key: its personas' and the unbound ones)."""
        return await knowledge_base_service.list(creator_persona_id, cursor, limit)

    @get("/{knowledge_base_id:uuid}", operation_id="GetKnowledgeBase", opt=READ)
    async def get_base(
        self, knowledge_base_id: FromPath[uuid.UUID], knowledge_base_service: Bases
    ) -> s.KnowledgeBaseRead:
        return await knowledge_base_service.get(knowledge_base_id)

    @patch("/{knowledge_base_id:uuid}", operation_id="UpdateKnowledgeBase", opt=WRITE)
    async def update(
        self,
        knowledge_base_id: FromPath[uuid.UUID],
        data: JSONBody[s.KnowledgeBaseUpdate],
        knowledge_base_service: Bases,
    ) -> s.KnowledgeBaseRead:
        """Rename, describe, or make it the tenant's default base."""
        return await knowledge_base_service.update(knowledge_base_id, data)

    @delete(
        "/{knowledge_base_id:uuid}",
        operation_id="DeleteKnowledgeBase",
        status_code=HTTP_204_NO_CONTENT,
        opt=DELETE,
    )
    async def delete_base(
        self, knowledge_base_id: FromPath[uuid.UUID], knowledge_base_service: Bases
    ) -> None:
        """The base with its documents, passages and stored files."""
        await knowledge_base_service.delete(knowledge_base_id)

    @put("/{knowledge_base_id:uuid}/persona", operation_id="BindKnowledgeBase", opt=WRITE)
    async def bind(
        self,
        knowledge_base_id: FromPath[uuid.UUID],
        data: JSONBody[s.KnowledgeBaseBinding],
        knowledge_base_service: Bases,
    ) -> s.KnowledgeBaseRead:
        """Serve this base to every relationship of the persona (one base per persona)."""
        return await knowledge_base_service.bind(knowledge_base_id, data.creator_persona_id)

    @delete(
        "/{knowledge_base_id:uuid}/persona",
        operation_id="UnbindKnowledgeBase",
        status_code=HTTP_200_OK,
        opt=WRITE,
    )
    async def unbind(
        self, knowledge_base_id: FromPath[uuid.UUID], knowledge_base_service: Bases
    ) -> s.KnowledgeBaseRead:
        """The persona falls back to the tenant's default base (admins only)."""
        return await knowledge_base_service.unbind(knowledge_base_id)

    @post(
        "/{knowledge_base_id:uuid}/query",
        operation_id="QueryKnowledgeBase",
        status_code=HTTP_200_OK,
        opt=READ,
    )
    async def query(
        self,
        knowledge_base_id: FromPath[uuid.UUID],
        data: JSONBody[s.KnowledgeQuery],
        knowledge_query_service: Queries,
    ) -> s.KnowledgeQueryResponse:
        """The base's best passages (BM25 + vectors, fused), each with its source label
        (``file#page=N``), score and explanation."""
        return await knowledge_query_service.query(knowledge_base_id, data)


class KnowledgeDocumentController(Controller):
    path = "/v1/knowledge-bases/{knowledge_base_id:uuid}/documents"
    tags = ["knowledge"]  # noqa: RUF012
    dependencies = {  # noqa: RUF012
        **_BASE_SERVICE,
        "document_service": Provide(provide_document_service, sync_to_thread=False),
    }

    @post(
        operation_id="UploadDocument",
        opt=WRITE,
        request_max_body_size=None,  # upload_limit applies the configured limit
        middleware=[upload_limit],
    )
    async def upload(
        self, knowledge_base_id: FromPath[uuid.UUID], data: Upload, document_service: Documents
    ) -> Response[s.DocumentRead]:
        """Upload a PDF, text or Markdown file (multipart field ``file``): 202 with the
        document ``uploaded`` while a worker indexes it; the same file again answers 200
        with the existing document."""
        document, created = await document_service.upload(knowledge_base_id, data.file)
        return Response(document, status_code=HTTP_202_ACCEPTED if created else HTTP_200_OK)

    @get(operation_id="ListDocuments", opt=READ)
    async def list_documents(
        self,
        knowledge_base_id: FromPath[uuid.UUID],
        document_service: Documents,
        status: FromQuery[s.DocumentStatus | None] = None,
        cursor: FromQuery[Cursor] = None,
        limit: FromQuery[Limit] = DEFAULT_LIMIT,
    ) -> s.DocumentPage:
        """Documents with their status and indexing progress (deleted ones on request)."""
        return await document_service.list(knowledge_base_id, status, cursor, limit)

    @get("/{document_id:uuid}", operation_id="GetDocument", opt=READ)
    async def get_document(
        self,
        knowledge_base_id: FromPath[uuid.UUID],
        document_id: FromPath[uuid.UUID],
        document_service: Documents,
    ) -> s.DocumentRead:
        return await document_service.get(knowledge_base_id, document_id)

    @delete(
        "/{document_id:uuid}",
        operation_id="DeleteDocument",
        status_code=HTTP_204_NO_CONTENT,
        opt=DELETE,
    )
    async def delete_document(
        self,
        knowledge_base_id: FromPath[uuid.UUID],
        document_id: FromPath[uuid.UUID],
        document_service: Documents,
    ) -> None:
        """Remove the document's passages and file; queries stop returning it at once."""
        await document_service.delete(knowledge_base_id, document_id)

    @post(
        "/{document_id:uuid}/reindex",
        operation_id="ReindexDocument",
        status_code=HTTP_202_ACCEPTED,
        opt=WRITE,
    )
    async def reindex(
        self,
        knowledge_base_id: FromPath[uuid.UUID],
        document_id: FromPath[uuid.UUID],
        document_service: Documents,
    ) -> s.DocumentRead:
        """Index the document again; its current passages answer until the new ones land."""
        return await document_service.reindex(knowledge_base_id, document_id)
