"""POST /v1/knowledge-bases/{id}/query: a base's best passages for a query, explained."""

from __future__ import annotations

import uuid

from tenancy.access.principal import Principal
from tether.core.settings import KnowledgeSettings
from tether.knowledge import schemas as s
from tether.knowledge.engine import KnowledgeHit, RagEngine
from tether.knowledge.services import KnowledgeBaseService


def read_hit(hit: KnowledgeHit) -> s.ChunkHit:
    source = s.SourceRead(hit.document_id, hit.filename, hit.page, hit.section, hit.source)
    return s.ChunkHit(hit.id, hit.text, source, hit.score, hit.explanation)


class KnowledgeQueryService:
    def __init__(
        self,
        principal: Principal,
        bases: KnowledgeBaseService,
        engine: RagEngine,
        limits: KnowledgeSettings,
    ) -> None:
        self._principal = principal
        self._bases = bases
        self._engine = engine
        self._limits = limits

    async def query(
        self, base_id: uuid.UUID, request: s.KnowledgeQuery
    ) -> s.KnowledgeQueryResponse:
        base = await self._bases.require(base_id)
        result = await self._engine.query(
            self._principal.tenant_id,
            base.id,
            request.query,
            request.top_k or self._limits.top_k,
            request.timeout_ms,
        )
        return s.KnowledgeQueryResponse(
            knowledge_base_id=base.id,
            items=[read_hit(h) for h in result.hits],
            degraded=result.degraded,
            timings_ms=result.timings_ms,
        )
